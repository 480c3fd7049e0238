// SPDX-License-Identifier: Apache-2.0
/// \file 16-bit floating-point storage types for generated CUDA kernels.
///
/// `tl::half` (IEEE binary16) and `tl::bfloat16` hold the exact bit pattern
/// numpy / ml_dtypes use, like the CPU library's types of the same names, and
/// all arithmetic happens in float: the implicit `operator float()` lets the
/// built-in float operators apply (so `a + b` is a float), which keeps mixed
/// expressions such as `h + 1.0f` free of overload ambiguity. Only compound
/// assignments are members. (Codegen emits tl::hadd / hsub / hmul, below, for
/// 16-bit + - * : the same rounding, in one native instruction with TL_NATIVE_HALF_ARITH.) They do not use <cuda_fp16.h> (NVRTC has no
/// include path to it); conversions are single PTX cvt instructions.
///
/// Rounding matches the CPU library bit for bit: float rounds to nearest even
/// directly; every other source type is first narrowed to float rounding to
/// odd, which makes the final round-to-nearest equal to rounding the exact
/// value once (no double-rounding error for doubles or wide integers).
///
/// Also here: small type traits shared by the other parts (no <type_traits>
/// under NVRTC) and helpers packing two 16-bit values into the 32-bit
/// registers that mma / ldmatrix fragments use.
#pragma once

#ifndef TL_CUDA_H_INCLUDED
#error "include tl_cuda.h, not its parts"
#endif

