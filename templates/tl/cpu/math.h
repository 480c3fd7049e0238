// SPDX-License-Identifier: Apache-2.0
/// \file Scalar math for generated CPU kernels.
///
/// Every function has exact overloads for float, double, half and bfloat16
/// (the 16-bit ones compute in float and round the result back), so a call
/// never depends on which of several equally good conversions the compiler
/// would pick. Integer arguments to the transcendental functions compute in
/// double, like the C library does.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "types.h"

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
inline constexpr bool is_number_v = std::is_arithmetic<T>::value || std::is_same<T, half>::value ||
                                    std::is_same<T, bfloat16>::value || is_float8<T>::value;

/// Common computation type of two different number types (half+bfloat16 -> float).
template <typename A, typename B>
using mixed_t = std::common_type_t<typename compute_type<A>::type, typename compute_type<B>::type>;

template <typename A, typename B>
using enable_if_mixed_t =
    std::enable_if_t<!std::is_same<A, B>::value && is_number_v<A> && is_number_v<B>, int>;

template <typename T>
using enable_if_int_t = std::enable_if_t<std::is_integral<T>::value, int>;

}  // namespace detail

// Unary functions: float / double map to <cmath>; half / bfloat16 round-trip
// through float; integers compute in double.
#define TL_CPU_UNARY_MATH(name, fexpr, dexpr)                                   \
  /** name() of a float. */                                                     \
  inline float name(float x) { return fexpr; }                                  \
  /** name() of a double. */                                                    \
  inline double name(double x) { return dexpr; }                                \
  /** name() of a half, computed in float. */                                   \
  inline half name(half h) { return half(name(static_cast<float>(h))); }        \
  /** name() of a bfloat16, computed in float. */                               \
  inline bfloat16 name(bfloat16 h) { return bfloat16(name(static_cast<float>(h))); } \
  /** name() of an 8-bit float, computed in float. */                           \
  template <typename T, detail::enable_if_float8_t<T> = 0>                      \
  inline T name(T h) { return T(name(static_cast<float>(h))); }                 \
  /** name() of an integer, computed in double. */                              \
  template <typename T, detail::enable_if_int_t<T> = 0>                         \
  inline double name(T x) { return name(static_cast<double>(x)); }

/// Whether x is neither infinite nor NaN (T.isfinite); 16- and 8-bit floats through float.
inline bool isfinite(float x) { return std::isfinite(x); }
inline bool isfinite(double x) { return std::isfinite(x); }
inline bool isfinite(half h) { return std::isfinite(static_cast<float>(h)); }
inline bool isfinite(bfloat16 h) { return std::isfinite(static_cast<float>(h)); }
template <typename T, detail::enable_if_float8_t<T> = 0>
inline bool isfinite(T h) {
  return std::isfinite(static_cast<float>(h));
}

TL_CPU_UNARY_MATH(exp, std::exp(x), std::exp(x))
TL_CPU_UNARY_MATH(exp2, std::exp2(x), std::exp2(x))
TL_CPU_UNARY_MATH(expm1, std::expm1(x), std::expm1(x))
TL_CPU_UNARY_MATH(log, std::log(x), std::log(x))
TL_CPU_UNARY_MATH(log2, std::log2(x), std::log2(x))
TL_CPU_UNARY_MATH(log10, std::log10(x), std::log10(x))
TL_CPU_UNARY_MATH(log1p, std::log1p(x), std::log1p(x))
TL_CPU_UNARY_MATH(sqrt, std::sqrt(x), std::sqrt(x))
TL_CPU_UNARY_MATH(rsqrt, 1.0f / std::sqrt(x), 1.0 / std::sqrt(x))
TL_CPU_UNARY_MATH(tanh, std::tanh(x), std::tanh(x))
TL_CPU_UNARY_MATH(sigmoid, 1.0f / (1.0f + std::exp(-x)), 1.0 / (1.0 + std::exp(-x)))
TL_CPU_UNARY_MATH(sin, std::sin(x), std::sin(x))
TL_CPU_UNARY_MATH(cos, std::cos(x), std::cos(x))
TL_CPU_UNARY_MATH(tan, std::tan(x), std::tan(x))
TL_CPU_UNARY_MATH(erf, std::erf(x), std::erf(x))
TL_CPU_UNARY_MATH(floor, std::floor(x), std::floor(x))
TL_CPU_UNARY_MATH(ceil, std::ceil(x), std::ceil(x))
TL_CPU_UNARY_MATH(trunc, std::trunc(x), std::trunc(x))
TL_CPU_UNARY_MATH(round, std::round(x), std::round(x))  // Ties away from zero, like C round().
TL_CPU_UNARY_MATH(nearbyint, std::nearbyint(x), std::nearbyint(x))  // Ties to even.
TL_CPU_UNARY_MATH(sinh, std::sinh(x), std::sinh(x))
TL_CPU_UNARY_MATH(cosh, std::cosh(x), std::cosh(x))
TL_CPU_UNARY_MATH(asin, std::asin(x), std::asin(x))
TL_CPU_UNARY_MATH(acos, std::acos(x), std::acos(x))
TL_CPU_UNARY_MATH(atan, std::atan(x), std::atan(x))
TL_CPU_UNARY_MATH(asinh, std::asinh(x), std::asinh(x))
TL_CPU_UNARY_MATH(acosh, std::acosh(x), std::acosh(x))
TL_CPU_UNARY_MATH(atanh, std::atanh(x), std::atanh(x))
TL_CPU_UNARY_MATH(exp10, std::pow(10.0f, x), std::pow(10.0, x))

