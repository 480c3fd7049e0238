// SPDX-License-Identifier: Apache-2.0
/// \file Scalar math for generated CUDA kernels.
///
/// Mirrors the CPU library's math.h: exact overloads for float, double, half
/// and bfloat16 (the 16-bit ones compute in float and round the result back),
/// so a call never depends on which of several equally good conversions the
/// compiler would pick; integer arguments to the transcendental functions
/// compute in double, like the C library. min / max follow fmin / fmax (a NaN
/// operand loses to a number) on both backends, so they give identical results.
///
/// Accuracy: by default the accurate CUDA math functions (expf, logf, tanhf,
/// ...); exp2 of a float is the special-function unit's (as exp2f, but results
/// below 2^-126 flush to zero; see detail::fast_exp2). Defining TL_FAST_MATH before including tl_cuda.h switches the
/// float versions to the hardware approximations (__expf, ex2.approx,
/// lg2.approx, tanh.approx, ...), which are several times faster but lose a
/// few bits and flush subnormals.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

namespace detail {

/// The type a value computes in: 16-bit floats widen to float, others stay.
template <typename T>
struct compute_type {
  using type = T;
};
template <>
struct compute_type<half> {
  using type = float;
};
template <>
struct compute_type<bfloat16> {
  using type = float;
};
template <typename F>
struct compute_type<float8<F>> {
  using type = float;
};

/// True for built-in arithmetic types and the 16- and 8-bit float types.
template <typename T>
struct is_number {
  static constexpr bool value = is_arithmetic<T>::value || is_same<T, half>::value || is_same<T, bfloat16>::value ||
                                is_float8<T>::value;
};

/// Common computation type of two different number types (half + bfloat16 -> float),
/// as std::common_type would give for their computation types.
template <typename A, typename B>
using mixed_t =
    decltype(true ? declval_<typename compute_type<A>::type>() : declval_<typename compute_type<B>::type>());

template <typename A, typename B>
using enable_if_mixed_t = enable_if_t<!is_same<A, B>::value && is_number<A>::value && is_number<B>::value, int>;

/// 2^x by the special-function unit (ftz; about 2 ulp). exp2f is the same
/// instruction without ftz, which ptxas wraps in a range check and two scalings
/// per call to produce subnormal results (below 2^-126); those flush to zero here.
/// Used in both accuracy modes: the flush is the only difference, and four
/// instructions instead of one matter in softmax loops.
TL_DEVICE float fast_exp2(float x) {
  float y;
  asm("{ex2.approx.ftz.f32 %0, %1;}" : "=f"(y) : "f"(x));
  return y;
}

#if defined(TL_FAST_MATH)
/// log2(x) by the special-function unit (ftz).
TL_DEVICE float fast_log2(float x) {
  float y;
  asm("{lg2.approx.ftz.f32 %0, %1;}" : "=f"(y) : "f"(x));
  return y;
}
/// Approximate square root (ftz).
TL_DEVICE float fast_sqrt(float x) {
  float y;
  asm("{sqrt.approx.ftz.f32 %0, %1;}" : "=f"(y) : "f"(x));
  return y;
}
/// Hardware tanh (sm_75+; about 2^-11 relative error).
TL_DEVICE float fast_tanh(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  float y;
  asm("{tanh.approx.f32 %0, %1;}" : "=f"(y) : "f"(x));
  return y;
#else
  return tanhf(x);
#endif
}
#endif  // TL_FAST_MATH

}  // namespace detail

// Float expression of each unary function, by accuracy mode.
#if defined(TL_FAST_MATH)
#define TL_CUDA_F_EXP __expf(x)
#define TL_CUDA_F_EXP2 detail::fast_exp2(x)
#define TL_CUDA_F_LOG __logf(x)
#define TL_CUDA_F_LOG2 detail::fast_log2(x)
#define TL_CUDA_F_LOG10 __log10f(x)
#define TL_CUDA_F_SQRT detail::fast_sqrt(x)
#define TL_CUDA_F_TANH detail::fast_tanh(x)
#define TL_CUDA_F_SIGMOID __fdividef(1.0f, 1.0f + __expf(-x))
#define TL_CUDA_F_SIN __sinf(x)
#define TL_CUDA_F_COS __cosf(x)
#define TL_CUDA_F_TAN __tanf(x)
#else
#define TL_CUDA_F_EXP expf(x)
#define TL_CUDA_F_EXP2 detail::fast_exp2(x)
#define TL_CUDA_F_LOG logf(x)
#define TL_CUDA_F_LOG2 log2f(x)
#define TL_CUDA_F_LOG10 log10f(x)
#define TL_CUDA_F_SQRT sqrtf(x)
#define TL_CUDA_F_TANH tanhf(x)
#define TL_CUDA_F_SIGMOID 1.0f / (1.0f + expf(-x))
#define TL_CUDA_F_SIN sinf(x)
#define TL_CUDA_F_COS cosf(x)
#define TL_CUDA_F_TAN tanf(x)
#endif

