// SPDX-License-Identifier: Apache-2.0
/// \file 8-bit floating-point storage types, shared by the CPU and CUDA libraries.
///
/// `tl::float8_e4m3` (OCP E4M3 "fn": no infinities, one NaN pattern per sign, largest
/// finite 448) and `tl::float8_e5m2` (OCP E5M2: IEEE-like, with infinities, largest finite
/// 57344) hold the bit patterns that ml_dtypes and torch (float8_e4m3fn, float8_e5m2)
/// use. Like `half`, they are storage types: the implicit `operator float()` (exact) lets
/// every arithmetic operator compute in float, and only compound assignments are members.
///
/// Narrowing rounds to nearest even and saturates: a finite value beyond the largest
/// finite one, and an infinity, become the largest finite value of its sign; NaN stays
/// NaN. This is what CUDA's `cvt.rn.satfinite` conversions (and hence upstream TileLang's
/// CUDA code) do; ml_dtypes instead gives NaN (e4m3) or infinity (e5m2) on overflow.
/// Other source types are first narrowed to float rounding to odd (exact for the
/// result: float has many more mantissa bits), as for half.
///
/// The conversions are integer bit manipulation, the same on both targets. The including
/// header defines TL_F8_FN (the function qualifier), detail::float_bits /
/// detail::bits_float, detail::narrow_to_float, detail::enable_if_t and
/// detail::enable_if_arith_t, and has declared `half`, `bfloat16` and the
/// detail::is_float8 trait (false by default) before including this file.
#pragma once

namespace tl {

namespace detail {

/// An 8-bit float format: M mantissa bits, exponent bias, and its special codes (on the
/// 7-bit magnitude): the largest finite value, NaN, and infinity (0 when it has none).
template <int kMant, int kBias, unsigned kMaxCode, unsigned kNanCode, unsigned kInfCode>
struct f8_format {
  static constexpr int mant = kMant;
  static constexpr int bias = kBias;
  static constexpr unsigned max_code = kMaxCode;
  static constexpr unsigned nan_code = kNanCode;
  static constexpr unsigned inf_code = kInfCode;
};
using e4m3fn_format = f8_format<3, 7, 0x7Eu, 0x7Fu, 0u>;
using e5m2_format = f8_format<2, 15, 0x7Bu, 0x7Eu, 0x7Cu>;

/// float bits -> 8-bit code: round to nearest even, saturate to the largest finite value.
template <typename F>
TL_F8_FN unsigned char float_bits_to_f8(unsigned int x) {
  const unsigned sign = (x >> 24) & 0x80u;
  const unsigned a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<unsigned char>(sign | F::nan_code);
  const int drop = 23 - F::mant;
  unsigned code;
  if ((a >> 23) >= static_cast<unsigned>(128 - F::bias)) {
    // Normal in the target: rebias the exponent, then round away the low mantissa bits
    // (a carry into the exponent is the correct next binade).
    const unsigned r = a - (static_cast<unsigned>(127 - F::bias) << 23);
    code = (r + ((1u << (drop - 1)) - 1u) + ((r >> drop) & 1u)) >> drop;
    if (code > F::max_code) code = F::max_code;  // also catches infinity
  } else {
    // Subnormal (or zero) in the target: the value in units of the smallest subnormal,
    // 2^(1 - bias - mant), rounded to an integer; 2^mant is the smallest normal's code.
    const int e = static_cast<int>(a >> 23);  // biased float exponent, 0 for float subnormals
    const unsigned m = e ? ((a & 0x7fffffu) | 0x800000u) : (a & 0x7fffffu);
    // a = m * 2^(max(e,1) - 150); in target units: m * 2^(max(e,1) - 150 + bias - 1 + mant)
    const int shift = 150 - (e ? e : 1) - F::bias + 1 - F::mant;  // > drop here
    if (shift > 25) {
      code = 0;
    } else {
      const unsigned q = m >> shift, rem = m & ((1u << shift) - 1u), half = 1u << (shift - 1);
      code = q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
    }
  }
  return static_cast<unsigned char>(sign | code);
}

/// 8-bit code -> float bits (exact).
template <typename F>
TL_F8_FN unsigned int f8_to_float_bits(unsigned char c) {
  const unsigned sign = static_cast<unsigned>(c & 0x80u) << 24;
  const unsigned mag = c & 0x7fu;
  if (mag == F::nan_code || (F::inf_code && mag > F::inf_code)) return sign | 0x7fc00000u;
  if (F::inf_code && mag == F::inf_code) return sign | 0x7f800000u;
  const unsigned exp = mag >> F::mant, mant = mag & ((1u << F::mant) - 1u);
  if (exp == 0) {
    if (mant == 0) return sign;
    // Subnormal: normalise the mantissa into a float (exact).
    int e = 1 - F::bias;
    unsigned m = mant;
    while (!(m & (1u << F::mant))) {
      m <<= 1;
      --e;
    }
    return sign | (static_cast<unsigned>(e + 127) << 23) | ((m & ((1u << F::mant) - 1u)) << (23 - F::mant));
  }
  return sign | ((exp - F::bias + 127) << 23) | (mant << (23 - F::mant));
}

/// float -> 8-bit code and back, through the hardware conversions on sm_89+ when the
/// kernel is compiled with TL_FLOAT8_HW_CVT (pass config "tl.enable_float8_hw_convert"):
/// `cvt.rn.satfinite.{e4m3,e5m2}x2.f32` rounds to nearest even and saturates as the
/// integer version above does, and `cvt.rn.f16x2.{e4m3,e5m2}x2` widens exactly (through
/// half). One instruction instead of a few dozen; the JIT defines it by default
/// (tests/cuda/device_lib_test.cu compares the two over every 8-bit code and a sweep of
/// floats: its "float8 hardware conversions" checks).
#if defined(TL_FLOAT8_HW_CVT) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define TL_F8_HW 1
#endif

template <typename F>
TL_F8_FN unsigned char float_to_f8(float f) {
#ifdef TL_F8_HW
  unsigned short pair;
  if constexpr (F::mant == 3) {
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  } else {
    asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(pair) : "f"(0.0f), "f"(f));
  }
  return static_cast<unsigned char>(pair & 0xffu);  // the second source lands in the low byte
#else
  return float_bits_to_f8<F>(float_bits(f));
#endif
}

template <typename F>
TL_F8_FN float f8_to_float(unsigned char c) {
#ifdef TL_F8_HW
  unsigned int h2;
  const unsigned short in = c;
  if constexpr (F::mant == 3) {
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h2) : "h"(in));
  } else {
    asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(h2) : "h"(in));
  }
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(static_cast<unsigned short>(h2 & 0xffffu)));
  return f;
