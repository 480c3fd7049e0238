"""``T.__exp``, ``T.__log``, ... : upstream's fast-math intrinsics (CUDA's __expf family).

Fast math is a licence to approximate, which this compiler does not take for these calls:
each computes the precise function (exp10 as exp2(x * log2 10), tan as sin / cos, in float32
for 16-bit types), so results are at least as accurate as the approximations upstream
emits. For NVRTC's whole-kernel --use_fast_math, set the pass config tl.enable_fast_math.
As upstream, they take floating-point operands only."""
from __future__ import annotations

import math

from .values import PrimExpr, as_expr, call_math, cast, const


def _float_operand(name, x) -> PrimExpr:
    v = as_expr(x)
    if not v.dtype.is_float or v.dtype.bits < 16:  # fp8 and narrower: not for fast math
        raise TypeError(f"T.{name} only supports floating-point inputs, but got {v.dtype}")
    return v


def _wide(v: PrimExpr):
    """(v in at least float32, a function back to v's dtype)."""
    if v.dtype.bits >= 32:
        return v, (lambda r: r)
    return cast(v, "float32"), (lambda r: cast(r, v.dtype))


def _fast(name, compute):
    def f(x):
        v = _float_operand(name, x)
        w, back = _wide(v)
        return back(compute(w))

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"{name[2:]}(x) of a float (the precise value; see tilelang.language.fastmath)."
    return f


__exp = _fast("__exp", lambda w: call_math("exp", w))
__exp10 = _fast("__exp10", lambda w: call_math("exp2", w * const(math.log2(10.0), w.dtype)))
__log = _fast("__log", lambda w: call_math("log", w))
__log2 = _fast("__log2", lambda w: call_math("log2", w))
__log10 = _fast("__log10", lambda w: call_math("log10", w))
__sin = _fast("__sin", lambda w: call_math("sin", w))
__cos = _fast("__cos", lambda w: call_math("cos", w))
__tan = _fast("__tan", lambda w: call_math("sin", w) / call_math("cos", w))
