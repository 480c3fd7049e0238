// SPDX-License-Identifier: Apache-2.0
/// \file Element-wise float arithmetic with an explicit IEEE rounding mode (T.ieee_add, ...,
/// T.ieee_fdiv) for generated CPU kernels: the operation runs under the floating-point
/// environment's rounding mode (<cfenv>) and the default mode is restored after it. Mode: 0
/// rn, 1 rz, 2 ru, 3 rd (as the CUDA library's ieee_math.h). The operands pass through
/// volatile objects so that the compiler neither folds nor moves the operation out from
/// between the two mode switches. 16-bit floats are rn only (the front end refuses the
/// others) and compute in float, rounded once more (exact for + - * / sqrt, see the CUDA file).
#pragma once

#include <cfenv>
#include <cmath>

namespace tl {
namespace detail {

inline int ieee_fe_mode(int mode) {
  switch (mode) {
    case 1: return FE_TOWARDZERO;
    case 2: return FE_UPWARD;
    case 3: return FE_DOWNWARD;
    default: return FE_TONEAREST;
  }
}

/// f() evaluated under `mode`; f reads its operands from volatile objects.
template <typename R, typename F>
inline R ieee_rounded(int mode, F f) {
  const int saved = std::fegetround();
  std::fesetround(ieee_fe_mode(mode));
  volatile R r = f();
  std::fesetround(saved);
  return r;
}

template <typename T>
using ieee_native = std::integral_constant<bool, std::is_same<T, float>::value || std::is_same<T, double>::value>;

}  // namespace detail

#define TL_CPU_IEEE_OP2(name, expr)                                                        \
  template <typename T>                                                                    \
  inline T name(T a, T b, int mode) {                                                      \
    if constexpr (detail::ieee_native<T>::value) {                                         \
      volatile T x = a, y = b;                                                             \
      return detail::ieee_rounded<T>(mode, [&]() -> T { return expr; });                   \
    } else {                                                                               \
      return T(name(static_cast<float>(a), static_cast<float>(b), 0));                     \
    }                                                                                      \
  }
TL_CPU_IEEE_OP2(ieee_add, x + y)
TL_CPU_IEEE_OP2(ieee_sub, x - y)
TL_CPU_IEEE_OP2(ieee_mul, x * y)
TL_CPU_IEEE_OP2(ieee_fdiv, x / y)
#undef TL_CPU_IEEE_OP2

template <typename T>
inline T ieee_frcp(T a, int mode) {
  if constexpr (detail::ieee_native<T>::value) {
    volatile T x = a;
    return detail::ieee_rounded<T>(mode, [&]() -> T { return T(1) / x; });
  } else {
    return T(ieee_frcp(static_cast<float>(a), 0));
  }
}

template <typename T>
inline T ieee_fsqrt(T a, int mode) {
  if constexpr (detail::ieee_native<T>::value) {
    volatile T x = a;
    return detail::ieee_rounded<T>(mode, [&]() -> T { return std::sqrt(static_cast<T>(x)); });
  } else {
    return T(ieee_fsqrt(static_cast<float>(a), 0));
  }
}

template <typename T>
inline T ieee_fmaf(T a, T b, T c, int mode) {
  if constexpr (detail::ieee_native<T>::value) {
    volatile T x = a, y = b, z = c;
    return detail::ieee_rounded<T>(mode, [&]() -> T { return std::fma(static_cast<T>(x), static_cast<T>(y), static_cast<T>(z)); });
  } else {
    return T(static_cast<float>(std::fma(static_cast<double>(static_cast<float>(a)), static_cast<double>(static_cast<float>(b)),
                                         static_cast<double>(static_cast<float>(c)))));
  }
}

/// T.fast_rcp: the CPU divides (CUDA's is an approximation within about 1 ulp of this).
inline float fast_rcp(float x) { return 1.0f / x; }

/// 1 / sqrt(a) to nearest: in long double, then rounded to float (an error of about 2^-63
/// before the last rounding, so a wrong rounding needs a result within that of a tie).
template <typename T>
inline T ieee_frsqrt(T a) {
  const long double x = static_cast<long double>(static_cast<float>(a));
  return T(static_cast<float>(1.0L / std::sqrt(x)));
}

}  // namespace tl