namespace tl {

namespace detail {

// --- Minimal type traits (what <type_traits> would give) -------------------

template <bool B, typename T = void>
struct enable_if {};
template <typename T>
struct enable_if<true, T> {
  using type = T;
};
template <bool B, typename T = void>
using enable_if_t = typename enable_if<B, T>::type;

template <typename A, typename B>
struct is_same {
  static constexpr bool value = false;
};
template <typename A>
struct is_same<A, A> {
  static constexpr bool value = true;
};

/// std::conditional.
template <bool B, typename T, typename F>
struct conditional {
  using type = T;
};
template <typename T, typename F>
struct conditional<false, T, F> {
  using type = F;
};

template <typename T>
struct is_integral {
  static constexpr bool value = false;
};
#define TL_CUDA_INTEGRAL(T)             \
  template <>                           \
  struct is_integral<T> {               \
    static constexpr bool value = true; \
  };
TL_CUDA_INTEGRAL(bool)
TL_CUDA_INTEGRAL(char)
TL_CUDA_INTEGRAL(signed char)
TL_CUDA_INTEGRAL(unsigned char)
TL_CUDA_INTEGRAL(short)
TL_CUDA_INTEGRAL(unsigned short)
TL_CUDA_INTEGRAL(int)
TL_CUDA_INTEGRAL(unsigned int)
TL_CUDA_INTEGRAL(long)
TL_CUDA_INTEGRAL(unsigned long)
TL_CUDA_INTEGRAL(long long)
TL_CUDA_INTEGRAL(unsigned long long)
#undef TL_CUDA_INTEGRAL

template <typename T>
struct is_floating_point {
  static constexpr bool value = is_same<T, float>::value || is_same<T, double>::value;
};

template <typename T>
struct is_arithmetic {
  static constexpr bool value = is_integral<T>::value || is_floating_point<T>::value;
};

/// True for signed integer types (false for bool and unsigned types).
template <typename T>
struct is_signed_int {
  static constexpr bool value = is_integral<T>::value && !is_same<T, bool>::value && T(-1) < T(0);
};

template <typename T>
using enable_if_arith_t = enable_if_t<is_arithmetic<T>::value, int>;
template <typename T>
using enable_if_int_t = enable_if_t<is_integral<T>::value, int>;

/// Declared only, for unevaluated contexts (std::declval).
template <typename T>
__host__ __device__ T declval_() noexcept;

// --- Conversions -----------------------------------------------------------

/// Bit pattern of a float, and the float of a bit pattern (float8.h's names).
TL_DEVICE unsigned int float_bits(float f) { return __float_as_uint(f); }
TL_DEVICE float bits_float(unsigned int u) { return __uint_as_float(u); }

/// True for the 8-bit float types (specialised in float8.h).
template <typename T>
struct is_float8 {
  static constexpr bool value = false;
};

/// Float with the lowest mantissa bit forced to 1 (the "sticky" bit of round-to-odd).
TL_DEVICE float set_lsb(float f) { return __uint_as_float(__float_as_uint(f) | 1u); }

// Narrowing to float with round-to-odd: truncate (rz), then force the last bit
// to 1 when inexact. A later round-to-nearest to a format with at most 22
// mantissa bits (half: 10, bfloat16: 7) then equals rounding the exact value.
// Integer overloads check exactness by converting back, which cannot
// overflow: |rz(x)| <= |x|.

/// float is already float.
TL_DEVICE float to_float_round_odd(float x) { return x; }
/// double -> float, round to odd (NaN and infinities pass through).
TL_DEVICE float to_float_round_odd(double x) {
  const float f = __double2float_rz(x);
  return (x != x || static_cast<double>(f) == x) ? f : set_lsb(f);
}
/// int -> float, round to odd.
TL_DEVICE float to_float_round_odd(int x) {
  const float f = __int2float_rz(x);
  return static_cast<int>(f) == x ? f : set_lsb(f);
}
/// unsigned int -> float, round to odd.
TL_DEVICE float to_float_round_odd(unsigned int x) {
  const float f = __uint2float_rz(x);
  return static_cast<unsigned int>(f) == x ? f : set_lsb(f);
}
/// long long -> float, round to odd.
TL_DEVICE float to_float_round_odd(long long x) {
  const float f = __ll2float_rz(x);
  return static_cast<long long>(f) == x ? f : set_lsb(f);
}
/// unsigned long long -> float, round to odd.
TL_DEVICE float to_float_round_odd(unsigned long long x) {
  const float f = __ull2float_rz(x);
  return static_cast<unsigned long long>(f) == x ? f : set_lsb(f);
}
/// long -> float, round to odd (through the 64-bit overload).
TL_DEVICE float to_float_round_odd(long x) { return to_float_round_odd(static_cast<long long>(x)); }
/// unsigned long -> float, round to odd.
TL_DEVICE float to_float_round_odd(unsigned long x) { return to_float_round_odd(static_cast<unsigned long long>(x)); }
/// Integers narrower than int (and bool) are exact in float.
template <typename T, enable_if_t<is_integral<T>::value && (sizeof(T) < sizeof(int)), int> = 0>
TL_DEVICE float to_float_round_odd(T x) {
  return static_cast<float>(x);
}

/// float -> binary16 bits, round to nearest even (subnormals kept, NaN stays NaN).
TL_DEVICE unsigned short float_to_half_bits(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

/// binary16 bits -> float (exact).
TL_DEVICE float half_bits_to_float(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

/// float -> bfloat16 bits, round to nearest even; NaN stays NaN (quietened).
TL_DEVICE unsigned short float_to_bfloat16_bits(float f) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  unsigned short b;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(b) : "f"(f));
  return b;
#else
  // No bf16 cvt before sm_80: adding 0x7fff plus the kept lsb rounds ties to
  // even, and a carry out of the largest finite value correctly gives Inf.
  const unsigned int x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<unsigned short>((x >> 16) | 0x40u);
  return static_cast<unsigned short>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
#endif
}

/// bfloat16 bits -> float (exact: bfloat16 is the top half of a float).
TL_DEVICE float bfloat16_bits_to_float(unsigned short b) { return __uint_as_float(static_cast<unsigned int>(b) << 16); }

}  // namespace detail

/// Tag selecting the raw-bits constructors of `half` and `bfloat16`.
struct from_bits_t {};

struct bfloat16;

/// IEEE 754 binary16, stored exactly as numpy's float16. Arithmetic promotes to float.
struct half {
  /// Raw IEEE binary16 bit pattern.
  unsigned short bits;

