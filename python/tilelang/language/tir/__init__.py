"""``tilelang.language.tir``: upstream's module of TIR-level language functions; here the
ones whose behaviour is defined by this compiler (``ir.cast``)."""
from . import ir  # noqa: F401