#undef TL_CPU_UNARY_MATH

/// a raised to b.
inline float pow(float a, float b) { return std::pow(a, b); }
/// a raised to b.
inline double pow(double a, double b) { return std::pow(a, b); }
/// a raised to b, computed in float.
inline half pow(half a, half b) { return half(std::pow(static_cast<float>(a), static_cast<float>(b))); }
/// a raised to b, computed in float.
inline bfloat16 pow(bfloat16 a, bfloat16 b) {
  return bfloat16(std::pow(static_cast<float>(a), static_cast<float>(b)));
}
/// a raised to b for integers, computed in double (like the C library).
template <typename T, detail::enable_if_int_t<T> = 0>
inline double pow(T a, T b) { return std::pow(static_cast<double>(a), static_cast<double>(b)); }
/// a raised to b for 8-bit floats, computed in float.
template <typename T, detail::enable_if_float8_t<T> = 0>
inline T pow(T a, T b) { return T(std::pow(static_cast<float>(a), static_cast<float>(b))); }
/// Mixed-type pow: both operands are converted to their common computation type first.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
inline auto pow(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return pow(static_cast<C>(a), static_cast<C>(b));
}

/// Absolute value of a float.
inline float abs(float x) { return std::fabs(x); }
/// Absolute value of a double.
inline double abs(double x) { return std::fabs(x); }
/// Absolute value of a half (clears the sign bit, so exact and NaN-preserving).
inline half abs(half x) { return half_from_bits(static_cast<uint16_t>(x.bits & 0x7fffu)); }
/// Absolute value of a bfloat16 (clears the sign bit).
inline bfloat16 abs(bfloat16 x) { return bfloat16_from_bits(static_cast<uint16_t>(x.bits & 0x7fffu)); }
/// Absolute value of any integer (unsigned values are returned unchanged).
template <typename T, detail::enable_if_int_t<T> = 0>
inline T abs(T x) {
  if constexpr (std::is_signed<T>::value) {
    return x < 0 ? static_cast<T>(-x) : x;
  } else {
    return x;
  }
}

/// Smaller of two values of one type, with fmin's rule for NaN (a NaN operand
/// loses to a number), as the CUDA library computes it. Written as a
/// compare-select (not a call to fmin) so that loops over it vectorise.
template <typename T>
inline T min(T a, T b) { return (b < a || a != a) ? b : a; }
/// Larger of two values of one type (see min; fmax's NaN rule).
template <typename T>
inline T max(T a, T b) { return (a < b || a != a) ? b : a; }
/// Mixed-type min: both operands are converted to their common computation type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
inline detail::mixed_t<A, B> min(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return min(static_cast<C>(a), static_cast<C>(b));
}
/// Mixed-type max: both operands are converted to their common computation type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
inline detail::mixed_t<A, B> max(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return max(static_cast<C>(a), static_cast<C>(b));
}

