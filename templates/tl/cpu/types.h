// SPDX-License-Identifier: Apache-2.0
/// \file 16-bit floating-point storage types for generated CPU kernels.
///
/// `tl::half` (IEEE binary16) and `tl::bfloat16` are storage types: they hold
/// the exact bit pattern numpy / ml_dtypes use, and all arithmetic happens in
/// float. Arithmetic and comparisons need no operator overloads of their own:
/// the implicit `operator float()` lets the built-in float operators apply,
/// which also keeps mixed expressions such as `h + 1.0f` or `h < b` free of
/// overload ambiguity. Only the compound assignments (which the language does
/// not route through user conversions) are defined as members.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace tl {

/// Tag selecting the raw-bits constructors of `half` and `bfloat16`.
struct from_bits_t {};

namespace detail {

/// Bit pattern of a float (memcpy is the portable, optimised-away bit cast).
inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

/// Float with the given bit pattern.
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// Narrows double to float rounding to odd (truncate, then force the last bit
/// to 1 when inexact). A later round-to-nearest to a format with at most 22
/// mantissa bits then gives the same result as rounding the double directly,
/// which plain double->float->half would not (double rounding).
inline float double_to_float_round_odd(double d) {
  float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d) return f;  // NaN or exact.
  uint32_t u = float_bits(f);
  // Rounding went away from zero: step the magnitude back (|f| > 0 here).
  if ((f < 0 ? -static_cast<double>(f) : static_cast<double>(f)) > (d < 0 ? -d : d)) u -= 1;
  return bits_float(u | 1u);
}

/// float -> binary16 bits in software, round to nearest even; NaN stays NaN
/// (quietened, as F16C does). Always compiled so tests can check it against F16C.
inline uint16_t float_to_half_bits_soft(float f) {
  const uint32_t x = float_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u)  // Inf, or NaN: keep the top payload bits and set the quiet bit.
    return static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u | ((a >> 13) & 0x3ffu) : 0u));
  if (a >= 0x477ff000u)  // >= 65520: the tie above 65504 rounds to even, i.e. Inf.
    return static_cast<uint16_t>(sign | 0x7c00u);
  if (a >= 0x38800000u) {  // Normal half: rebias exponent, round off 13 bits.
    uint32_t h = (a - 0x38000000u) >> 13;
    const uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // A carry may bump the exponent: correct.
    return static_cast<uint16_t>(sign | h);
  }
  if (a < 0x33000000u) return static_cast<uint16_t>(sign);  // < 2^-25 (or the 2^-25 tie) -> 0.
  // Subnormal half: value = m * 2^(e-150), unit 2^-24, so shift by 126 - e.
  const uint32_t e = a >> 23;
  const uint32_t m = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - e;  // 14..24
  uint32_t h = m >> shift;
  const uint32_t rem = m & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (rem > halfway || (rem == halfway && (h & 1u))) ++h;  // May become 0x400: min normal, correct.
  return static_cast<uint16_t>(sign | h);
}

/// binary16 bits -> float in software (exact).
inline float half_bits_to_float_soft(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu;
  const uint32_t m = h & 0x3ffu;
  if (e == 0x1fu) return bits_float(sign | 0x7f800000u | (m << 13));
  if (e == 0) {  // Zero or subnormal: m * 2^-24 is exact in float.
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;
    return sign ? -v : v;
  }
  return bits_float(sign | ((e + 112u) << 23) | (m << 13));
}

/// float -> binary16 bits, round to nearest even (F16C instruction when enabled).
inline uint16_t float_to_half_bits(float f) {
#if defined(__F16C__)
  // Vector forms of _cvtss_sh / _cvtsh_ss: clang's scalar macros trip -Wpedantic.
  return static_cast<uint16_t>(_mm_cvtsi128_si32(_mm_cvtps_ph(_mm_set_ss(f), 0)));  // 0: nearest even.
#else
  return float_to_half_bits_soft(f);
#endif
}

/// binary16 bits -> float, exact (F16C instruction when enabled).
inline float half_bits_to_float(uint16_t h) {
#if defined(__F16C__)
  return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
#else
  return half_bits_to_float_soft(h);
#endif
}