  /// Uninitialised, like a built-in scalar (keeps the type trivial, so it can
  /// live in __shared__ arrays and be copied with memcpy / vector loads).
  half() = default;
  /// Rounds any arithmetic value to the nearest half (ties to even).
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_DEVICE half(T v) : bits(detail::float_to_half_bits(detail::to_float_round_odd(v))) {}
  /// Rounds a bfloat16 value to the nearest half.
  TL_DEVICE half(bfloat16 v);
  /// Rounds an 8-bit float (exact in float first).
  template <typename T, detail::enable_if_t<detail::is_float8<T>::value, int> = 0>
  TL_DEVICE half(T v) : bits(detail::float_to_half_bits(static_cast<float>(v))) {}
  /// Wraps a raw bit pattern (usable on the host too).
  __host__ __device__ constexpr half(unsigned short raw, from_bits_t) : bits(raw) {}

  /// Exact widening to float; every arithmetic operator goes through this.
  TL_DEVICE operator float() const { return detail::half_bits_to_float(bits); }

  /// Compound assignments compute in float (or wider) and round once.
  template <typename T>
  TL_DEVICE half& operator+=(const T& o) {
    return *this = half(static_cast<float>(*this) + o);
  }
  /// See operator+=.
  template <typename T>
  TL_DEVICE half& operator-=(const T& o) {
    return *this = half(static_cast<float>(*this) - o);
  }
  /// See operator+=.
  template <typename T>
  TL_DEVICE half& operator*=(const T& o) {
    return *this = half(static_cast<float>(*this) * o);
  }
  /// See operator+=.
  template <typename T>
  TL_DEVICE half& operator/=(const T& o) {
    return *this = half(static_cast<float>(*this) / o);
  }
  /// Pre-increment by one, rounded.
  TL_DEVICE half& operator++() { return *this += 1.0f; }
  /// Pre-decrement by one, rounded.
  TL_DEVICE half& operator--() { return *this -= 1.0f; }
  /// Post-increment by one, rounded.
  TL_DEVICE half operator++(int) {
    half old = *this;
    *this += 1.0f;
    return old;
  }
  /// Post-decrement by one, rounded.
  TL_DEVICE half operator--(int) {
    half old = *this;
    *this -= 1.0f;
    return old;
  }
};

/// bfloat16 (the top half of a float), stored exactly as ml_dtypes does. Arithmetic promotes to float.
struct bfloat16 {
  /// Raw bfloat16 bit pattern (upper 16 bits of the float).
  unsigned short bits;

  /// Uninitialised, like a built-in scalar (keeps the type trivial).
  bfloat16() = default;
  /// Rounds any arithmetic value to the nearest bfloat16 (ties to even).
  template <typename T, detail::enable_if_arith_t<T> = 0>
  TL_DEVICE bfloat16(T v) : bits(detail::float_to_bfloat16_bits(detail::to_float_round_odd(v))) {}
  /// Rounds a half value to the nearest bfloat16.
  TL_DEVICE bfloat16(half v) : bits(detail::float_to_bfloat16_bits(static_cast<float>(v))) {}
  /// Rounds an 8-bit float (exact in float first).
  template <typename T, detail::enable_if_t<detail::is_float8<T>::value, int> = 0>
  TL_DEVICE bfloat16(T v) : bits(detail::float_to_bfloat16_bits(static_cast<float>(v))) {}
  /// Wraps a raw bit pattern (usable on the host too).
  __host__ __device__ constexpr bfloat16(unsigned short raw, from_bits_t) : bits(raw) {}

  /// Exact widening to float; every arithmetic operator goes through this.
  TL_DEVICE operator float() const { return detail::bfloat16_bits_to_float(bits); }