// Unary functions: float / double map to the CUDA math library; half /
// bfloat16 round-trip through float; integers compute in double.
#define TL_CUDA_UNARY_MATH(name, fexpr, dexpr)                                          \
  /** name() of a float. */                                                             \
  TL_DEVICE float name(float x) { return fexpr; }                                       \
  /** name() of a double. */                                                            \
  TL_DEVICE double name(double x) { return dexpr; }                                     \
  /** name() of a half, computed in float. */                                           \
  TL_DEVICE half name(half h) { return half(name(static_cast<float>(h))); }             \
  /** name() of a bfloat16, computed in float. */                                       \
  TL_DEVICE bfloat16 name(bfloat16 h) { return bfloat16(name(static_cast<float>(h))); } \
  /** name() of an 8-bit float, computed in float. */                                   \
  template <typename T, detail::enable_if_float8_t<T> = 0>                              \
  TL_DEVICE T name(T h) {                                                               \
    return T(name(static_cast<float>(h)));                                              \
  }                                                                                     \
  /** name() of an integer, computed in double. */                                      \
  template <typename T, detail::enable_if_int_t<T> = 0>                                 \
  TL_DEVICE double name(T x) {                                                          \
    return name(static_cast<double>(x));                                                \
  }

/// Whether x is neither infinite nor NaN (T.isfinite): the exponent bits not all set (a
/// test of the bits, which fast math cannot fold away); narrower floats through float.
TL_DEVICE bool isfinite(float x) { return (__float_as_uint(x) & 0x7f800000u) != 0x7f800000u; }
TL_DEVICE bool isfinite(double x) {
  return (static_cast<unsigned long long>(__double_as_longlong(x)) & 0x7ff0000000000000ull) != 0x7ff0000000000000ull;
}
TL_DEVICE bool isfinite(half h) { return isfinite(static_cast<float>(h)); }
TL_DEVICE bool isfinite(bfloat16 h) { return isfinite(static_cast<float>(h)); }
template <typename T, detail::enable_if_float8_t<T> = 0>
TL_DEVICE bool isfinite(T h) {
  return isfinite(static_cast<float>(h));
}

TL_CUDA_UNARY_MATH(exp, TL_CUDA_F_EXP, ::exp(x))
TL_CUDA_UNARY_MATH(exp2, TL_CUDA_F_EXP2, ::exp2(x))
TL_CUDA_UNARY_MATH(expm1, expm1f(x), ::expm1(x))
TL_CUDA_UNARY_MATH(log, TL_CUDA_F_LOG, ::log(x))
TL_CUDA_UNARY_MATH(log2, TL_CUDA_F_LOG2, ::log2(x))
TL_CUDA_UNARY_MATH(log10, TL_CUDA_F_LOG10, ::log10(x))
TL_CUDA_UNARY_MATH(log1p, log1pf(x), ::log1p(x))
TL_CUDA_UNARY_MATH(sqrt, TL_CUDA_F_SQRT, ::sqrt(x))
TL_CUDA_UNARY_MATH(rsqrt, rsqrtf(x), ::rsqrt(x))
TL_CUDA_UNARY_MATH(tanh, TL_CUDA_F_TANH, ::tanh(x))
TL_CUDA_UNARY_MATH(sigmoid, TL_CUDA_F_SIGMOID, 1.0 / (1.0 + ::exp(-x)))
TL_CUDA_UNARY_MATH(sin, TL_CUDA_F_SIN, ::sin(x))
TL_CUDA_UNARY_MATH(cos, TL_CUDA_F_COS, ::cos(x))
TL_CUDA_UNARY_MATH(tan, TL_CUDA_F_TAN, ::tan(x))
TL_CUDA_UNARY_MATH(erf, erff(x), ::erf(x))
TL_CUDA_UNARY_MATH(floor, floorf(x), ::floor(x))
TL_CUDA_UNARY_MATH(ceil, ceilf(x), ::ceil(x))
TL_CUDA_UNARY_MATH(trunc, truncf(x), ::trunc(x))
TL_CUDA_UNARY_MATH(round, roundf(x), ::round(x))    // Ties away from zero, like C round().
TL_CUDA_UNARY_MATH(nearbyint, rintf(x), ::rint(x))  // Ties to even.
TL_CUDA_UNARY_MATH(sinh, sinhf(x), ::sinh(x))
TL_CUDA_UNARY_MATH(cosh, coshf(x), ::cosh(x))
TL_CUDA_UNARY_MATH(asin, asinf(x), ::asin(x))
TL_CUDA_UNARY_MATH(acos, acosf(x), ::acos(x))
TL_CUDA_UNARY_MATH(atan, atanf(x), ::atan(x))
TL_CUDA_UNARY_MATH(asinh, asinhf(x), ::asinh(x))
TL_CUDA_UNARY_MATH(acosh, acoshf(x), ::acosh(x))
TL_CUDA_UNARY_MATH(atanh, atanhf(x), ::atanh(x))
TL_CUDA_UNARY_MATH(exp10, exp10f(x), ::exp10(x))

