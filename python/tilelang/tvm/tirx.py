"""``tvm.tir`` / ``tvm.tirx`` names that map onto this compiler's expressions."""
from __future__ import annotations

from ..language.values import Buffer, PrimExpr, const as _const  # noqa: F401


def const(value, dtype=None):
    """A typed constant expression (dtype defaults to int32 for ints, float32 for floats)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    return _const(value, dtype)


IntImm = const
FloatImm = const
