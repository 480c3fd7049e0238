"""Packed two-lane math (upstream's ``T.add2``, ``T.sub2``, ``T.mul2``, ``T.fma2``, ``T.max2``,
``T.min2``, ``T.abs2``) and ``T.extract_lane``.

The operands are two-lane values: a slice of two elements (``A[T.Ramp(2 * t, 1, 2)]``,
``A[i, 2 * j:2 * j + 2]``), the result of another x2 operation, or a 64-bit vector value
(``T.reinterpret(T.ldg64(...), T.float32x2)``). The result is two lane values, stored by
assigning it to a two-element slice (``C[idx] = T.add2(A[idx], B[idx])``). Each lane is
computed as the scalar operation on its element, which is what the paired instructions
compute (add.f32x2, __hadd2, ...); the code generators pair them again where they can.
"""
from __future__ import annotations

import numbers

from . import builder as _b
from .values import BufferRef, LaneValues, PrimExpr, as_expr

_WIDTH = 2


def _lanes(x, what: str):
    """The two lane values of `x` (see the module docstring)."""
    if isinstance(x, LaneValues):
        if len(x.lanes) != _WIDTH:
            raise _b._UserError(f"{what} takes two-lane values, got one of {len(x.lanes)} lanes")
        return list(x.lanes)
    if isinstance(x, BufferRef) and not x.is_point:
        from . import _lanes as slice_lanes

        return [r.load() for r in slice_lanes(x, _WIDTH, what, "operand")]
    raise _b._UserError(f"{what} takes two-lane values (a slice of two elements, e.g. A[T.Ramp(2 * t, 1, 2)], or "
                        f"the result of another x2 operation), got {x!r}")


def _lanewise(name, arity, fn):
    def op(*args):
        what = f"T.{name}"
        _b.require_kernel(what)
        if len(args) != arity:
            raise _b._UserError(f"{what} takes {arity} operand(s), got {len(args)}")
        lanes = [_lanes(a, what) for a in args]
        return LaneValues(fn(*(lane[k] for lane in lanes)) for k in range(_WIDTH))

    op.__name__ = name
    op.__doc__ = f"T.{name}: the two lanes computed one by one (see tilelang.language.packed_x2)."
    return op


def _max(a, b):
    from . import max as tl_max

    return tl_max(a, b)


def _min(a, b):
    from . import min as tl_min

    return tl_min(a, b)


def _abs(a):
    from . import abs as tl_abs

    return tl_abs(a)


add2 = _lanewise("add2", 2, lambda a, b: a + b)
sub2 = _lanewise("sub2", 2, lambda a, b: a - b)
mul2 = _lanewise("mul2", 2, lambda a, b: a * b)
fma2 = _lanewise("fma2", 3, lambda a, b, c: a * b + c)
max2 = _lanewise("max2", 2, _max)
min2 = _lanewise("min2", 2, _min)
abs2 = _lanewise("abs2", 1, _abs)


def extract_lane(vector, lane):
    """Lane `lane` (a compile-time int) of a vector value: a slice of elements, lane values
    (T.add2 ...) or a 64/128-bit vector value (T.ldg64 ...)."""
    _b.require_kernel("T.extract_lane")
    if isinstance(vector, PrimExpr):
        raise _b._UserError("T.extract_lane expects a vector expression (a slice, lane values or a vector value), "
                            "got a scalar")
    if isinstance(lane, bool) or not isinstance(lane, numbers.Integral):
        raise _b._UserError(f"T.extract_lane: the lane must be a compile-time integer, got {lane!r}")
    if isinstance(vector, LaneValues):
        lanes = list(vector.lanes)
    elif isinstance(vector, BufferRef) and not vector.is_point:
        from . import _last_dim_slice
        from . import _lanes as slice_lanes

        parsed = _last_dim_slice(vector)
        if parsed is None or not isinstance(parsed[2], numbers.Integral):
            raise _b._UserError(f"T.extract_lane: the vector must be a static slice of the last dimension, got "
                                f"{vector!r}")
        lanes = [r.load() for r in slice_lanes(vector, parsed[2], "T.extract_lane", "vector")]
    else:
        raise _b._UserError(f"T.extract_lane expects a vector expression, got {vector!r}")
    if not 0 <= lane < len(lanes):
        raise _b._UserError(f"T.extract_lane: lane {lane} is out of bounds for a vector of {len(lanes)} lanes")
    return as_expr(lanes[int(lane)]) if not isinstance(lanes[int(lane)], PrimExpr) else lanes[int(lane)]
