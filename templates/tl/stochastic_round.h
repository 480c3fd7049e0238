// SPDX-License-Identifier: Apache-2.0
/// \file Stochastic rounding of float32 values (T.cast(x, dtype, round="rs", rbits=r)), the
/// same integer-and-power-of-two arithmetic on every target, so a kernel gives the same bits
/// on the CPU and on the GPU for the same random bits.
///
/// x lies between two neighbours of the narrower type, lo (toward zero) and lo + ulp; the
/// result is the upper one when rbits / 2^32 < (|x| - lo) / ulp, so over uniform random bits
/// it is unbiased: E[result] = x. The ulp at x is 2^(max(e, emin) - m) for x's exponent e,
/// the type's smallest normal exponent emin and its m mantissa bits (below emin, the
/// subnormals' fixed step); both products are exact in float32. Values beyond the largest
/// finite value (infinities included) saturate to it (PTX's .satfinite); NaN converts as a
/// plain cast does.
///
/// Included by the target's types.h after subbyte.h, with TL_F8_FN defined.
#pragma once

namespace tl {

namespace detail {

/// m (mantissa bits), emin (smallest normal exponent) and the largest finite value.
template <typename T>
struct rs_format;
template <>
struct rs_format<half> {
  static constexpr int m = 10, emin = -14;
  static constexpr float max = 65504.0f;
};
template <>
struct rs_format<bfloat16> {
  static constexpr int m = 7, emin = -126;
  static constexpr float max = 3.3895313892515355e38f;
};
template <>
struct rs_format<float8_e4m3> {
  static constexpr int m = 3, emin = -6;
  static constexpr float max = 448.0f;
};
template <>
struct rs_format<float8_e5m2> {
  static constexpr int m = 2, emin = -14;
  static constexpr float max = 57344.0f;
};
template <>
struct rs_format<float4_e2m1> {
  static constexpr int m = 1, emin = 0;
  static constexpr float max = 6.0f;
};

/// 2^k as a float, for -149 <= k <= 127 (built from its bits: exact, no library call).
TL_F8_FN float pow2f(int k) {
  if (k >= -126) return bits_float(static_cast<unsigned>(k + 127) << 23);
  return bits_float(1u << (k + 149));  // a subnormal
}

}  // namespace detail

/// x rounded stochastically to T with the random bits `rbits` (see the file comment).
template <typename T>
TL_F8_FN T cast_rs(float x, unsigned int rbits) {
  using F = detail::rs_format<T>;
  const unsigned bits = detail::float_bits(x);
  const unsigned mag_bits = bits & 0x7fffffffu;
  if (mag_bits > 0x7f800000u) return T(x);  // NaN
  const float sign = (bits >> 31) ? -1.0f : 1.0f;
  float mag = detail::bits_float(mag_bits);
  if (mag >= F::max) return T(sign * F::max);
  const int e = static_cast<int>(mag_bits >> 23) - 127;  // -127 for float32 subnormals and zero
  const int step = (e > F::emin ? e : F::emin) - F::m;
  // q = mag / 2^step < 2^(m+1), exact (power-of-two scalings); in two steps where 2^-step
  // is beyond float (bfloat16's subnormals: step down to -133).
  const int half_step = -step / 2;
  const float q = mag * detail::pow2f(half_step) * detail::pow2f(-step - half_step);
  const float k = static_cast<float>(static_cast<int>(q));  // floor: q >= 0
  const double frac = static_cast<double>(q - k);           // exact
  const bool up = static_cast<double>(rbits) < frac * 4294967296.0;
  const float r = (k + (up ? 1.0f : 0.0f)) * detail::pow2f(step);  // exact, representable in T
  return T(sign * r);
}

// The same, one element at a time, under the names generated code uses (those of upstream
// TileLang's helpers, which code inspecting a kernel's source may look for): float -> format
// with saturation ("_sat": the only mode, see the file comment).
TL_F8_FN half __tl_cvt_f32x1_to_f16x1_rs_sat(float x, unsigned int rbits) { return cast_rs<half>(x, rbits); }
TL_F8_FN bfloat16 __tl_cvt_f32x1_to_bf16x1_rs_sat(float x, unsigned int rbits) { return cast_rs<bfloat16>(x, rbits); }
TL_F8_FN float8_e4m3 __tl_cvt_f32x1_to_e4m3x1_rs_sat(float x, unsigned int rbits) {
  return cast_rs<float8_e4m3>(x, rbits);
}
TL_F8_FN float8_e5m2 __tl_cvt_f32x1_to_e5m2x1_rs_sat(float x, unsigned int rbits) {
  return cast_rs<float8_e5m2>(x, rbits);
}
TL_F8_FN float4_e2m1 __tl_cvt_f32x1_to_e2m1x1_rs_sat(float x, unsigned int rbits) {
  return cast_rs<float4_e2m1>(x, rbits);
}

}  // namespace tl