/// float -> bfloat16 bits, round to nearest even; NaN stays NaN (quietened).
inline uint16_t float_to_bfloat16_bits(float f) {
  const uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  // Adding 0x7fff plus the lsb of the kept part rounds ties to even; an
  // overflow past the largest finite value correctly carries into Inf.
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

/// bfloat16 bits -> float (exact).
inline float bfloat16_bits_to_float(uint16_t b) { return bits_float(static_cast<uint32_t>(b) << 16); }

/// Arithmetic types other than float go through double so that no precision
/// is lost before the single, final rounding.
template <typename T>
inline float to_float_for_narrowing(T v) {
  if constexpr (std::is_same<T, float>::value) {
    return v;
  } else {
    return double_to_float_round_odd(static_cast<double>(v));
  }
}

template <typename T>
using enable_if_arith_t = std::enable_if_t<std::is_arithmetic<T>::value, int>;
using std::enable_if_t;

/// What float8.h narrows other arithmetic types with.
template <typename T>
inline float narrow_to_float(T v) {
  return to_float_for_narrowing(v);
}

/// True for the 8-bit float types (specialised in float8.h).
template <typename T>
struct is_float8 {
  static constexpr bool value = false;
};

}  // namespace detail

struct bfloat16;

/// IEEE 754 binary16, stored exactly as numpy's float16. Arithmetic promotes to float.
struct half {
  /// Raw IEEE binary16 bit pattern.
  uint16_t bits;

  /// Uninitialised, like a built-in scalar (keeps the type trivial).
  half() = default;
  /// Rounds any arithmetic value to the nearest half (ties to even).
  template <typename T, detail::enable_if_arith_t<T> = 0>
  half(T v) : bits(detail::float_to_half_bits(detail::to_float_for_narrowing(v))) {}
  /// Rounds a bfloat16 value to the nearest half.
  inline half(bfloat16 v);
  /// Rounds an 8-bit float (exact in float first).
  template <typename T, std::enable_if_t<detail::is_float8<T>::value, int> = 0>
  half(T v) : bits(detail::float_to_half_bits(static_cast<float>(v))) {}
  /// Wraps a raw bit pattern.
  constexpr half(uint16_t raw, from_bits_t) : bits(raw) {}

  /// Exact widening to float; every arithmetic operator goes through this.
  operator float() const { return detail::half_bits_to_float(bits); }

  /// Compound assignments compute in float (or wider) and round once.
  template <typename T>
  half& operator+=(const T& o) { return *this = half(static_cast<float>(*this) + o); }
  /// See operator+=.
  template <typename T>
  half& operator-=(const T& o) { return *this = half(static_cast<float>(*this) - o); }
  /// See operator+=.
  template <typename T>
  half& operator*=(const T& o) { return *this = half(static_cast<float>(*this) * o); }
  /// See operator+=.
  template <typename T>
  half& operator/=(const T& o) { return *this = half(static_cast<float>(*this) / o); }
  /// Pre-increment by one, rounded.
  half& operator++() { return *this += 1.0f; }
  /// Pre-decrement by one, rounded.
  half& operator--() { return *this -= 1.0f; }
  /// Post-increment by one, rounded.
  half operator++(int) { half old = *this; *this += 1.0f; return old; }
  /// Post-decrement by one, rounded.
  half operator--(int) { half old = *this; *this -= 1.0f; return old; }
};

/// bfloat16 (the top half of a float), stored exactly as ml_dtypes does. Arithmetic promotes to float.
struct bfloat16 {
  /// Raw bfloat16 bit pattern (upper 16 bits of the float).
  uint16_t bits;

  /// Uninitialised, like a built-in scalar (keeps the type trivial).
  bfloat16() = default;
  /// Rounds any arithmetic value to the nearest bfloat16 (ties to even).
  template <typename T, detail::enable_if_arith_t<T> = 0>
  bfloat16(T v) : bits(detail::float_to_bfloat16_bits(detail::to_float_for_narrowing(v))) {}
  /// Rounds a half value to the nearest bfloat16.
  bfloat16(half v) : bits(detail::float_to_bfloat16_bits(static_cast<float>(v))) {}
  /// Rounds an 8-bit float (exact in float first).
  template <typename T, std::enable_if_t<detail::is_float8<T>::value, int> = 0>
  bfloat16(T v) : bits(detail::float_to_bfloat16_bits(static_cast<float>(v))) {}
  /// Wraps a raw bit pattern.
  constexpr bfloat16(uint16_t raw, from_bits_t) : bits(raw) {}

  /// Exact widening to float; every arithmetic operator goes through this.
  operator float() const { return detail::bfloat16_bits_to_float(bits); }