  /// Compound assignments compute in float (or wider) and round once.
  template <typename T>
  TL_DEVICE bfloat16& operator+=(const T& o) {
    return *this = bfloat16(static_cast<float>(*this) + o);
  }
  /// See operator+=.
  template <typename T>
  TL_DEVICE bfloat16& operator-=(const T& o) {
    return *this = bfloat16(static_cast<float>(*this) - o);
  }
  /// See operator+=.
  template <typename T>
  TL_DEVICE bfloat16& operator*=(const T& o) {
    return *this = bfloat16(static_cast<float>(*this) * o);
  }
  /// See operator+=.
  template <typename T>
  TL_DEVICE bfloat16& operator/=(const T& o) {
    return *this = bfloat16(static_cast<float>(*this) / o);
  }
  /// Pre-increment by one, rounded.
  TL_DEVICE bfloat16& operator++() { return *this += 1.0f; }
  /// Pre-decrement by one, rounded.
  TL_DEVICE bfloat16& operator--() { return *this -= 1.0f; }
  /// Post-increment by one, rounded.
  TL_DEVICE bfloat16 operator++(int) {
    bfloat16 old = *this;
    *this += 1.0f;
    return old;
  }
  /// Post-decrement by one, rounded.
  TL_DEVICE bfloat16 operator--(int) {
    bfloat16 old = *this;
    *this -= 1.0f;
    return old;
  }
};

TL_DEVICE half::half(bfloat16 v) : bits(detail::float_to_half_bits(static_cast<float>(v))) {}

/// A half with the given raw bit pattern.
__host__ __device__ constexpr half half_from_bits(unsigned short raw) { return half(raw, from_bits_t{}); }
/// A bfloat16 with the given raw bit pattern.
__host__ __device__ constexpr bfloat16 bfloat16_from_bits(unsigned short raw) { return bfloat16(raw, from_bits_t{}); }

static_assert(sizeof(half) == 2 && alignof(half) == 2, "half must match binary16 layout");
static_assert(sizeof(bfloat16) == 2 && alignof(bfloat16) == 2, "bfloat16 must match ml_dtypes layout");
static_assert(__is_trivially_copyable(half) && __is_trivially_copyable(bfloat16),
              "16-bit floats must be trivially copyable");

namespace detail {
/// What float8.h narrows other arithmetic types with.
template <typename T>
TL_DEVICE float narrow_to_float(T v) {
  return to_float_round_odd(v);
}
}  // namespace detail

}  // namespace tl

#define TL_F8_FN TL_DEVICE
#include "tl/float8.h"
#include "tl/subbyte.h"
#include "tl/stochastic_round.h"
#undef TL_F8_FN

namespace tl {

static_assert(sizeof(float8_e4m3) == 1 && sizeof(float8_e5m2) == 1, "8-bit floats must be one byte");

// --- Pairs of 16-bit values in one 32-bit register -------------------------
// mma.sync and ldmatrix fragments hold two 16-bit elements per register: the
// element with the lower column (or row) index in bits 0..15.

/// Packs two halves into one register: lo in bits 0..15, hi in bits 16..31.
TL_DEVICE uint32_t pack_half2(half lo, half hi) {
  return static_cast<uint32_t>(lo.bits) | (static_cast<uint32_t>(hi.bits) << 16);
}
/// Packs two bfloat16 values into one register: lo in bits 0..15, hi in bits 16..31.
TL_DEVICE uint32_t pack_bfloat162(bfloat16 lo, bfloat16 hi) {
  return static_cast<uint32_t>(lo.bits) | (static_cast<uint32_t>(hi.bits) << 16);
}

/// Rounds two floats to halves and packs them (lo in bits 0..15), in one
/// instruction on sm_80+ (e.g. to store an f32 mma accumulator pair as f16).
TL_DEVICE uint32_t float2_to_half2(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  // cvt.f16x2 puts its first source in the upper half.
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return pack_half2(half(lo), half(hi));
#endif
}
/// Rounds two floats to bfloat16 and packs them (lo in bits 0..15).
TL_DEVICE uint32_t float2_to_bfloat162(float lo, float hi) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  uint32_t r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
#else
  return pack_bfloat162(bfloat16(lo), bfloat16(hi));
#endif
}

