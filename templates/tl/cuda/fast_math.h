// SPDX-License-Identifier: Apache-2.0
/// \file T.__exp, T.__log, ... (CUDA's hardware approximations __expf, __logf, ...: a few
/// ulp off, much faster; float only, the front end widens 16-bit operands) and the spellings
/// upstream TileLang's generated code uses for some math: fabs for a float's absolute value,
/// RoundTiesAwayFromZero for C's round, htan for a 16-bit tan. The printer uses these names
/// (CPrinter::PrintedMathName) so that tools which search generated source for them find them.
#pragma once

namespace tl {

#define TL_CUDA_FAST_UNARY(name, fast, precise)                   \
  /** The approximation (the SFU instruction sequence). */        \
  TL_DEVICE float name(float x) { return fast(x); }               \
  /** No double approximation exists: the precise function. */   \
  TL_DEVICE double name(double x) { return precise(x); }

TL_CUDA_FAST_UNARY(__exp, __expf, ::exp)
TL_CUDA_FAST_UNARY(__exp10, __exp10f, ::exp10)
TL_CUDA_FAST_UNARY(__log, __logf, ::log)
TL_CUDA_FAST_UNARY(__log2, __log2f, ::log2)
TL_CUDA_FAST_UNARY(__log10, __log10f, ::log10)
TL_CUDA_FAST_UNARY(__sin, __sinf, ::sin)
TL_CUDA_FAST_UNARY(__cos, __cosf, ::cos)
TL_CUDA_FAST_UNARY(__tan, __tanf, ::tan)
#undef TL_CUDA_FAST_UNARY

/// Absolute value of a float type (tl::abs; upstream's name for it).
template <typename T>
TL_DEVICE T fabs(T x) {
  return abs(x);
}
/// x rounded to an integral value, halfway cases away from zero (C's round: tl::round).
template <typename T>
TL_DEVICE auto RoundTiesAwayFromZero(T x) {
  return round(x);
}
/// tan of a 16-bit float, computed in float.
TL_DEVICE half htan(half x) { return tan(x); }
/// tan of a bfloat16, computed in float.
TL_DEVICE bfloat16 htan(bfloat16 x) { return tan(x); }

}  // namespace tl
