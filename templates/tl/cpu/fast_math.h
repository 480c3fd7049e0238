// SPDX-License-Identifier: Apache-2.0
/// \file T.__exp, T.__log, ... on the CPU: the precise functions (CUDA's are approximations
/// within a few ulp of these), and upstream TileLang's spellings of some math, as the CUDA
/// file: fabs, RoundTiesAwayFromZero, htan (CPrinter::PrintedMathName).
#pragma once

#include <cmath>

namespace tl {

#define TL_CPU_FAST_UNARY(name, precise)                        \
  /** The precise function of a float. */                       \
  inline float name(float x) { return precise(x); }             \
  /** The precise function of a double. */                      \
  inline double name(double x) { return precise(x); }

TL_CPU_FAST_UNARY(__exp, std::exp)
TL_CPU_FAST_UNARY(__log, std::log)
TL_CPU_FAST_UNARY(__log2, std::log2)
TL_CPU_FAST_UNARY(__log10, std::log10)
TL_CPU_FAST_UNARY(__sin, std::sin)
TL_CPU_FAST_UNARY(__cos, std::cos)
TL_CPU_FAST_UNARY(__tan, std::tan)
#undef TL_CPU_FAST_UNARY
/// 10 to the x (float).
inline float __exp10(float x) { return std::pow(10.0f, x); }
/// 10 to the x (double).
inline double __exp10(double x) { return std::pow(10.0, x); }

/// Absolute value of a float type (tl::abs; upstream's name for it).
template <typename T>
inline T fabs(T x) {
  return abs(x);
}
/// x rounded to an integral value, halfway cases away from zero (C's round: tl::round).
template <typename T>
inline auto RoundTiesAwayFromZero(T x) {
  return round(x);
}
/// tan of a 16-bit float, computed in float.
inline half htan(half x) { return tan(x); }
/// tan of a bfloat16, computed in float.
inline bfloat16 htan(bfloat16 x) { return tan(x); }

}  // namespace tl
