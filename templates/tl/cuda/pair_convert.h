// SPDX-License-Identifier: Apache-2.0
/// \file Conversions of two elements at a time: one packed instruction where the hardware has
/// one (cvt.rn.f16x2.f32, cvt.rn.satfinite.e4m3x2.f32, cvt.rn.f16x2.e4m3x2, ...), where
/// converting element by element would issue one per element (an 8-bit float conversion of a
/// single float pairs it with a zero and throws half the result away).
///
/// Every helper has the form `NAME(D* dst, S lo, S hi)`: dst[0] = D(lo), dst[1] = D(hi), with
/// exactly the element conversion's result (round to nearest even, 8-bit floats saturating).
/// Generated code calls them for a pair of consecutive elements (tl.convert_pair, from the
/// pass cuda-pair-conversions) and through tl::cast_copy<N, NAME>. The names are those of
/// the CUDA intrinsics (and upstream TileLang's helpers) with the same meaning, so that code
/// which looks for them in a kernel's source (upstream's tests do) finds them; they live in
/// namespace tl and take this library's types, so they never clash with cuda_fp16.h's.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

// --- float <-> 16-bit floats ---------------------------------------------------

/// Two floats to halves (cvt.rn.f16x2.f32 on sm_80+). dst: two consecutive halves starting
/// on a 4-byte boundary (cuda-pair-conversions pairs only into register arrays of an even
/// element count, declared 4-byte aligned or more; tl::cast_copy's array is 16-byte
/// aligned), written as one 32-bit store. Two 16-bit stores made nvcc split the packed pair
/// and put it back together (a shift and a byte permute per pair) before each 32-bit global
/// store of a GEMM's epilogue.
TL_DEVICE void __float22half2_rn(half* dst, float lo, float hi) {
  *reinterpret_cast<uint32_t*>(dst) = float2_to_half2(lo, hi);
}
/// Two floats to bfloat16 (cvt.rn.bf16x2.f32 on sm_80+), stored as __float22half2_rn's.
TL_DEVICE void __float22bfloat162_rn(bfloat16* dst, float lo, float hi) {
  *reinterpret_cast<uint32_t*>(dst) = float2_to_bfloat162(lo, hi);
}
/// Two halves to floats (exact).
TL_DEVICE void __half22float2(float* dst, half lo, half hi) {
  dst[0] = static_cast<float>(lo);
  dst[1] = static_cast<float>(hi);
}
/// Two bfloat16 to floats (exact: the bits moved up).
TL_DEVICE void __bfloat1622float2(float* dst, bfloat16 lo, bfloat16 hi) {
  dst[0] = static_cast<float>(lo);
  dst[1] = static_cast<float>(hi);
}

// --- 8-bit floats -----------------------------------------------------------------
// With TL_F8_HW (float8.h: sm_89+ and the hardware conversions enabled) one cvt per pair;
// otherwise the element conversions, which give the same bits.

namespace detail {
/// A pair of 8-bit codes in one 16-bit register: lo in bits 0..7.
template <typename F8>
TL_DEVICE unsigned short pack_f8x2(F8 lo, F8 hi) {
  return static_cast<unsigned short>(lo.bits | (static_cast<unsigned short>(hi.bits) << 8));
}
/// dst: two consecutive 8-bit floats starting on an even byte (the pair conversions write
/// register pairs that start on an even element of an aligned array: cuda-pair-conversions),
/// written as one 16-bit store. Two byte stores made nvcc split the pair and put it back
/// together (a shift, a mask and a byte permute per pair) before a 16-bit global store.
template <typename F8>
TL_DEVICE void unpack_f8x2(F8* dst, unsigned short pair) {
  static_assert(sizeof(F8) == 1, "unpack_f8x2: 8-bit floats");
  *reinterpret_cast<unsigned short*>(dst) = pair;
}
/// Two 8-bit floats widened to a packed half pair (lo in bits 0..15), exactly.
template <typename F8>
TL_DEVICE uint32_t f8x2_to_half2_bits(F8 lo, F8 hi) {
#ifdef TL_F8_HW
  uint32_t h2;
  const unsigned short in = pack_f8x2(lo, hi);
  if constexpr (F8::format::mant == 3) {
    asm("{cvt.rn.f16x2.e4m3x2 %0, %1;}" : "=r"(h2) : "h"(in));
  } else {
    asm("{cvt.rn.f16x2.e5m2x2 %0, %1;}" : "=r"(h2) : "h"(in));
  }
  return h2;
#else
  return pack_half2(half(static_cast<float>(lo)), half(static_cast<float>(hi)));
#endif
}
}  // namespace detail

