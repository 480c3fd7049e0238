"""``tilelang.language.eager``: upstream's module for its AST rewriter (see ``ast``)."""
from . import ast  # noqa: F401
