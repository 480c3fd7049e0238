"""``T.__exp``, ``T.__log``, ... : upstream's fast-math intrinsics (CUDA's __expf family).

On CUDA each is the hardware approximation (``__expf`` and so on: a few ulp off, and what
a kernel author asks for by writing it); 16-bit operands compute in float32, float64 ones
precisely (CUDA has no double approximations); the CPU target computes the precise function.
``T.__tan`` of a 16-bit float is that type's tan (upstream's htan). For NVRTC's whole-kernel
--use_fast_math, set the pass config tl.enable_fast_math. As upstream, they take
floating-point operands only."""
from __future__ import annotations

from .values import PrimExpr, as_expr, call_math, cast


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


def _fast(name):
    def f(x):
        v = _float_operand(name, x)
        w, back = _wide(v)
        return back(call_math(name, w))

    f.__name__ = name
    f.__qualname__ = name
    f.__doc__ = f"{name[2:]}(x) of a float, approximated on CUDA (see tilelang.language.fastmath)."
    return f


__exp, __exp10, __log, __log2, __log10, __sin, __cos = (
    _fast(n) for n in ("__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos"))
_fast_tan = _fast("__tan")


def __tan(x):
    """tan(x) of a float, approximated on CUDA; a 16-bit float's is its type's tan (upstream's
    htan)."""
    v = _float_operand("__tan", x)
    return call_math("tan", v) if v.dtype.bits == 16 else _fast_tan(v)