#undef TL_CUDA_UNARY_MATH
#undef TL_CUDA_F_EXP
#undef TL_CUDA_F_EXP2
#undef TL_CUDA_F_LOG
#undef TL_CUDA_F_LOG2
#undef TL_CUDA_F_LOG10
#undef TL_CUDA_F_SQRT
#undef TL_CUDA_F_TANH
#undef TL_CUDA_F_SIGMOID
#undef TL_CUDA_F_SIN
#undef TL_CUDA_F_COS
#undef TL_CUDA_F_TAN

/// a raised to b (powf; __powf under TL_FAST_MATH).
TL_DEVICE float pow(float a, float b) {
#if defined(TL_FAST_MATH)
  return __powf(a, b);
#else
  return powf(a, b);
#endif
}
/// a raised to b.
TL_DEVICE double pow(double a, double b) { return ::pow(a, b); }
/// a raised to b, computed in float.
TL_DEVICE half pow(half a, half b) { return half(pow(static_cast<float>(a), static_cast<float>(b))); }
/// a raised to b, computed in float.
TL_DEVICE bfloat16 pow(bfloat16 a, bfloat16 b) { return bfloat16(pow(static_cast<float>(a), static_cast<float>(b))); }
/// a raised to b for integers, computed in double (like the C library).
template <typename T, detail::enable_if_int_t<T> = 0>
TL_DEVICE double pow(T a, T b) {
  return ::pow(static_cast<double>(a), static_cast<double>(b));
}
/// a raised to b for 8-bit floats, computed in float.
template <typename T, detail::enable_if_float8_t<T> = 0>
TL_DEVICE T pow(T a, T b) {
  return T(pow(static_cast<float>(a), static_cast<float>(b)));
}
/// Mixed-type pow: both operands are converted to their common computation type first.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
TL_DEVICE auto pow(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return pow(static_cast<C>(a), static_cast<C>(b));
}

/// x rounded to TF32 (a 10-bit mantissa; round to nearest, ties away from zero, the rounding
/// of cvt.rna.tf32.f32 / float_to_tf32 on the tensor-core path), kept as a float whose low 13
/// bits are zero: the operand rounding of a T.gemm on tfloat32 tiles (GemmOp::tf32) where it
/// runs as loops. The same code as the CPU target's tl::round_tf32, so both agree bit for bit.
TL_DEVICE float round_tf32(float x) {
  uint32_t u = __float_as_uint(x);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // half an ulp, then truncate
  return __uint_as_float(u);
}

