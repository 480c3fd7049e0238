"""``tvm.tirx.expr``: TIR's expression class names, over this compiler's expressions.

Our IR has one Python expression class (PrimExpr, wrapping a core node); TIR has one class
per node kind. The kinds that programs construct or test for are given here as callables
whose ``isinstance`` asks the node what it is (a variable, an int or a float constant), so
``IntImm("int32", 1)`` builds a constant and ``isinstance(x, IntImm)`` is True for it."""
from __future__ import annotations

from ... import _tl
from ...language import Var  # noqa: F401  (T.Var: Var("n", "int32"); isinstance on variables)
from ...language.values import PrimExpr, as_expr, binary, const as _const


class _ConstKind(type):
    def __instancecheck__(cls, x):
        if not isinstance(x, PrimExpr):
            return False
        v = x.node.const_value  # an int, a float, a bool (a bool constant is an IntImm in TIR too)
        return isinstance(v, int) if cls._py is int else isinstance(v, float)


class IntImm(metaclass=_ConstKind):
    """An integer constant, TVM's way round: IntImm("int32", 3)."""
    _py = int

    def __new__(cls, dtype, value, span=None):
        return _const(int(value), dtype)


class FloatImm(metaclass=_ConstKind):
    """A float constant, TVM's way round: FloatImm("float32", 0.5)."""
    _py = float

    def __new__(cls, dtype, value, span=None):
        return _const(float(value), dtype)


def _as_bool(x):
    e = as_expr(x)
    return e if e.node.dtype == "bool" else PrimExpr(_tl.logical_not(_tl.logical_not(e.node)))


def And(a, b, span=None):  # noqa: N802 - TIR's node names
    """Logical and of two conditions (non-bool operands are compared with zero)."""
    return binary("and", _as_bool(a), _as_bool(b))


def Or(a, b, span=None):  # noqa: N802
    """Logical or of two conditions."""
    return binary("or", _as_bool(a), _as_bool(b))


def Not(a, span=None):  # noqa: N802
    """Logical negation of a condition."""
    return PrimExpr(_tl.logical_not(as_expr(a).node))


# Intrinsic calls (T.exp(x), T.any_sync(...)) are PrimExprs here; programs that check
# isinstance(x, tirx.Call) see them as such.
Call = PrimExpr

__all__ = ["And", "Call", "FloatImm", "IntImm", "Not", "Or", "PrimExpr", "Var"]
