"""``tvm.tir`` / ``tvm.tirx`` names that map onto this compiler's expressions (see
docs/tvm-compat.md for the names that do not, and why)."""
from __future__ import annotations

from functools import reduce as _reduce

from ...language.values import Buffer, PrimExpr, const as _const  # noqa: F401
from . import expr  # noqa: F401
from .expr import And, Call, FloatImm, IntImm, Not, Or, Var  # noqa: F401


def const(value, dtype=None):
    """A typed constant expression (dtype defaults to int32 for ints, float32 for floats)."""
    if dtype is None:
        dtype = "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
    return _const(value, dtype)


def all(*conds, span=None):  # noqa: A001 - TIR's name
    """The conjunction of the conditions (``tirx.all(a < b, b < c)``)."""
    if not conds:
        raise ValueError("tirx.all needs at least one condition")
    return _reduce(And, conds)


def any(*conds, span=None):  # noqa: A001 - TIR's name
    """The disjunction of the conditions."""
    if not conds:
        raise ValueError("tirx.any needs at least one condition")
    return _reduce(Or, conds)


def reinterpret(dtype, value, span=None):
    """TIR's argument order, ``tirx.reinterpret(T.uint32, x)``: T.reinterpret(x, dtype)."""
    from ...language.bits import reinterpret as _reinterpret

    return _reinterpret(value, dtype)


def Cast(dtype, value, span=None):  # noqa: N802 - TIR's name
    """``tirx.Cast(T.uint32, x)``: T.cast(x, dtype)."""
    from ...language.values import cast as _cast

    return _cast(value, dtype)


def _not_here(name, why):
    def f(*args, **kwargs):
        raise NotImplementedError(f"tvm.tirx.{name} is not provided by this compiler: {why} (docs/tvm-compat.md)")

    f.__name__ = name
    return f


# Names that upstream's programs use but that have no truthful mapping onto our IR: they
# import, and say why when called.


def call_extern(dtype, func_name, *args, span=None):
    """TIR's call_extern(dtype, func_name, *args): T.call_extern (tilelang.language.extern)."""
    from ...language.extern import call_extern as _call_extern

    return _call_extern(dtype, func_name, *args)


decl_buffer = _not_here("decl_buffer", "TIR buffers outside a kernel do not exist here; "
                                       "declare buffers with T.Tensor / T.alloc_* in a @T.prim_func")