/// Absolute value of a float.
TL_DEVICE float abs(float x) { return fabsf(x); }
/// Absolute value of a double.
TL_DEVICE double abs(double x) { return ::fabs(x); }
/// Absolute value of a half (clears the sign bit, so exact and NaN-preserving).
TL_DEVICE half abs(half x) { return half_from_bits(static_cast<unsigned short>(x.bits & 0x7fffu)); }
/// Absolute value of a bfloat16 (clears the sign bit).
TL_DEVICE bfloat16 abs(bfloat16 x) { return bfloat16_from_bits(static_cast<unsigned short>(x.bits & 0x7fffu)); }
/// Absolute value of any integer (unsigned values are returned unchanged).
template <typename T, detail::enable_if_int_t<T> = 0>
TL_DEVICE T abs(T x) {
  if constexpr (detail::is_signed_int<T>::value) {
    return x < 0 ? static_cast<T>(-x) : x;
  } else {
    return x;
  }
}

/// Smaller of two values of one type: `b < a ? b : a`, and for floating-point
/// values the other operand when one is NaN (fmin's rule, which the CPU library
/// follows too). float and double use the hardware min (one FMNMX), which a
/// compare-select would take two instructions for.
template <typename T>
TL_DEVICE T min(T a, T b) {
  return (b < a || a != a) ? b : a;
}
/// Larger of two values of one type (see min; fmax's NaN rule).
template <typename T>
TL_DEVICE T max(T a, T b) {
  return (a < b || a != a) ? b : a;
}
TL_DEVICE float min(float a, float b) { return fminf(a, b); }
TL_DEVICE float max(float a, float b) { return fmaxf(a, b); }
TL_DEVICE double min(double a, double b) { return fmin(a, b); }
TL_DEVICE double max(double a, double b) { return fmax(a, b); }
/// Mixed-type min: both operands are converted to their common computation type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
TL_DEVICE detail::mixed_t<A, B> min(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return min(static_cast<C>(a), static_cast<C>(b));
}
/// Mixed-type max: both operands are converted to their common computation type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
TL_DEVICE detail::mixed_t<A, B> max(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return max(static_cast<C>(a), static_cast<C>(b));
}

// --- 16-bit max / min under CUDA's names -------------------------------------
// What the tile reductions fold half and bfloat16 values with (printed tl::__hmax(a, b),
// as CUDA's cuda_fp16.h spells it). __hmax / __hmin return the other operand when one is
// NaN (fmax's rule, as tl::max); the _nan forms return NaN when either operand is (T.reduce_*
// with nan_propagate=True). One instruction from sm_80 on (max.f16, min.NaN.bf16, ...);
// before it, through float (exact: the result is one of the operands, or NaN).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define TL_HALF_MINMAX(T, NAME, PTX, IS_MAX, PROPAGATE_NAN)              \
  TL_DEVICE T NAME(T a, T b) {                                             \
    unsigned short r;                                                      \
    asm("{" PTX " %0, %1, %2;}" : "=h"(r) : "h"(a.bits), "h"(b.bits));    \
    return T(r, from_bits_t{});                                            \
  }
#else
#define TL_HALF_MINMAX(T, NAME, PTX, IS_MAX, PROPAGATE_NAN)                        \
  TL_DEVICE T NAME(T a, T b) {                                                       \
    const float x = static_cast<float>(a), y = static_cast<float>(b);               \
    if (PROPAGATE_NAN && (x != x || y != y)) return T(x + y);                        \
    return T(IS_MAX ? max(x, y) : min(x, y));                                        \
  }
#endif
TL_HALF_MINMAX(half, __hmax, "max.f16", true, false)
TL_HALF_MINMAX(half, __hmin, "min.f16", false, false)
TL_HALF_MINMAX(half, __hmax_nan, "max.NaN.f16", true, true)
TL_HALF_MINMAX(half, __hmin_nan, "min.NaN.f16", false, true)
TL_HALF_MINMAX(bfloat16, __hmax, "max.bf16", true, false)
TL_HALF_MINMAX(bfloat16, __hmin, "min.bf16", false, false)
TL_HALF_MINMAX(bfloat16, __hmax_nan, "max.NaN.bf16", true, true)
TL_HALF_MINMAX(bfloat16, __hmin_nan, "min.NaN.bf16", false, true)
#undef TL_HALF_MINMAX

