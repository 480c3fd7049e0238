// SPDX-License-Identifier: Apache-2.0
/// \file Element-wise float arithmetic with an explicit IEEE rounding mode (T.ieee_add, ...,
/// T.ieee_fdiv): CUDA's correctly rounded intrinsics (__fadd_rz, __dsqrt_ru, ...). Mode is a
/// compile-time constant of the generated code: 0 rn (to nearest even), 1 rz (toward zero),
/// 2 ru (up), 3 rd (down). 16-bit floats are rn only (the front end refuses the others):
/// they compute in float and round once more, which gives the correctly rounded 16-bit result
/// for + - * / sqrt (float's 24 bits are at least twice theirs plus two).
#pragma once

namespace tl {
namespace detail {

#define TL_IEEE_PICK(f_rn, f_rz, f_ru, f_rd, ...) \
  (mode == 1 ? f_rz(__VA_ARGS__) : mode == 2 ? f_ru(__VA_ARGS__) : mode == 3 ? f_rd(__VA_ARGS__) : f_rn(__VA_ARGS__))

TL_DEVICE float ieee_add(float a, float b, int mode) { return TL_IEEE_PICK(__fadd_rn, __fadd_rz, __fadd_ru, __fadd_rd, a, b); }
TL_DEVICE double ieee_add(double a, double b, int mode) { return TL_IEEE_PICK(__dadd_rn, __dadd_rz, __dadd_ru, __dadd_rd, a, b); }
TL_DEVICE float ieee_sub(float a, float b, int mode) { return TL_IEEE_PICK(__fsub_rn, __fsub_rz, __fsub_ru, __fsub_rd, a, b); }
TL_DEVICE double ieee_sub(double a, double b, int mode) { return TL_IEEE_PICK(__dsub_rn, __dsub_rz, __dsub_ru, __dsub_rd, a, b); }
TL_DEVICE float ieee_mul(float a, float b, int mode) { return TL_IEEE_PICK(__fmul_rn, __fmul_rz, __fmul_ru, __fmul_rd, a, b); }
TL_DEVICE double ieee_mul(double a, double b, int mode) { return TL_IEEE_PICK(__dmul_rn, __dmul_rz, __dmul_ru, __dmul_rd, a, b); }
TL_DEVICE float ieee_fdiv(float a, float b, int mode) { return TL_IEEE_PICK(__fdiv_rn, __fdiv_rz, __fdiv_ru, __fdiv_rd, a, b); }
TL_DEVICE double ieee_fdiv(double a, double b, int mode) { return TL_IEEE_PICK(__ddiv_rn, __ddiv_rz, __ddiv_ru, __ddiv_rd, a, b); }
TL_DEVICE float ieee_fmaf(float a, float b, float c, int mode) {
  return TL_IEEE_PICK(__fmaf_rn, __fmaf_rz, __fmaf_ru, __fmaf_rd, a, b, c);
}
TL_DEVICE double ieee_fmaf(double a, double b, double c, int mode) {
  return TL_IEEE_PICK(__fma_rn, __fma_rz, __fma_ru, __fma_rd, a, b, c);
}
TL_DEVICE float ieee_frcp(float a, int mode) { return TL_IEEE_PICK(__frcp_rn, __frcp_rz, __frcp_ru, __frcp_rd, a); }
TL_DEVICE double ieee_frcp(double a, int mode) { return TL_IEEE_PICK(__drcp_rn, __drcp_rz, __drcp_ru, __drcp_rd, a); }
TL_DEVICE float ieee_fsqrt(float a, int mode) { return TL_IEEE_PICK(__fsqrt_rn, __fsqrt_rz, __fsqrt_ru, __fsqrt_rd, a); }
TL_DEVICE double ieee_fsqrt(double a, int mode) { return TL_IEEE_PICK(__dsqrt_rn, __dsqrt_rz, __dsqrt_ru, __dsqrt_rd, a); }
/// 1 / sqrt(a) rounded to nearest (float only: CUDA has no other).
TL_DEVICE float ieee_frsqrt(float a) { return __frsqrt_rn(a); }

#undef TL_IEEE_PICK

}  // namespace detail

/// The operations on any float type: float and double directly, 16- and 8-bit floats through
/// float (to nearest).
#define TL_IEEE_OP2(name)                                                                    \
  template <typename T>                                                                      \
  TL_DEVICE T name(T a, T b, int mode) {                                                     \
    if constexpr (detail::is_same<T, float>::value || detail::is_same<T, double>::value) {   \
      return detail::name(a, b, mode);                                                       \
    } else {                                                                                 \
      return T(detail::name(static_cast<float>(a), static_cast<float>(b), 0));               \
    }                                                                                        \
  }
TL_IEEE_OP2(ieee_add)
TL_IEEE_OP2(ieee_sub)
TL_IEEE_OP2(ieee_mul)
TL_IEEE_OP2(ieee_fdiv)
#undef TL_IEEE_OP2

#define TL_IEEE_OP1(name)                                                                    \
  template <typename T>                                                                      \
  TL_DEVICE T name(T a, int mode) {                                                          \
    if constexpr (detail::is_same<T, float>::value || detail::is_same<T, double>::value) {   \
      return detail::name(a, mode);                                                          \
    } else {                                                                                 \
      return T(detail::name(static_cast<float>(a), 0));                                      \
    }                                                                                        \
  }
TL_IEEE_OP1(ieee_frcp)
TL_IEEE_OP1(ieee_fsqrt)
#undef TL_IEEE_OP1

template <typename T>
TL_DEVICE T ieee_fmaf(T a, T b, T c, int mode) {
  if constexpr (detail::is_same<T, float>::value || detail::is_same<T, double>::value) {
    return detail::ieee_fmaf(a, b, c, mode);
  } else {
    // a * b is exact in double for 16-bit floats; the sum rounds to double, then to T
    return T(static_cast<float>(static_cast<double>(static_cast<float>(a)) * static_cast<float>(b) +
                                static_cast<float>(c)));
  }
}

/// An approximate 1 / x (rcp.approx.ftz.f32: T.fast_rcp).
TL_DEVICE float fast_rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

template <typename T>
TL_DEVICE T ieee_frsqrt(T a) {
  return T(detail::ieee_frsqrt(static_cast<float>(a)));
}

}  // namespace tl