/// Rounds two floats to T (half or bfloat16) and packs them (lo in bits 0..15);
/// lets templated code pick the conversion by element type.
template <typename T>
TL_DEVICE uint32_t pack_float2(float lo, float hi) {
  static_assert(detail::is_same<T, half>::value || detail::is_same<T, bfloat16>::value,
                "pack_float2 packs half or bfloat16");
  if constexpr (detail::is_same<T, half>::value) {
    return float2_to_half2(lo, hi);
  } else {
    return float2_to_bfloat162(lo, hi);
  }
}

// --- One-instruction 16-bit arithmetic ---------------------------------------
// What codegen emits for a + b, a - b and a * b typed half or bfloat16 with both
// operands of that type. The native .rn instructions round the exact result once;
// that gives the same bits as the float path (compute in float, round to 16 bits):
// float's 24-bit significand is at least 2p + 2 for p = 11 (half) and p = 8
// (bfloat16), so rounding twice is innocuous (Figueroa 1995), and a sum or product
// of two 16-bit values neither overflows nor underflows float. The explicit .rn
// also keeps ptxas from contracting a mul and an add into an fma, which would
// round once where the program rounds twice. bf16 add/sub/mul with a rounding
// modifier need sm_90; before it (and f16 before sm_53) the float path.

// The native forms only with TL_NATIVE_HALF_ARITH, which the JIT defines unless the pass
// config "tl.enable_native_half_arith" is false (an H200 run gave the same bits both ways).
#if defined(TL_NATIVE_HALF_ARITH) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 530
#define TL_NATIVE_F16 1
#endif
#if defined(TL_NATIVE_HALF_ARITH) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define TL_NATIVE_BF16 1
#endif

// The braces in these asm strings are CUDA's own style (cuda_fp16.hpp), and they matter:
// NVVM's loop unroller weighs an inline asm statement without them as much larger, so a
// loop of 16-bit multiply-adds (the fp16 x int4 GEMV's) was unrolled 4 times instead of 8,
// with half the loads in flight (the PTX of both forms compared with nvcc 13; braces alone
// make the difference, the newline does not). The other one-instruction element-wise
// helpers (math.h, pair_convert.h) are braced for the same reason.
#define TL_NARROW_NATIVE(T, NAME, OP, PTX)                                  \
  TL_DEVICE T NAME(T a, T b) {                                              \
    unsigned short r;                                                       \
    asm("{" PTX " %0, %1, %2;\n}" : "=h"(r) : "h"(a.bits), "h"(b.bits));   \
    return T(r, from_bits_t{});                                             \
  }
#define TL_NARROW_FLOAT(T, NAME, OP, PTX) \
  TL_DEVICE T NAME(T a, T b) { return T(static_cast<float>(a) OP static_cast<float>(b)); }
#ifdef TL_NATIVE_F16
#define TL_F16_OP TL_NARROW_NATIVE
#else
#define TL_F16_OP TL_NARROW_FLOAT
#endif
#ifdef TL_NATIVE_BF16
#define TL_BF16_OP TL_NARROW_NATIVE
#else
#define TL_BF16_OP TL_NARROW_FLOAT
#endif
TL_F16_OP(half, hadd, +, "add.rn.f16")
TL_F16_OP(half, hsub, -, "sub.rn.f16")
TL_F16_OP(half, hmul, *, "mul.rn.f16")
TL_BF16_OP(bfloat16, hadd, +, "add.rn.bf16")
TL_BF16_OP(bfloat16, hsub, -, "sub.rn.bf16")
TL_BF16_OP(bfloat16, hmul, *, "mul.rn.bf16")
#undef TL_F16_OP
#undef TL_BF16_OP
#undef TL_NARROW_NATIVE
#undef TL_NARROW_FLOAT

