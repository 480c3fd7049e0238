// SPDX-License-Identifier: Apache-2.0
/// \file More element-wise math for generated CUDA kernels, of two or three operands (T.atan2,
/// T.fma, ...) and integer bit counts (T.popcount, T.clz), in the style of math.h (whose unary
/// macro has the one-operand functions, T.sinh and the rest): float and double map to the CUDA
/// math library, 16- and 8-bit floats compute in float, integers in double. Included at the end
/// of math.h.
#pragma once

namespace tl {

// Two operands of one type (MakeMath gives both the common type).
#define TL_CUDA_MORE_BINARY(name, fexpr, dexpr)                                                        \
  TL_DEVICE float name(float a, float b) { return fexpr; }                                             \
  TL_DEVICE double name(double a, double b) { return dexpr; }                                          \
  TL_DEVICE half name(half a, half b) { return half(name(static_cast<float>(a), static_cast<float>(b))); } \
  TL_DEVICE bfloat16 name(bfloat16 a, bfloat16 b) {                                                    \
    return bfloat16(name(static_cast<float>(a), static_cast<float>(b)));                               \
  }                                                                                                    \
  template <typename T, detail::enable_if_float8_t<T> = 0>                                             \
  TL_DEVICE T name(T a, T b) {                                                                         \
    return T(name(static_cast<float>(a), static_cast<float>(b)));                                      \
  }                                                                                                    \
  template <typename T, detail::enable_if_int_t<T> = 0>                                                \
  TL_DEVICE double name(T a, T b) {                                                                    \
    return name(static_cast<double>(a), static_cast<double>(b));                                       \
  }

TL_CUDA_MORE_BINARY(atan2, atan2f(a, b), ::atan2(a, b))
TL_CUDA_MORE_BINARY(hypot, hypotf(a, b), ::hypot(a, b))
TL_CUDA_MORE_BINARY(copysign, copysignf(a, b), ::copysign(a, b))
TL_CUDA_MORE_BINARY(fmod, fmodf(a, b), ::fmod(a, b))
TL_CUDA_MORE_BINARY(nextafter, nextafterf(a, b), ::nextafter(a, b))

#undef TL_CUDA_MORE_BINARY

/// a * b + c with one rounding.
TL_DEVICE float fma(float a, float b, float c) { return fmaf(a, b, c); }
TL_DEVICE double fma(double a, double b, double c) { return ::fma(a, b, c); }
TL_DEVICE half fma(half a, half b, half c) {
  return half(fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
TL_DEVICE bfloat16 fma(bfloat16 a, bfloat16 b, bfloat16 c) {
  return bfloat16(fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
template <typename T, detail::enable_if_float8_t<T> = 0>
TL_DEVICE T fma(T a, T b, T c) {
  return T(fmaf(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}

/// a * b rounded to nearest, never fused with a later add into an fma (T.fmul): explicit
/// round-to-nearest multiplies (__fmul_rn, mul.rn.f16 / .bf16) are not contracted.
TL_DEVICE float fmul(float a, float b) { return __fmul_rn(a, b); }
TL_DEVICE double fmul(double a, double b) { return __dmul_rn(a, b); }
TL_DEVICE half fmul(half a, half b) { return hmul(a, b); }
TL_DEVICE bfloat16 fmul(bfloat16 a, bfloat16 b) { return hmul(a, b); }
template <typename T, detail::enable_if_float8_t<T> = 0>
TL_DEVICE T fmul(T a, T b) {
  return T(__fmul_rn(static_cast<float>(a), static_cast<float>(b)));
}

/// x * 2^e (T.ldexp): exact unless it overflows or becomes subnormal; 8- and 16-bit floats
/// through float.
TL_DEVICE float ldexp(float x, int e) { return ::ldexpf(x, e); }
TL_DEVICE double ldexp(double x, int e) { return ::ldexp(x, e); }
template <typename T>
TL_DEVICE T ldexp(T x, int e) {
  return T(::ldexpf(static_cast<float>(x), e));
}
/// Whether a pointer is null (T.isnullptr).
TL_DEVICE bool isnullptr(const void* p) { return p == nullptr; }

/// The number of set bits (T.popcount) and of leading zero bits (T.clz; the width for 0) of an
/// integer, as int32.
namespace detail {
/// The bits of a 8-, 16- or 32-bit integer, zero-extended to 32.
template <typename T>
TL_DEVICE unsigned low_bits(T x) {
  return static_cast<unsigned>(x) & (sizeof(T) == 4 ? 0xffffffffu : (1u << (8 * sizeof(T))) - 1u);
}
}  // namespace detail
template <typename T, detail::enable_if_int_t<T> = 0>
TL_DEVICE int popcount(T x) {
  return sizeof(T) == 8 ? __popcll(static_cast<unsigned long long>(x)) : __popc(detail::low_bits(x));
}
template <typename T, detail::enable_if_int_t<T> = 0>
TL_DEVICE int clz(T x) {
  if (sizeof(T) == 8) return __clzll(static_cast<long long>(x));
  return __clz(static_cast<int>(detail::low_bits(x))) - static_cast<int>(32 - 8 * sizeof(T));
}

}  // namespace tl