/// Python-style integer division: rounds toward negative infinity.
/// Division by zero is undefined, as in C.
template <typename T, detail::enable_if_int_t<T> = 0>
inline T floordiv(T a, T b) {
  if constexpr (std::is_signed<T>::value) {
    const T q = static_cast<T>(a / b);
    // C truncates toward zero; step down when the exact quotient was negative and inexact.
    return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
  } else {
    return static_cast<T>(a / b);
  }
}
/// Python-style modulo: the result has the sign of b (a == floordiv(a,b)*b + floormod(a,b)).
template <typename T, detail::enable_if_int_t<T> = 0>
inline T floormod(T a, T b) {
  if constexpr (std::is_signed<T>::value) {
    const T r = static_cast<T>(a % b);
    return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
  } else {
    return static_cast<T>(a % b);
  }
}
/// Floor division of floating-point values: floor(a / b).
inline float floordiv(float a, float b) { return std::floor(a / b); }
/// Floor division of floating-point values: floor(a / b).
inline double floordiv(double a, double b) { return std::floor(a / b); }
/// Floating-point floor modulo: a - floor(a / b) * b (sign of b).
inline float floormod(float a, float b) { return a - std::floor(a / b) * b; }
/// Floating-point floor modulo: a - floor(a / b) * b (sign of b).
inline double floormod(double a, double b) { return a - std::floor(a / b) * b; }
/// Mixed-type floordiv (e.g. int32 and int64): computes in the common type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
inline detail::mixed_t<A, B> floordiv(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return floordiv(static_cast<C>(a), static_cast<C>(b));
}
/// Mixed-type floormod (e.g. int32 and int64): computes in the common type.
template <typename A, typename B, detail::enable_if_mixed_t<A, B> = 0>
inline detail::mixed_t<A, B> floormod(A a, B b) {
  using C = detail::mixed_t<A, B>;
  return floormod(static_cast<C>(a), static_cast<C>(b));
}

/// x rounded to TF32 (a 10-bit mantissa; round to nearest, ties away from zero, what
/// cvt.rna.tf32.f32 does), kept as a float whose low 13 bits are zero: the operand rounding
/// of a T.gemm on tfloat32 tiles (GemmOp::tf32). Finite values past the largest TF32 round
/// to infinity; infinities and NaN pass unchanged. The CUDA tl::round_tf32 is the same code.
inline float round_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & 0xffffe000u;  // half an ulp, then truncate
  std::memcpy(&x, &u, sizeof u);
  return x;
}

/// Positive infinity of T; the largest value for types without infinity (integers).
template <typename T>
inline T infinity() {
  if constexpr (std::is_same<T, half>::value) {
    return half_from_bits(0x7c00u);
  } else if constexpr (std::is_same<T, bfloat16>::value) {
    return bfloat16_from_bits(0x7f80u);
  } else if constexpr (detail::is_float8<T>::value) {
    return T::infinity_of_sign(false);  // e4m3 has none: its largest finite value, 448
  } else if constexpr (std::numeric_limits<T>::has_infinity) {
    return std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::max();
  }
}

/// Negative infinity of T; the lowest value for types without infinity (integers).
template <typename T>
inline T neg_infinity() {
  if constexpr (std::is_same<T, half>::value) {
    return half_from_bits(0xfc00u);
  } else if constexpr (std::is_same<T, bfloat16>::value) {
    return bfloat16_from_bits(0xff80u);
  } else if constexpr (detail::is_float8<T>::value) {
    return T::infinity_of_sign(true);  // e4m3 has none: -448
  } else if constexpr (std::numeric_limits<T>::has_infinity) {
    return -std::numeric_limits<T>::infinity();
  } else {
    return std::numeric_limits<T>::lowest();
  }
}

}  // namespace tl

#include "math_extra.h"  // more element-wise math, in the same style
#define TL_RNG_FN inline
#include "../philox.h"  // T.rng_*: after tl::log / tl::sqrt / tl::cos
#undef TL_RNG_FN
#include "ieee_math.h"  // T.ieee_add .. T.ieee_fdiv: explicit rounding modes
#include "fast_math.h"  // T.__exp ..; upstream's spellings of some math
