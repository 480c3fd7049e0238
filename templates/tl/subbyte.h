// SPDX-License-Identifier: Apache-2.0
/// \file The OCP MX types and the 4-bit integers, shared by the CPU and CUDA libraries.
///
/// - `tl::float4_e2m1` (float4_e2m1fn): sign, 2 exponent bits (bias 1), 1 mantissa bit;
///   values 0, 0.5, 1, 1.5, 2, 3, 4, 6 with either sign; no infinities or NaN.
/// - `tl::float8_e8m0` (float8_e8m0fnu): an unsigned biased exponent, 2^(code - 127) for
///   codes 0..254, 255 NaN; no sign, no zero (the MX block scale).
/// - `tl::int4_t` / `tl::uint4_t`: 4-bit two's complement / unsigned integers.
///
/// All hold one value per byte here (in the low nibble for the 4-bit ones): tiles and
/// registers store them so. Global tensors of 4-bit types are packed two per byte, as torch
/// and upstream TileLang store them: element i is the low nibble of byte i/2 when i is even,
/// the high nibble when odd; load_packed / store_packed read and write them (the code
/// generator emits those for every element access of such a tensor).
///
/// Conversions follow ml_dtypes bit for bit (tests/python/test_subbyte_dtypes.py compares):
/// - to float4_e2m1: round to nearest even; beyond 6 (and infinity) saturates to +-6;
///   NaN becomes a zero with the opposite sign bit (ml_dtypes' result: the type has no NaN);
/// - to float8_e8m0: round half up on the mantissa (1.5 -> 2, 3 -> 4); zero, negative
///   values, infinity, NaN and values that round past 2^127 become NaN; positive values
///   below 2^-127 become 2^-127;
/// - to int4 / uint4: truncation toward zero, then the low 4 bits (integers wrap modulo 16).
/// Sources other than float go through float first (rounding to odd, exact for the result,
/// as float8.h does). On sm_100 these have hardware conversions; for sm_80 / sm_90a they
/// are integer bit manipulation, the same code on both targets.
///
/// Included by the target's types.h after float8.h, with TL_F8_FN (the function qualifier)
/// defined.
#pragma once

namespace tl {

namespace detail {

/// E2M1 as a float8.h format (mantissa 1, bias 1, largest code 7; no NaN or infinity codes:
/// 0xff is never a 3-bit magnitude).
using e2m1_format = f8_format<1, 1, 0x7u, 0xffu, 0u>;

/// float bits -> 4-bit E2M1 code (sign in bit 3).
TL_F8_FN unsigned char float_bits_to_e2m1(unsigned int x) {
  const unsigned sign = (x >> 28) & 0x8u;
  const unsigned a = x & 0x7fffffffu;
  if (a > 0x7f800000u) return static_cast<unsigned char>(sign ^ 0x8u);
  return static_cast<unsigned char>(sign | float_bits_to_f8<e2m1_format>(a));
}

/// 4-bit E2M1 code -> float bits (exact).
TL_F8_FN unsigned int e2m1_to_float_bits(unsigned char c) {
  return (static_cast<unsigned>(c & 0x8u) << 28) | f8_to_float_bits<e2m1_format>(static_cast<unsigned char>(c & 0x7u));
}

/// float bits -> E8M0 code.
TL_F8_FN unsigned char float_bits_to_e8m0(unsigned int x) {
  if (x == 0 || (x >> 31) || x >= 0x7f800000u) return 0xffu;  // zero, negative, infinity, NaN
  const unsigned e = x >> 23, m = x & 0x7fffffu;
  // Below 2^-126 (a float subnormal, m * 2^-149): 2^-127 (m = 0x400000) or, from
  // 1.5 * 2^-127 up, 2^-126; smaller values too become 2^-127 (the type has no zero).
  if (e == 0) return m >= 0x600000u ? 1u : 0u;
  const unsigned code = e + (m >= 0x400000u ? 1u : 0u);
  return static_cast<unsigned char>(code > 254u ? 0xffu : code);
}

/// E8M0 code -> float bits (exact; code 0 is the float subnormal 2^-127).
TL_F8_FN unsigned int e8m0_to_float_bits(unsigned char c) {
  if (c == 0xffu) return 0x7fc00000u;
  if (c == 0) return 0x00400000u;
  return static_cast<unsigned>(c) << 23;
}

/// A half's float bits, NaN keeping the half's sign: the hardware widening (cvt.f32.f16)
/// returns the canonical, positive NaN, and float4_e2m1 maps NaN by its sign.
TL_F8_FN unsigned int half_float_bits(half v) {
  const unsigned f = float_bits(static_cast<float>(v));
  if ((f & 0x7fffffffu) <= 0x7f800000u) return f;
  return (f & 0x7fffffffu) | (static_cast<unsigned>(v.bits & 0x8000u) << 16);
}

/// The low 4 bits of v as a signed value.
TL_F8_FN signed char wrap_int4(long long v) { return static_cast<signed char>(((v & 0xf) ^ 0x8) - 0x8); }

}  // namespace detail

/// float4_e2m1fn (see the file comment). Arithmetic promotes to float.
struct float4_e2m1 {
  unsigned char bits;  ///< the code, in bits 0..3

