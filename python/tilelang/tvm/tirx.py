"""``tvm.tir`` / ``tvm.tirx`` names that map onto this compiler's expressions."""
from __future__ import annotations

from ..language.values import Buffer, PrimExpr, const as _const  # noqa: F401


def const(value, dtype=None):
    """A typed constant expression (dtype defaults to int32 for ints, float32 for floats)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    return _const(value, dtype)


def IntImm(dtype, value):  # noqa: N802 - TVM's name and argument order
    """An integer constant, TVM's way round: IntImm("int32", 3)."""
    return _const(value, dtype)


def FloatImm(dtype, value):  # noqa: N802 - TVM's name and argument order
    """A float constant, TVM's way round: FloatImm("float32", 0.5)."""
    return _const(value, dtype)


# Expressions built by T.* intrinsics (T.any_sync(...) outside a kernel, say) are PrimExprs;
# programs that check isinstance(x, tirx.Call) or tirx.PrimExpr see them as such.
Call = PrimExpr