  /// Compound assignments compute in float (or wider) and round once.
  template <typename T>
  bfloat16& operator+=(const T& o) { return *this = bfloat16(static_cast<float>(*this) + o); }
  /// See operator+=.
  template <typename T>
  bfloat16& operator-=(const T& o) { return *this = bfloat16(static_cast<float>(*this) - o); }
  /// See operator+=.
  template <typename T>
  bfloat16& operator*=(const T& o) { return *this = bfloat16(static_cast<float>(*this) * o); }
  /// See operator+=.
  template <typename T>
  bfloat16& operator/=(const T& o) { return *this = bfloat16(static_cast<float>(*this) / o); }
  /// Pre-increment by one, rounded.
  bfloat16& operator++() { return *this += 1.0f; }
  /// Pre-decrement by one, rounded.
  bfloat16& operator--() { return *this -= 1.0f; }
  /// Post-increment by one, rounded.
  bfloat16 operator++(int) { bfloat16 old = *this; *this += 1.0f; return old; }
  /// Post-decrement by one, rounded.
  bfloat16 operator--(int) { bfloat16 old = *this; *this -= 1.0f; return old; }
};

inline half::half(bfloat16 v) : bits(detail::float_to_half_bits(static_cast<float>(v))) {}

/// A half with the given raw bit pattern.
constexpr half half_from_bits(uint16_t raw) { return half(raw, from_bits_t{}); }
/// A bfloat16 with the given raw bit pattern.
constexpr bfloat16 bfloat16_from_bits(uint16_t raw) { return bfloat16(raw, from_bits_t{}); }

static_assert(sizeof(half) == 2 && alignof(half) == 2, "half must match binary16 layout");
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2, "bfloat16 must match ml_dtypes layout");
static_assert(std::is_trivially_copyable<half>::value && std::is_trivial<half>::value, "half must be POD-like");
static_assert(std::is_trivially_copyable<bfloat16>::value && std::is_trivial<bfloat16>::value,
              "bfloat16 must be POD-like");

namespace detail {
/// a * b + c of 16-bit values (held in floats), rounded to odd at float's 24 bits, as the
/// CUDA types.h's fallback: rounding it once more to 16 bits is the correctly rounded fma.
/// volatile keeps the compiler from contracting or reassociating the error terms.
inline float fma_round_to_odd(float a, float b, float c) {
  volatile double p = static_cast<double>(a) * static_cast<double>(b);
  const double cd = c;
  volatile double s = p + cd;
  volatile double bb = s - p;
  const double e = (p - (s - bb)) + (cd - bb);
  double sv = s;
  uint64_t u;
  std::memcpy(&u, &sv, sizeof u);
  if (e != 0.0 && (u & 1u) == 0u) u += ((e > 0.0) == (sv > 0.0)) ? 1u : ~uint64_t{0};
  std::memcpy(&sv, &u, sizeof u);
  float f = static_cast<float>(sv);
  uint32_t v;
  std::memcpy(&v, &f, sizeof v);
  if (static_cast<double>(f) != sv && (v & 1u) == 0u && (v & 0x7f800000u) != 0x7f800000u) {
    if ((v & 0x7fffffffu) == 0u) {
      v = sv < 0.0 ? 0x80000001u : 1u;  // underflowed to zero: the smallest subnormal, signed
    } else {
      v += ((static_cast<double>(f) < sv) == (f > 0.0f)) ? 1u : 0xffffffffu;
    }
  }
  std::memcpy(&f, &v, sizeof v);
  return f;
}
}  // namespace detail

/// a * b + c rounded once (contract-half-fma; CUDA's fma.rn.f16 gives the same bits).
inline half hfma(half a, half b, half c) {
  return half(detail::fma_round_to_odd(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
/// a * b + c rounded once (contract-half-fma; CUDA's fma.rn.bf16 gives the same bits).
inline bfloat16 hfma(bfloat16 a, bfloat16 b, bfloat16 c) {
  return bfloat16(detail::fma_round_to_odd(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}

}  // namespace tl

#define TL_F8_FN inline
#include "../float8.h"  // the CPU include path is templates/tl/cpu
#include "../subbyte.h"
#include "../stochastic_round.h"
#undef TL_F8_FN

static_assert(sizeof(tl::float8_e4m3) == 1 && sizeof(tl::float8_e5m2) == 1, "8-bit floats must be one byte");
static_assert(sizeof(tl::float4_e2m1) == 1 && sizeof(tl::float8_e8m0) == 1 && sizeof(tl::int4_t) == 1,
              "the MX and 4-bit types hold one value per byte");
static_assert(std::is_trivial<tl::float8_e4m3>::value && std::is_trivial<tl::float8_e5m2>::value,
              "8-bit floats must be POD-like");