/// Python-style integer division: rounds toward negative infinity.
/// Division by zero is undefined, as in C.
template <typename T, detail::enable_if_int_t<T> = 0>
TL_DEVICE T floordiv(T a, T b) {
  if constexpr (detail::is_signed_int<T>::value) {
    const T q = static_cast<T>(a / b);
    // C truncates toward zero; step down when the exact quotient was negative and inexact.
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}
/// Python-style modulo: the result has the sign of b (a == floordiv(a,b)*b + floormod(a,b)).
template <typename T, detail::enable_if_int_t<T> = 0>
TL_DEVICE T floormod(T a, T b) {
  if constexpr (detail::is_signed_int<T>::value) {
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}
/// Floor division of floating-point values: floor(a / b).
TL_DEVICE float floordiv(float a, float b) { return floorf(a / b); }
/// Floor division of floating-point values: floor(a / b).
TL_DEVICE double floordiv(double a, double b) { return ::floor(a / b); }
/// Floating-point floor modulo: a - floor(a / b) * b (sign of b).
TL_DEVICE float floormod(float a, float b) { return a - floorf(a / b) * b; }
/// Floating-point floor modulo: a - floor(a / b) * b (sign of b).
TL_DEVICE double floormod(double a, double b) { return a - ::floor(a / b) * b; }
/// Mixed-type floordiv (e.g. int32 and int64): computes in the common type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
TL_DEVICE detail::mixed_t<A, B> floordiv(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return floordiv(static_cast<C>(a), static_cast<C>(b));
}
/// Mixed-type floormod (e.g. int32 and int64): computes in the common type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
TL_DEVICE detail::mixed_t<A, B> floormod(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return floormod(static_cast<C>(a), static_cast<C>(b));
}

namespace detail {
/// Largest value of an integer type.
template <typename T>
TL_DEVICE constexpr T int_max() {
  if constexpr (is_same<T, bool>::value) {
    return true;
  } else if constexpr (is_signed_int<T>::value) {
    return static_cast<T>((1ull << (8 * sizeof(T) - 1)) - 1ull);
  } else {
    return static_cast<T>(~static_cast<T>(0));
  }
}
/// Lowest value of an integer type.
template <typename T>
TL_DEVICE constexpr T int_lowest() {
  if constexpr (is_signed_int<T>::value) {
    return static_cast<T>(-int_max<T>() - 1);
  } else {
    return static_cast<T>(0);
  }
}
}  // namespace detail

/// Positive infinity of T; the largest value for integer types.
template <typename T>
TL_DEVICE T infinity() {
  if constexpr (detail::is_same<T, half>::value) {
    return half_from_bits(0x7c00u);
  } else if constexpr (detail::is_same<T, bfloat16>::value) {
    return bfloat16_from_bits(0x7f80u);
  } else if constexpr (detail::is_float8<T>::value) {
    return T::infinity_of_sign(false);  // e4m3 has none: its largest finite value, 448
  } else if constexpr (detail::is_same<T, float>::value) {
    return __uint_as_float(0x7f800000u);
  } else if constexpr (detail::is_same<T, double>::value) {
    return __longlong_as_double(0x7ff0000000000000ll);
  } else {
    static_assert(detail::is_integral<T>::value, "infinity<T>: T must be a number type");
    return detail::int_max<T>();
  }
}

/// Negative infinity of T; the lowest value for integer types.
template <typename T>
TL_DEVICE T neg_infinity() {
  if constexpr (detail::is_same<T, half>::value) {
    return half_from_bits(0xfc00u);
  } else if constexpr (detail::is_same<T, bfloat16>::value) {
    return bfloat16_from_bits(0xff80u);
  } else if constexpr (detail::is_float8<T>::value) {
    return T::infinity_of_sign(true);  // e4m3 has none: -448
  } else if constexpr (detail::is_same<T, float>::value) {
    return __uint_as_float(0xff800000u);
  } else if constexpr (detail::is_same<T, double>::value) {
    return __longlong_as_double(static_cast<long long>(0xfff0000000000000ull));
  } else {
    static_assert(detail::is_integral<T>::value, "neg_infinity<T>: T must be a number type");
    return detail::int_lowest<T>();
  }
}

}  // namespace tl

#include "tl/cuda/math_extra.h"  // more element-wise math, in the same style
#define TL_RNG_FN TL_DEVICE
#include "tl/philox.h"  // T.rng_*: after tl::log / tl::sqrt / tl::cos
#undef TL_RNG_FN
#include "tl/cuda/ieee_math.h"  // T.ieee_add .. T.ieee_fdiv: explicit rounding modes
#include "tl/cuda/fast_math.h"  // T.__exp ..: the hardware approximations; upstream's spellings
