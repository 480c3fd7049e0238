"""``tilelang.language.eager.ast``: upstream's AST rewriter, by name only.

Upstream compiles a kernel by rewriting its Python AST into builder calls (``mutate``) and
running them. This front end reads the AST directly and builds our IR as it walks it
(tilelang/frontend/parser.py), so there is no rewritten source to return: the names import,
and raise NotImplementedError when used."""
from __future__ import annotations

_WHY = ("this front end walks the kernel's AST and builds the IR directly (tilelang/frontend); "
        "it has no rewritten-source stage")


def mutate(func):
    raise NotImplementedError(f"tilelang.language.eager.ast.mutate is not provided by this compiler: {_WHY}")


class BaseBuilder:
    """Upstream's base class of AST builders; subclassing works, building one raises."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"tilelang.language.eager.ast.BaseBuilder is not provided by this compiler: {_WHY}")