/// Two floats to 8-bit floats D (float8_e4m3 or float8_e5m2), saturating.
template <typename D>
TL_DEVICE void __nv_cvt_float2_to_fp8x2(D* dst, float lo, float hi) {
#ifdef TL_F8_HW
  unsigned short pair;
  // The first source lands in the upper byte.
  if constexpr (D::format::mant == 3) {
    asm("{cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;}" : "=h"(pair) : "f"(hi), "f"(lo));
  } else {
    asm("{cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;}" : "=h"(pair) : "f"(hi), "f"(lo));
  }
  detail::unpack_f8x2(dst, pair);
#else
  dst[0] = D(lo);
  dst[1] = D(hi);
#endif
}
/// Two halves to 8-bit floats D, saturating (rounding a half directly gives the same result as
/// through float, where it is exact).
template <typename D>
TL_DEVICE void __tl_cvt_half2_to_fp8x2(D* dst, half lo, half hi) {
#ifdef TL_F8_HW
  unsigned short pair;
  const uint32_t in = pack_half2(lo, hi);
  if constexpr (D::format::mant == 3) {
    asm("{cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;}" : "=h"(pair) : "r"(in));
  } else {
    asm("{cvt.rn.satfinite.e5m2x2.f16x2 %0, %1;}" : "=h"(pair) : "r"(in));
  }
  detail::unpack_f8x2(dst, pair);
#else
  dst[0] = D(lo);
  dst[1] = D(hi);
#endif
}
/// Two 8-bit floats to floats (exact).
template <typename S>
TL_DEVICE void __tl_cvt_fp8x2_to_float2(float* dst, S lo, S hi) {
  const uint32_t h2 = detail::f8x2_to_half2_bits(lo, hi);
  dst[0] = static_cast<float>(half2_lo(h2));
  dst[1] = static_cast<float>(half2_hi(h2));
}
/// Two 8-bit floats to halves (exact).
template <typename S>
TL_DEVICE void __tl_cvt_fp8x2_to_half2(half* dst, S lo, S hi) {
  const uint32_t h2 = detail::f8x2_to_half2_bits(lo, hi);
  dst[0] = half2_lo(h2);
  dst[1] = half2_hi(h2);
}

// --- 8-bit exponents (float8_e8m0fnu) -------------------------------------------------
// No packed instruction before sm_100: the element conversions, two at a time, so that every
// vectorized conversion goes through one kind of call.

/// Two floats to 8-bit exponents.
TL_DEVICE void __tl_cvt_float2_to_e8m0x2(float8_e8m0* dst, float lo, float hi) {
  dst[0] = float8_e8m0(lo);
  dst[1] = float8_e8m0(hi);
}
/// Two doubles to 8-bit exponents.
TL_DEVICE void __tl_cvt_double2_to_e8m0x2(float8_e8m0* dst, double lo, double hi) {
  dst[0] = float8_e8m0(lo);
  dst[1] = float8_e8m0(hi);
}
/// Two bfloat16 to 8-bit exponents.
TL_DEVICE void __tl_cvt_bfloat162_to_e8m0x2(float8_e8m0* dst, bfloat16 lo, bfloat16 hi) {
  dst[0] = float8_e8m0(lo);
  dst[1] = float8_e8m0(hi);
}
/// Two 8-bit exponents to bfloat16 (exact: powers of two within bfloat16's range).
TL_DEVICE void __tl_cvt_e8m0x2_to_bfloat162(bfloat16* dst, float8_e8m0 lo, float8_e8m0 hi) {
  dst[0] = bfloat16(static_cast<float>(lo));
  dst[1] = bfloat16(static_cast<float>(hi));
}

}  // namespace tl
