// SPDX-License-Identifier: Apache-2.0
/// \file More element-wise math for generated CPU kernels, of two or three operands (T.atan2,
/// T.fma, ...) and integer bit counts (T.popcount, T.clz): the same functions as the CUDA
/// library's math_extra.h, through <cmath>. Included at the end of math.h.
#pragma once

namespace tl {

#define TL_CPU_MORE_BINARY(name, fn)                                                              \
  inline float name(float a, float b) { return std::fn(a, b); }                                   \
  inline double name(double a, double b) { return std::fn(a, b); }                                \
  inline half name(half a, half b) { return half(name(static_cast<float>(a), static_cast<float>(b))); } \
  inline bfloat16 name(bfloat16 a, bfloat16 b) {                                                  \
    return bfloat16(name(static_cast<float>(a), static_cast<float>(b)));                          \
  }                                                                                               \
  template <typename T, detail::enable_if_float8_t<T> = 0>                                        \
  inline T name(T a, T b) { return T(name(static_cast<float>(a), static_cast<float>(b))); }       \
  template <typename T, detail::enable_if_int_t<T> = 0>                                           \
  inline double name(T a, T b) { return name(static_cast<double>(a), static_cast<double>(b)); }

TL_CPU_MORE_BINARY(atan2, atan2)
TL_CPU_MORE_BINARY(hypot, hypot)
TL_CPU_MORE_BINARY(copysign, copysign)
TL_CPU_MORE_BINARY(fmod, fmod)
TL_CPU_MORE_BINARY(nextafter, nextafter)

#undef TL_CPU_MORE_BINARY

/// a * b + c with one rounding.
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
inline double fma(double a, double b, double c) { return std::fma(a, b, c); }
inline half fma(half a, half b, half c) {
  return half(std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
inline bfloat16 fma(bfloat16 a, bfloat16 b, bfloat16 c) {
  return bfloat16(std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}
template <typename T, detail::enable_if_float8_t<T> = 0>
inline T fma(T a, T b, T c) {
  return T(std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c)));
}

/// a * b rounded to nearest, never fused with a later add into an fma (T.fmul), also where
/// the kernel is compiled with -ffp-contract=fast (compile_flags=["--use_fast_math"]): the
/// product passes through an empty asm the compiler cannot see into.
namespace detail {
template <typename F>
inline F unfused(F v) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__("" : "+x"(v));
#elif defined(__aarch64__)
  __asm__("" : "+w"(v));
#else
  volatile F kept = v;
  v = kept;
#endif
  return v;
}
}  // namespace detail
inline float fmul(float a, float b) { return detail::unfused(a * b); }
inline double fmul(double a, double b) { return detail::unfused(a * b); }
inline half fmul(half a, half b) { return half(static_cast<float>(a) * static_cast<float>(b)); }  // exact in float
inline bfloat16 fmul(bfloat16 a, bfloat16 b) { return bfloat16(static_cast<float>(a) * static_cast<float>(b)); }
template <typename T, detail::enable_if_float8_t<T> = 0>
inline T fmul(T a, T b) {
  return T(static_cast<float>(a) * static_cast<float>(b));
}

/// x * 2^e (T.ldexp): exact unless it overflows or becomes subnormal; 8- and 16-bit floats
/// through float.
inline float ldexp(float x, int e) { return std::ldexp(x, e); }
inline double ldexp(double x, int e) { return std::ldexp(x, e); }
template <typename T>
inline T ldexp(T x, int e) {
  return T(std::ldexp(static_cast<float>(x), e));
}
/// Whether a pointer is null (T.isnullptr).
inline bool isnullptr(const void* p) { return p == nullptr; }

/// The number of set bits (T.popcount) and of leading zero bits (T.clz; the width for 0) of an
/// integer, as int32.
template <typename T, detail::enable_if_int_t<T> = 0>
inline int popcount(T x) {
  using U = typename std::make_unsigned<T>::type;
  return __builtin_popcountll(static_cast<unsigned long long>(static_cast<U>(x)));
}
template <typename T, detail::enable_if_int_t<T> = 0>
inline int clz(T x) {
  using U = typename std::make_unsigned<T>::type;
  const unsigned long long v = static_cast<U>(x);
  const int width = static_cast<int>(8 * sizeof(T));
  return v == 0 ? width : __builtin_clzll(v) - (64 - width);
}

}  // namespace tl
