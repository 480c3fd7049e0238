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


def Select(condition, true_value, false_value, span=None):  # noqa: N802 - TIR's name
    """``tirx.Select(c, a, b)``: T.if_then_else(c, a, b) (both are pure expressions here, so
    TIR's evaluation of both sides gives the same value)."""
    from ...language import if_then_else

    return if_then_else(condition, true_value, false_value)


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


class DeclaredBuffer:
    """What ``tvm.tirx.decl_buffer`` gives here: a description of a buffer (shape, dtype, name,
    scope) for Python-level helpers that only read those (the layout makers of
    ``tilelang.layout``, ``compute_gmma_descriptor``). It is not a buffer of any kernel:
    kernels declare theirs with T.Tensor / T.alloc_*, and using this one inside a kernel is an
    error (docs/tvm-compat.md)."""

    __slots__ = ("shape", "dtype", "name", "scope")

    def __init__(self, shape, dtype, name, scope):
        self.shape = shape
        self.dtype = dtype
        self.name = name
        self.scope = scope

    def _refuse(self, *args, **kwargs):
        raise TypeError(f"{self!r} cannot be used inside a kernel: declare kernel buffers with T.Tensor or "
                        f"T.alloc_* (docs/tvm-compat.md)")

    __getitem__ = _refuse
    __setitem__ = _refuse

    def __repr__(self):
        return (f"tvm.tirx.decl_buffer({self.shape}, {str(self.dtype)!r}, name={self.name!r}, scope={self.scope!r}) "
                f"(a description only, not a kernel buffer)")


def decl_buffer(shape, dtype="float32", name="buffer", data=None, strides=None, elem_offset=None, scope="global",
                data_alignment=-1, offset_factor=0, buffer_type="", axis_separators=None, span=None):
    """A standalone buffer description (DeclaredBuffer): static shape, dtype, name and scope,
    enough for the layout makers and ``compute_gmma_descriptor``; not usable in kernels."""
    from ...language.dtypes import canonical, dtype as _dtype

    if isinstance(shape, int):
        shape = (shape,)
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise NotImplementedError("tvm.tirx.decl_buffer here takes a static shape of ints (docs/tvm-compat.md)")
    for what, value in (("data", data), ("strides", strides), ("elem_offset", elem_offset),
                        ("axis_separators", axis_separators)):
        if value is not None:
            raise NotImplementedError(f"tvm.tirx.decl_buffer: {what}= is not supported (a description of shape, "
                                      f"dtype, name and scope only; docs/tvm-compat.md)")
    scope = str(scope)
    if scope == "shared.dyn":
        scope = "shared"
    return DeclaredBuffer(dims, _dtype(canonical(dtype)), str(name), scope)