  float4_e2m1() = default;
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_F8_FN float4_e2m1(T v) : bits(detail::float_bits_to_e2m1(detail::float_bits(detail::narrow_to_float(v)))) {}
  TL_F8_FN float4_e2m1(half v) : bits(detail::float_bits_to_e2m1(detail::half_float_bits(v))) {}
  TL_F8_FN float4_e2m1(bfloat16 v) : bits(detail::float_bits_to_e2m1(detail::float_bits(static_cast<float>(v)))) {}
  template <typename G>
  TL_F8_FN explicit float4_e2m1(float8<G> v)
      : bits(detail::float_bits_to_e2m1(detail::float_bits(static_cast<float>(v)))) {}
  static TL_F8_FN float4_e2m1 from_bits(unsigned char raw) {
    float4_e2m1 r;
    r.bits = static_cast<unsigned char>(raw & 0xfu);
    return r;
  }
  TL_F8_FN operator float() const { return detail::bits_float(detail::e2m1_to_float_bits(bits)); }
};

/// float8_e8m0fnu (see the file comment). Arithmetic promotes to float.
struct float8_e8m0 {
  unsigned char bits;

  float8_e8m0() = default;
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_F8_FN float8_e8m0(T v) : bits(detail::float_bits_to_e8m0(detail::float_bits(detail::narrow_to_float(v)))) {}
  TL_F8_FN float8_e8m0(half v) : bits(detail::float_bits_to_e8m0(detail::float_bits(static_cast<float>(v)))) {}
  TL_F8_FN float8_e8m0(bfloat16 v) : bits(detail::float_bits_to_e8m0(detail::float_bits(static_cast<float>(v)))) {}
  template <typename G>
  TL_F8_FN explicit float8_e8m0(float8<G> v)
      : bits(detail::float_bits_to_e8m0(detail::float_bits(static_cast<float>(v)))) {}
  TL_F8_FN explicit float8_e8m0(float4_e2m1 v)
      : bits(detail::float_bits_to_e8m0(detail::float_bits(static_cast<float>(v)))) {}
  static TL_F8_FN float8_e8m0 from_bits(unsigned char raw) {
    float8_e8m0 r;
    r.bits = raw;
    return r;
  }
  TL_F8_FN operator float() const { return detail::bits_float(detail::e8m0_to_float_bits(bits)); }
};

/// int4_t (int4): a 4-bit two's complement integer, held sign-extended. Arithmetic promotes to int;
/// constructing one keeps the low 4 bits.
struct int4_t {
  signed char v;

  int4_t() = default;
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_F8_FN int4_t(T x) : v(detail::wrap_int4(static_cast<long long>(x))) {}
  static TL_F8_FN int4_t from_bits(unsigned char raw) {
    int4_t r;
    r.v = detail::wrap_int4(raw);
    return r;
  }
  TL_F8_FN unsigned char code() const { return static_cast<unsigned char>(v & 0xf); }
  TL_F8_FN operator int() const { return v; }
};

/// uint4_t (uint4): a 4-bit unsigned integer.
struct uint4_t {
  unsigned char v;

  uint4_t() = default;
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_F8_FN uint4_t(T x) : v(static_cast<unsigned char>(static_cast<long long>(x) & 0xf)) {}
  static TL_F8_FN uint4_t from_bits(unsigned char raw) {
    uint4_t r;
    r.v = static_cast<unsigned char>(raw & 0xfu);
    return r;
  }
  TL_F8_FN unsigned char code() const { return v; }
  TL_F8_FN operator int() const { return v; }
};

TL_F8_FN unsigned char nibble_of(float4_e2m1 x) { return x.bits; }
TL_F8_FN unsigned char nibble_of(int4_t x) { return x.code(); }
TL_F8_FN unsigned char nibble_of(uint4_t x) { return x.code(); }

/// Element i of a packed 4-bit tensor (two per byte, element 2k in the low nibble).
template <typename T, typename I>
TL_F8_FN T load_packed(const unsigned char* p, I i) {
  return T::from_bits(static_cast<unsigned char>((p[i >> 1] >> ((i & 1) * 4)) & 0xf));
}

/// Writes element i of a packed 4-bit tensor without touching its neighbour in the byte:
/// the nibble is cleared, then set, each with an atomic operation, so that threads (CUDA)
/// or blocks (the CPU's OpenMP loop) writing the two halves of one byte never lose either.
/// The last operation of every store is its own OR, so even threads writing the same
/// element with the same value (replicated layouts) leave that value.
template <typename T, typename I>
TL_F8_FN void store_packed(unsigned char* p, I i, T v) {
  const unsigned nib = nibble_of(v);
  unsigned char* byte = p + (i >> 1);
  const unsigned shift = static_cast<unsigned>(i & 1) * 4u;
#if defined(__CUDACC__)
  // 32-bit atomics on the aligned word holding the byte (the other bytes' mask bits are 1s
  // for the AND and 0s for the OR: they are left as they are).
  // The word is addressed from `byte` (not rebuilt from an integer), so the compiler knows
  // it aliases the tensor: a later load_packed of the element is not moved above the store.
  const unsigned in_word = static_cast<unsigned>(reinterpret_cast<unsigned long long>(byte) & 3u);
  unsigned int* word = reinterpret_cast<unsigned int*>(byte - in_word);
  const unsigned s = in_word * 8u + shift;
  atomicAnd(word, ~(0xfu << s));
  atomicOr(word, nib << s);
#else
  __atomic_fetch_and(byte, static_cast<unsigned char>(~(0xfu << shift)), __ATOMIC_RELAXED);
  __atomic_fetch_or(byte, static_cast<unsigned char>(nib << shift), __ATOMIC_RELAXED);
#endif
}

}  // namespace tl
