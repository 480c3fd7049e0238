// SPDX-License-Identifier: Apache-2.0
/// \file Tests of the CPU device library (templates/tl/cpu): 16-bit float
/// conversions, math helpers, atomics under OpenMP and the tile GEMM.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <type_traits>
#include <vector>

#include "tl/cpu/tl_cpu.h"

#if defined(_OPENMP)
#define TL_TEST_OMP_PARALLEL_FOR _Pragma("omp parallel for")
#else
#define TL_TEST_OMP_PARALLEL_FOR
#endif

namespace {

using tl::bfloat16;
using tl::half;

float f32(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

uint16_t hbits(float f) { return half(f).bits; }
uint16_t bbits(float f) { return bfloat16(f).bits; }

// ---------------------------------------------------------------- types.h

TEST(CpuTemplatesTypes, Layout) {
  static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2, "");
  static_assert(std::is_trivially_copyable<half>::value && std::is_trivially_copyable<bfloat16>::value, "");
  static_assert(std::is_standard_layout<half>::value && std::is_standard_layout<bfloat16>::value, "");
  half h[2] = {half(1.0f), half(-2.0f)};
  uint16_t raw[2];
  std::memcpy(raw, h, sizeof raw);
  EXPECT_EQ(raw[0], 0x3C00);
  EXPECT_EQ(raw[1], 0xC000);
}

TEST(CpuTemplatesTypes, HalfKnownBits) {
  EXPECT_EQ(hbits(1.0f), 0x3C00);
  EXPECT_EQ(hbits(-2.0f), 0xC000);
  EXPECT_EQ(hbits(0.5f), 0x3800);
  EXPECT_EQ(hbits(0.0f), 0x0000);
  EXPECT_EQ(hbits(-0.0f), 0x8000);
  EXPECT_EQ(hbits(65504.0f), 0x7BFF);                // Largest finite.
  EXPECT_EQ(hbits(65519.99f), 0x7BFF);               // Below the tie: stays finite.
  EXPECT_EQ(hbits(65520.0f), 0x7C00);                // Tie rounds to even = Inf.
  EXPECT_EQ(hbits(1e6f), 0x7C00);
  EXPECT_EQ(hbits(-1e6f), 0xFC00);
  EXPECT_EQ(hbits(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(hbits(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_EQ(hbits(std::numeric_limits<float>::quiet_NaN()), 0x7E00);
  EXPECT_EQ(hbits(std::ldexp(1.0f, -14)), 0x0400);   // Smallest normal.
  EXPECT_EQ(hbits(std::ldexp(1.0f, -24)), 0x0001);   // Smallest subnormal.
  EXPECT_EQ(hbits(std::ldexp(1.0f, -25)), 0x0000);   // Tie to even -> 0.
  EXPECT_EQ(hbits(std::ldexp(1.5f, -25)), 0x0001);   // Above the tie.
  EXPECT_EQ(hbits(std::ldexp(3.0f, -25)), 0x0002);   // 1.5 ulp: tie to even (2).
  EXPECT_EQ(hbits(std::ldexp(1023.0f, -24)), 0x03FF);  // Largest subnormal.
  // Round to nearest even between 1 and 1 + 2^-10.
  EXPECT_EQ(hbits(1.0f + std::ldexp(1.0f, -11)), 0x3C00);                           // Tie -> even.
  EXPECT_EQ(hbits(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);                       // Tie -> even.
  EXPECT_EQ(hbits(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // Above tie.
  EXPECT_EQ(hbits(2047.5f), 0x6800);  // 2048 (ulp 1 -> tie between 2047 and 2048 goes to even mantissa).
  EXPECT_TRUE(std::isnan(static_cast<float>(half(std::nanf("")))));
}

TEST(CpuTemplatesTypes, HalfSoftwareMatchesReferenceAndRoundTrips) {
  // Every half converts to float and back to itself (NaNs stay NaN), in both
  // the active (F16C where enabled) and the software conversion.
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const uint16_t hb = static_cast<uint16_t>(b);
    const float f = tl::half_from_bits(hb);
    const float soft = tl::detail::half_bits_to_float_soft(hb);
    if (std::isnan(f)) {
      ASSERT_TRUE(std::isnan(soft)) << b;
      ASSERT_EQ(half(f).bits & 0x7C00, 0x7C00) << b;
      ASSERT_NE(half(f).bits & 0x3FF, 0) << b;
      continue;
    }
    ASSERT_EQ(soft, f) << b;
    ASSERT_EQ(half(f).bits, b);
    ASSERT_EQ(tl::detail::float_to_half_bits_soft(f), b);
  }
  // On a dense sample of float bit patterns the software rounding agrees with
  // the active conversion and is the nearest half, ties to even.
  for (uint64_t x = 0; x < (uint64_t{1} << 32); x += 9973) {
    const float f = f32(static_cast<uint32_t>(x));
    const uint16_t h = tl::detail::float_to_half_bits_soft(f);
    ASSERT_EQ(h, tl::detail::float_to_half_bits(f)) << std::hex << x;
    if (std::isnan(f)) continue;
    if (std::fabs(f) >= 65520.0f) {
      ASSERT_EQ(h & 0x7FFF, 0x7C00) << std::hex << x;
      continue;
    }
    const double err = std::fabs(static_cast<double>(f) - tl::detail::half_bits_to_float_soft(h));
    for (int step : {-1, 1}) {
      const int mag = (h & 0x7FFF) + step;
      if (mag < 0 || mag >= 0x7C00) continue;
      const uint16_t nb = static_cast<uint16_t>((h & 0x8000) | mag);
      const double nerr = std::fabs(static_cast<double>(f) - tl::detail::half_bits_to_float_soft(nb));
      ASSERT_LE(err, nerr) << std::hex << x;
      if (err == nerr) {
        ASSERT_EQ(h & 1, 0) << std::hex << x;
      }
    }
  }
}

TEST(CpuTemplatesTypes, HalfFromOtherTypes) {
  EXPECT_EQ(half(3).bits, 0x4200);
  EXPECT_EQ(half(int64_t{-3}).bits, 0xC200);
  EXPECT_EQ(half(2.5).bits, 0x4100);
  EXPECT_EQ(half(uint8_t{1}).bits, 0x3C00);
  // double -> half rounds once: 1 + 2^-11 + 2^-40 lies just above the tie,
  // which a double -> float -> half chain would lose.
  EXPECT_EQ(half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits, 0x3C01);
  EXPECT_EQ(bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits, 0x3F81);
  EXPECT_EQ(half(1e300).bits, 0x7C00);
  EXPECT_EQ(half(1e-300).bits, 0x0000);
  EXPECT_EQ(half(-1e-300).bits, 0x8000);
  EXPECT_EQ(half(bfloat16(1.5f)).bits, 0x3E00);
  EXPECT_EQ(bfloat16(half(1.5f)).bits, 0x3FC0);
}

TEST(CpuTemplatesTypes, BFloat16KnownBits) {
  EXPECT_EQ(bbits(1.0f), 0x3F80);
  EXPECT_EQ(bbits(-2.0f), 0xC000);
  EXPECT_EQ(bbits(0.0f), 0x0000);
  EXPECT_EQ(bbits(-0.0f), 0x8000);
  EXPECT_EQ(bbits(f32(0x3F808000u)), 0x3F80);  // Tie -> even.
  EXPECT_EQ(bbits(f32(0x3F818000u)), 0x3F82);  // Tie -> even.
  EXPECT_EQ(bbits(f32(0x3F808001u)), 0x3F81);  // Above tie.
  EXPECT_EQ(bbits(f32(0x3F807FFFu)), 0x3F80);  // Below tie.
  EXPECT_EQ(bbits(f32(0x00018000u)), 0x0002);  // Subnormal tie -> even.
  EXPECT_EQ(bbits(std::numeric_limits<float>::max()), 0x7F80);  // Rounds to Inf.
  EXPECT_EQ(bbits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(bbits(-std::numeric_limits<float>::infinity()), 0xFF80);
  EXPECT_EQ(bbits(std::numeric_limits<float>::quiet_NaN()), 0x7FC0);
  EXPECT_EQ(bbits(f32(0x7F800001u)) & 0x7F80, 0x7F80);  // Signalling NaN stays NaN...
  EXPECT_NE(bbits(f32(0x7F800001u)) & 0x7F, 0);          // ...and does not become Inf.
  for (uint32_t b = 0; b < 0x10000u; ++b) {
    const float f = tl::bfloat16_from_bits(static_cast<uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(bfloat16(f).bits, b);
  }
}

TEST(CpuTemplatesTypes, ArithmeticPromotesToFloat) {
  half a = 1.5f, b = 2.25f;
  static_assert(std::is_same<decltype(a + b), float>::value, "half + half computes in float");
  static_assert(std::is_same<decltype(a * 2.0f), float>::value, "");
  EXPECT_EQ(a + b, 3.75f);
  EXPECT_EQ(a - b, -0.75f);
  EXPECT_EQ(a * b, 3.375f);
  EXPECT_EQ(-a, -1.5f);
  EXPECT_TRUE(a < b);
  EXPECT_TRUE(a == 1.5f);
  EXPECT_TRUE(a != b);
  EXPECT_TRUE(b >= 2);
  a += b;
  EXPECT_EQ(a.bits, half(3.75f).bits);
  a *= 2;
  EXPECT_EQ(static_cast<float>(a), 7.5f);
  a /= half(2.5f);
  EXPECT_EQ(static_cast<float>(a), 3.0f);
  a -= 1.0;
  EXPECT_EQ(static_cast<float>(a), 2.0f);
  ++a;
  EXPECT_EQ(static_cast<float>(a), 3.0f);
  // Compound assignment rounds back: 2048 + 1 is not representable (ties to even).
  half big = 2048.0f;
  big += 1.0f;
  EXPECT_EQ(static_cast<float>(big), 2048.0f);

  bfloat16 x = 1.0f, y = 0.5f;
  EXPECT_EQ(x + y, 1.5f);
  EXPECT_TRUE(y < x);
  x += y;
  EXPECT_EQ(x.bits, 0x3FC0);
  EXPECT_EQ(x * a, 4.5f);  // bfloat16 * half also promotes to float.
}

// ---------------------------------------------------------------- math.h

TEST(CpuTemplatesMath, FloorDivModPythonSemantics) {
  struct Case {
    int64_t a, b, q, r;  // Values Python's // and % give.
  };
  const Case cases[] = {{7, 2, 3, 1},    {-7, 2, -4, 1}, {7, -2, -4, -1}, {-7, -2, 3, -1}, {6, -3, -2, 0},
                        {-6, 3, -2, 0},  {0, 5, 0, 0},   {0, -5, 0, 0},   {1, 3, 0, 1},    {-1, 3, -1, 2},
                        {1, -3, -1, -2}, {-1, -3, 0, -1}, {-128, 7, -19, 5}};
  for (const Case& c : cases) {
    EXPECT_EQ(tl::floordiv(static_cast<int32_t>(c.a), static_cast<int32_t>(c.b)), c.q) << c.a << " // " << c.b;
    EXPECT_EQ(tl::floormod(static_cast<int32_t>(c.a), static_cast<int32_t>(c.b)), c.r) << c.a << " % " << c.b;
    EXPECT_EQ(tl::floordiv(c.a, c.b), c.q);
    EXPECT_EQ(tl::floormod(c.a, c.b), c.r);
    EXPECT_EQ(tl::floordiv(static_cast<int32_t>(c.a), c.b), c.q);  // Mixed int32/int64.
    EXPECT_EQ(tl::floormod(c.a, static_cast<int32_t>(c.b)), c.r);
  }
  static_assert(std::is_same<decltype(tl::floordiv(int32_t{1}, int64_t{1})), int64_t>::value, "");
  EXPECT_EQ(tl::floordiv(7u, 2u), 3u);
  EXPECT_EQ(tl::floormod(7u, 2u), 1u);
  EXPECT_EQ(tl::floordiv(uint64_t{1} << 40, uint64_t{3}), (uint64_t{1} << 40) / 3);
  // Identity a == floordiv(a, b) * b + floormod(a, b), and 0 <= |r| < |b| with the sign of b.
  for (int32_t a = -50; a <= 50; ++a) {
    for (int32_t b = -9; b <= 9; ++b) {
      if (b == 0) continue;
      const int32_t q = tl::floordiv(a, b), r = tl::floormod(a, b);
      ASSERT_EQ(q * b + r, a);
      ASSERT_TRUE(b > 0 ? (r >= 0 && r < b) : (r <= 0 && r > b));
      ASSERT_EQ(q, static_cast<int32_t>(std::floor(static_cast<double>(a) / b)));
    }
  }
  EXPECT_EQ(tl::floordiv(-7.0f, 2.0f), -4.0f);
  EXPECT_EQ(tl::floormod(-7.0, 2.0), 1.0);
}

TEST(CpuTemplatesMath, Infinity) {
  EXPECT_EQ(tl::infinity<half>().bits, 0x7C00);
  EXPECT_EQ(tl::neg_infinity<half>().bits, 0xFC00);
  EXPECT_EQ(tl::infinity<bfloat16>().bits, 0x7F80);
  EXPECT_EQ(tl::neg_infinity<bfloat16>().bits, 0xFF80);
  EXPECT_TRUE(std::isinf(static_cast<float>(tl::infinity<half>())));
  EXPECT_TRUE(std::isinf(static_cast<float>(tl::neg_infinity<bfloat16>())));
  EXPECT_EQ(tl::infinity<float>(), std::numeric_limits<float>::infinity());
  EXPECT_EQ(tl::neg_infinity<double>(), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(tl::infinity<int32_t>(), std::numeric_limits<int32_t>::max());
  EXPECT_EQ(tl::neg_infinity<int32_t>(), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(tl::neg_infinity<uint8_t>(), 0);
  EXPECT_EQ(tl::infinity<int64_t>(), std::numeric_limits<int64_t>::max());
}

TEST(CpuTemplatesMath, Functions) {
  EXPECT_FLOAT_EQ(tl::exp(1.0f), std::exp(1.0f));
  EXPECT_DOUBLE_EQ(tl::exp(1.0), std::exp(1.0));
  EXPECT_EQ(tl::exp(half(0.0f)).bits, 0x3C00);
  static_assert(std::is_same<decltype(tl::exp(half(1.0f))), half>::value, "16-bit math stays 16-bit");
  EXPECT_NEAR(static_cast<float>(tl::exp(half(1.0f))), 2.71828f, 2e-3f);
  EXPECT_NEAR(static_cast<float>(tl::log(bfloat16(2.0f))), 0.693f, 5e-3f);
  EXPECT_EQ(tl::exp2(3.0f), 8.0f);
  EXPECT_EQ(tl::log2(8.0), 3.0);
  EXPECT_EQ(tl::sqrt(16.0f), 4.0f);
  EXPECT_EQ(tl::rsqrt(4.0f), 0.5f);
  EXPECT_EQ(static_cast<float>(tl::rsqrt(half(4.0f))), 0.5f);
  EXPECT_FLOAT_EQ(tl::tanh(0.5f), std::tanh(0.5f));
  EXPECT_EQ(tl::sigmoid(0.0f), 0.5f);
  EXPECT_EQ(tl::sigmoid(0.0), 0.5);
  EXPECT_EQ(static_cast<float>(tl::sigmoid(bfloat16(0.0f))), 0.5f);
  EXPECT_EQ(tl::floor(-1.5f), -2.0f);
  EXPECT_EQ(tl::ceil(-1.5), -1.0);
  EXPECT_EQ(static_cast<float>(tl::floor(half(2.5f))), 2.0f);
  EXPECT_EQ(tl::pow(2.0f, 10.0f), 1024.0f);
  EXPECT_EQ(tl::pow(2.0f, 3), 8.0f);  // Mixed float/int.
  EXPECT_EQ(static_cast<float>(tl::pow(half(2.0f), half(3.0f))), 8.0f);
  EXPECT_EQ(tl::exp(0), 1.0);  // Integers compute in double.

  EXPECT_EQ(tl::abs(-3), 3);
  EXPECT_EQ(tl::abs(int8_t{-5}), int8_t{5});
  EXPECT_EQ(tl::abs(int64_t{-5}), int64_t{5});
  EXPECT_EQ(tl::abs(7u), 7u);
  EXPECT_EQ(tl::abs(-2.5f), 2.5f);
  EXPECT_EQ(tl::abs(-2.5), 2.5);
  EXPECT_EQ(tl::abs(half(-2.5f)).bits, half(2.5f).bits);
  EXPECT_EQ(tl::abs(bfloat16(-2.5f)).bits, bfloat16(2.5f).bits);

  EXPECT_EQ(tl::min(3, -4), -4);
  EXPECT_EQ(tl::max(int64_t{3}, int64_t{-4}), 3);
  EXPECT_EQ(tl::min(uint8_t{3}, uint8_t{200}), 3);
  EXPECT_EQ(tl::max(1.5f, 2.5f), 2.5f);
  EXPECT_EQ(tl::min(1.5, 2.5), 1.5);
  EXPECT_EQ(tl::max(half(1.0f), half(-1.0f)).bits, 0x3C00);
  static_assert(std::is_same<decltype(tl::max(half(1.0f), half(2.0f))), half>::value, "");
  EXPECT_EQ(tl::min(bfloat16(1.0f), bfloat16(-1.0f)).bits, 0xBF80);
  // Mixed types convert to the common computation type.
  EXPECT_EQ(tl::max(half(1.5f), 2.0f), 2.0f);
  EXPECT_EQ(tl::min(0.5f, bfloat16(1.0f)), 0.5f);
  EXPECT_EQ(tl::max(2.5f, 3), 3.0f);
  EXPECT_EQ(tl::max(half(1.0f), bfloat16(2.0f)), 2.0f);
  EXPECT_EQ(tl::min(int32_t{-1}, int64_t{5}), int64_t{-1});
  EXPECT_EQ(tl::max(tl::neg_infinity<float>(), -3.0f), -3.0f);
}

// -------------------------------------------------------------- atomic.h

template <typename T>
void CheckAtomicSum(int n) {
  T total = T(0);
  TL_TEST_OMP_PARALLEL_FOR
  for (int i = 1; i <= n; ++i) tl::atomic_add(&total, T(i));
  EXPECT_EQ(static_cast<double>(total), static_cast<double>(n) * (n + 1) / 2);
}

template <typename T>
void CheckAtomicMinMax(int n) {
  T hi = T(0), lo = T(n + 1);
  TL_TEST_OMP_PARALLEL_FOR
  for (int i = 0; i <= n; ++i) {
    const int v = (i * 37) % (n + 1);  // A permutation of 0..n.
    tl::atomic_max(&hi, T(v));
    tl::atomic_min(&lo, T(v));
  }
  EXPECT_EQ(static_cast<double>(hi), n);
  EXPECT_EQ(static_cast<double>(lo), 0);
}

TEST(CpuTemplatesAtomic, SumUnderOpenMP) {
  CheckAtomicSum<float>(2000);    // 2001000 < 2^24: exact.
  CheckAtomicSum<double>(100000);
  CheckAtomicSum<int32_t>(50000);
  CheckAtomicSum<int64_t>(100000);
  CheckAtomicSum<uint32_t>(50000);
  // 16-bit floats: add ones so every partial sum is exactly representable.
  half hs = 0.0f;
  bfloat16 bs = 0.0f;
  TL_TEST_OMP_PARALLEL_FOR
  for (int i = 0; i < 2048; ++i) tl::atomic_add(&hs, 1.0f);
  TL_TEST_OMP_PARALLEL_FOR
  for (int i = 0; i < 256; ++i) tl::atomic_add(&bs, half(1.0f));
  EXPECT_EQ(static_cast<float>(hs), 2048.0f);
  EXPECT_EQ(static_cast<float>(bs), 256.0f);
}

TEST(CpuTemplatesAtomic, MinMaxUnderOpenMP) {
  CheckAtomicMinMax<float>(1000);
  CheckAtomicMinMax<double>(1000);
  CheckAtomicMinMax<int32_t>(1000);
  CheckAtomicMinMax<int64_t>(1000);
  CheckAtomicMinMax<uint32_t>(1000);
  CheckAtomicMinMax<half>(1000);
  CheckAtomicMinMax<bfloat16>(250);
}

TEST(CpuTemplatesAtomic, ReturnsOldValue) {
  float f = 1.5f;
  EXPECT_EQ(tl::atomic_add(&f, 2.0f), 1.5f);
  EXPECT_EQ(f, 3.5f);
  EXPECT_EQ(tl::atomic_max(&f, 2.0f), 3.5f);
  EXPECT_EQ(f, 3.5f);
  EXPECT_EQ(tl::atomic_min(&f, 2.0f), 3.5f);
  EXPECT_EQ(f, 2.0f);
  int32_t i = 5;
  EXPECT_EQ(tl::atomic_add(&i, -7), 5);
  EXPECT_EQ(i, -2);
  EXPECT_EQ(tl::atomic_max(&i, 9), -2);
  EXPECT_EQ(i, 9);
  half h = 1.0f;
  EXPECT_EQ(tl::atomic_add(&h, 0.5f).bits, 0x3C00);
  EXPECT_EQ(h.bits, 0x3E00);
  bfloat16 b = 4.0f;
  EXPECT_EQ(static_cast<float>(tl::atomic_min(&b, bfloat16(-1.0f))), 4.0f);
  EXPECT_EQ(static_cast<float>(b), -1.0f);
  double d = 0.25;
  EXPECT_EQ(tl::atomic_add(&d, 0.5), 0.25);
  EXPECT_EQ(d, 0.75);
}

// ---------------------------------------------------------------- gemm.h

template <typename T>
T RandomValue(std::mt19937& rng) {
  if constexpr (std::is_integral<T>::value) {
    std::uniform_int_distribution<int> dist(std::is_signed<T>::value ? -128 : 0, std::is_signed<T>::value ? 127 : 255);
    return static_cast<T>(dist(rng));
  } else {
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    return T(dist(rng));  // Rounded to T once; the reference uses the rounded value.
  }
}

/// Runs gemm<kTA, kTB> on random data (with padded leading dimensions and a
/// non-zero C, so accumulation and strides are both checked) against a
/// double-precision reference built from the same stored operand values.
template <bool kTA, bool kTB, typename TA, typename TB, typename TC>
void CheckGemm(int M, int N, int K, int pad) {
  SCOPED_TRACE(::testing::Message() << "M=" << M << " N=" << N << " K=" << K << " transA=" << kTA
                                    << " transB=" << kTB << " pad=" << pad);
  std::mt19937 rng(static_cast<unsigned>(M * 131 + N * 17 + K * 7 + kTA * 2 + kTB));
  const int lda = (kTA ? M : K) + pad, ldb = (kTB ? K : N) + pad, ldc = N + pad;
  const int a_rows = kTA ? K : M, b_rows = kTB ? N : K;
  std::vector<TA> A(static_cast<size_t>(a_rows) * lda + 1);
  std::vector<TB> B(static_cast<size_t>(b_rows) * ldb + 1);
  std::vector<TC> C(static_cast<size_t>(M) * ldc + 1);
  for (auto& x : A) x = RandomValue<TA>(rng);
  for (auto& x : B) x = RandomValue<TB>(rng);
  for (auto& x : C) x = static_cast<TC>(RandomValue<int8_t>(rng) / 4);
  const std::vector<TC> C0 = C;

  tl::cpu::gemm<kTA, kTB>(A.data(), B.data(), C.data(), M, N, K, lda, ldb, ldc);

  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double ref = static_cast<double>(C0[static_cast<size_t>(i) * ldc + j]), mag = std::fabs(ref);
      for (int k = 0; k < K; ++k) {
        const double a = static_cast<double>(kTA ? A[static_cast<size_t>(k) * lda + i] : A[static_cast<size_t>(i) * lda + k]);
        const double b = static_cast<double>(kTB ? B[static_cast<size_t>(j) * ldb + k] : B[static_cast<size_t>(k) * ldb + j]);
        ref += a * b;
        mag += std::fabs(a * b);
      }
      const double got = static_cast<double>(C[static_cast<size_t>(i) * ldc + j]);
      if (std::is_integral<TC>::value) {
        ASSERT_EQ(got, ref) << "at (" << i << ", " << j << ")";
      } else {
        const double eps = std::is_same<TC, float>::value ? 1.2e-7 : 2.3e-16;
        ASSERT_NEAR(got, ref, 4 * eps * (mag + 1) * std::sqrt(K + 1.0)) << "at (" << i << ", " << j << ")";
      }
    }
  }
  // Padding columns of C are never written.
  for (int i = 0; i < M; ++i)
    for (int j = N; j < ldc; ++j)
      ASSERT_EQ(static_cast<double>(C[static_cast<size_t>(i) * ldc + j]),
                static_cast<double>(C0[static_cast<size_t>(i) * ldc + j]));
}

struct Shape {
  int m, n, k;
};
const Shape kShapes[] = {{1, 1, 1},    {7, 13, 5},   {128, 128, 32}, {33, 65, 17}, {0, 5, 3}, {5, 0, 3},
                         {5, 3, 0},    {1, 40, 70},  {17, 1, 9},     {9, 33, 8},   {64, 48, 16},
                         {70, 200, 150}};  // The last one crosses the K and N block sizes.

template <typename TA, typename TB, typename TC>
void CheckAllGemm() {
  for (const Shape& s : kShapes) {
    for (int pad : {0, 3}) {
      CheckGemm<false, false, TA, TB, TC>(s.m, s.n, s.k, pad);
      CheckGemm<false, true, TA, TB, TC>(s.m, s.n, s.k, pad);
      CheckGemm<true, false, TA, TB, TC>(s.m, s.n, s.k, pad);
      CheckGemm<true, true, TA, TB, TC>(s.m, s.n, s.k, pad);
    }
  }
}

TEST(CpuTemplatesGemm, Float) { CheckAllGemm<float, float, float>(); }
TEST(CpuTemplatesGemm, HalfToFloat) { CheckAllGemm<half, half, float>(); }
TEST(CpuTemplatesGemm, BFloat16ToFloat) { CheckAllGemm<bfloat16, bfloat16, float>(); }
TEST(CpuTemplatesGemm, MixedHalfFloat) { CheckAllGemm<half, float, float>(); }
TEST(CpuTemplatesGemm, Int8ToInt32) { CheckAllGemm<int8_t, int8_t, int32_t>(); }
TEST(CpuTemplatesGemm, UInt8ToInt32) { CheckAllGemm<uint8_t, uint8_t, int32_t>(); }
TEST(CpuTemplatesGemm, Double) { CheckAllGemm<double, double, double>(); }

TEST(CpuTemplatesGemm, ReentrantInsideOpenMP) {
  // Each iteration owns its C tile, as generated kernels do; results must
  // match a serial run exactly.
  const int M = 40, N = 72, K = 24, kTiles = 8;
  std::mt19937 rng(7);
  std::vector<float> A(M * K), B(K * N);
  for (auto& x : A) x = RandomValue<float>(rng);
  for (auto& x : B) x = RandomValue<float>(rng);
  std::vector<float> serial(M * N, 0.0f);
  tl::cpu::gemm<false, false>(A.data(), B.data(), serial.data(), M, N, K, K, N, N);
  std::vector<std::vector<float>> tiles(kTiles, std::vector<float>(M * N, 0.0f));
  TL_TEST_OMP_PARALLEL_FOR
  for (int t = 0; t < kTiles; ++t) tl::cpu::gemm<false, false>(A.data(), B.data(), tiles[t].data(), M, N, K, K, N, N);
  for (const auto& tile : tiles) EXPECT_EQ(tile, serial);
}

}  // namespace