#else
  return bits_float(f8_to_float_bits<F>(c));
#endif
}

}  // namespace detail

/// An 8-bit float of format F (see the file comment). Arithmetic promotes to float.
template <typename F>
struct float8 {
  /// The format's description (mantissa and exponent widths, special codes).
  using format = F;
  /// The raw 8-bit pattern.
  unsigned char bits;

  /// Uninitialised, like a built-in scalar (keeps the type trivial).
  float8() = default;
  /// Rounds any arithmetic value (saturating; see the file comment).
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_F8_FN float8(T v) : bits(detail::float_to_f8<F>(detail::narrow_to_float(v))) {}
  /// Rounds a 16-bit float (exact in float first).
  TL_F8_FN float8(half v) : bits(detail::float_to_f8<F>(static_cast<float>(v))) {}
  /// Rounds a bfloat16 (exact in float first).
  TL_F8_FN float8(bfloat16 v) : bits(detail::float_to_f8<F>(static_cast<float>(v))) {}
  /// Converts from the other 8-bit format (through float, exact).
  template <typename G>
  TL_F8_FN explicit float8(float8<G> v) : bits(detail::float_to_f8<F>(static_cast<float>(v))) {}

  /// The value with the given bit pattern.
  static TL_F8_FN float8 from_bits(unsigned char raw) {
    float8 r;
    r.bits = raw;
    return r;
  }

  /// Infinity of the given sign where the format has one (E5M2), else the largest finite
  /// value (E4M3): what T.infinity / -T.infinity mean for it. Built from the bits, since a
  /// conversion of float infinity saturates.
  static TL_F8_FN float8 infinity_of_sign(bool negative) {
    return from_bits(static_cast<unsigned char>((negative ? 0x80u : 0u) | (F::inf_code ? F::inf_code : F::max_code)));
  }

  /// Exact widening to float; every arithmetic operator goes through this.
  TL_F8_FN operator float() const { return detail::f8_to_float<F>(bits); }

  /// Compound assignments compute in float and round once.
  template <typename T>
  TL_F8_FN float8& operator+=(const T& o) {
    return *this = float8(static_cast<float>(*this) + o);
  }
  /// See operator+=.
  template <typename T>
  TL_F8_FN float8& operator-=(const T& o) {
    return *this = float8(static_cast<float>(*this) - o);
  }
  /// See operator+=.
  template <typename T>
  TL_F8_FN float8& operator*=(const T& o) {
    return *this = float8(static_cast<float>(*this) * o);
  }
  /// See operator+=.
  template <typename T>
  TL_F8_FN float8& operator/=(const T& o) {
    return *this = float8(static_cast<float>(*this) / o);
  }
};

using float8_e4m3 = float8<detail::e4m3fn_format>;
using float8_e5m2 = float8<detail::e5m2_format>;

namespace detail {
template <typename F>
struct is_float8<float8<F>> {
  static constexpr bool value = true;
};
template <typename T>
using enable_if_float8_t = enable_if_t<is_float8<T>::value, int>;
}  // namespace detail

/// |x|: clears the sign bit (exact, NaN stays NaN).
template <typename T, detail::enable_if_float8_t<T> = 0>
TL_F8_FN T abs(T x) {
  return T::from_bits(static_cast<unsigned char>(x.bits & 0x7fu));
}

}  // namespace tl