namespace detail {
/// a * b + c of 16-bit values (held in floats), rounded to odd at float's 24 bits: in double
/// the product is exact (two significands of at most 11 bits) and so is the sum's rounding
/// error e (TwoSum); an inexact sum moves to its odd neighbour toward the exact value, and
/// the narrowing to float does the same. Rounding that once more to 16 bits gives the
/// correctly rounded fma (round to odd at p + 2 bits or more composes with round to nearest).
TL_DEVICE float fma_round_to_odd(float a, float b, float c) {
  double p = __dmul_rn(a, b), cd = c;
  double s = __dadd_rn(p, cd);
  double bb = __dsub_rn(s, p);
  double e = __dadd_rn(__dsub_rn(p, __dsub_rn(s, bb)), __dsub_rn(cd, bb));
  unsigned long long u = static_cast<unsigned long long>(__double_as_longlong(s));
  if (e != 0.0 && (u & 1ull) == 0ull) u += ((e > 0.0) == (s > 0.0)) ? 1ull : ~0ull;
  s = __longlong_as_double(static_cast<long long>(u));
  float f = __double2float_rn(s);
  uint32_t v = __float_as_uint(f);
  if (static_cast<double>(f) != s && (v & 1u) == 0u && (v & 0x7f800000u) != 0x7f800000u) {
    if ((v & 0x7fffffffu) == 0u) {
      v = s < 0.0 ? 0x80000001u : 1u;  // underflowed to zero: the smallest subnormal, signed
    } else {
      v += ((static_cast<double>(f) < s) == (f > 0.0f)) ? 1u : 0xffffffffu;
    }
  }
  return __uint_as_float(v);
}
}  // namespace detail

// a * b + c rounded once (contract-half-fma): fma.rn, or the float path's exact emulation.
#define TL_FMA_NATIVE(T, PTX)                                                               \
  TL_DEVICE T hfma(T a, T b, T c) {                                                         \
    unsigned short r;                                                                       \
    asm("{" PTX " %0, %1, %2, %3;\n}" : "=h"(r) : "h"(a.bits), "h"(b.bits), "h"(c.bits));  \
    return T(r, from_bits_t{});                                                             \
  }
#define TL_FMA_FLOAT(T, PTX)                                                                \
  TL_DEVICE T hfma(T a, T b, T c) {                                                         \
    return T(detail::fma_round_to_odd(static_cast<float>(a), static_cast<float>(b), static_cast<float>(c))); \
  }
#ifdef TL_NATIVE_F16
TL_FMA_NATIVE(half, "fma.rn.f16")
#else
TL_FMA_FLOAT(half, "")
#endif
#if defined(TL_NATIVE_HALF_ARITH) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800  // fma.rn.bf16: sm_80
TL_FMA_NATIVE(bfloat16, "fma.rn.bf16")
#else
TL_FMA_FLOAT(bfloat16, "")
#endif
#undef TL_FMA_NATIVE
#undef TL_FMA_FLOAT
#undef TL_NATIVE_F16
#undef TL_NATIVE_BF16

/// The half in bits 0..15 of a packed pair.
TL_DEVICE half half2_lo(uint32_t v) { return half_from_bits(static_cast<unsigned short>(v & 0xffffu)); }
/// The half in bits 16..31 of a packed pair.
TL_DEVICE half half2_hi(uint32_t v) { return half_from_bits(static_cast<unsigned short>(v >> 16)); }
/// The bfloat16 in bits 0..15 of a packed pair.
TL_DEVICE bfloat16 bfloat162_lo(uint32_t v) { return bfloat16_from_bits(static_cast<unsigned short>(v & 0xffffu)); }
/// The bfloat16 in bits 16..31 of a packed pair.
TL_DEVICE bfloat16 bfloat162_hi(uint32_t v) { return bfloat16_from_bits(static_cast<unsigned short>(v >> 16)); }

}  // namespace tl
