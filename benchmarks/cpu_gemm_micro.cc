// SPDX-License-Identifier: Apache-2.0
/// \file Single-thread micro-benchmark of tl::cpu::gemm on the tile shape
/// generated kernels use (128x128x32, float), all four transpose combos.
///
/// Build: g++ -std=c++17 -O3 -march=native -I templates benchmarks/cpu_gemm_micro.cc
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <vector>

#include "tl/cpu/tl_cpu.h"

namespace {

using tl::cpu::gemm_detail::vfloat;

/// Measured FMA peak of one core at the vector width the kernel uses:
/// 16 independent multiply-add chains in named registers, so latency is hidden.
double fma_peak() {
  constexpr int kW = tl::cpu::gemm_detail::kVec;
  const vfloat z = tl::cpu::gemm_detail::vzero();
  vfloat c0 = z + 0.1f, c1 = z + 0.2f, c2 = z + 0.3f, c3 = z + 0.4f, c4 = z + 0.5f, c5 = z + 0.6f, c6 = z + 0.7f,
         c7 = z + 0.8f, c8 = z + 0.9f, c9 = z + 1.0f, c10 = z + 1.1f, c11 = z + 1.2f, c12 = z + 1.3f,
         c13 = z + 1.4f, c14 = z + 1.5f, c15 = z + 1.6f;
  const vfloat m = z + 0.9999f;
  const long n = 50000000;
  double best = 0;
  for (int trial = 0; trial < 3; ++trial) {
    auto t0 = std::chrono::steady_clock::now();
    for (long it = 0; it < n; ++it) {
      c0 = c0 * m + 1e-5f; c1 = c1 * m + 1e-5f; c2 = c2 * m + 1e-5f; c3 = c3 * m + 1e-5f;
      c4 = c4 * m + 1e-5f; c5 = c5 * m + 1e-5f; c6 = c6 * m + 1e-5f; c7 = c7 * m + 1e-5f;
      c8 = c8 * m + 1e-5f; c9 = c9 * m + 1e-5f; c10 = c10 * m + 1e-5f; c11 = c11 * m + 1e-5f;
      c12 = c12 * m + 1e-5f; c13 = c13 * m + 1e-5f; c14 = c14 * m + 1e-5f; c15 = c15 * m + 1e-5f;
    }
    auto t1 = std::chrono::steady_clock::now();
    const double g = 2.0 * kW * 16 * n / std::chrono::duration<double>(t1 - t0).count() * 1e-9;
    if (g > best) best = g;
  }
  const vfloat s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11 + c12 + c13 + c14 + c15;
  std::printf("FMA peak (%d-wide): %.1f GFLOP/s (sink %g)\n", kW, best, static_cast<double>(s[0]));
  return best;
}

template <bool kTA, bool kTB>
double bench(int M, int N, int K) {
  std::vector<float> a(static_cast<size_t>(M) * K), b(static_cast<size_t>(K) * N), c(static_cast<size_t>(M) * N);
  for (auto& x : a) x = static_cast<float>(std::rand() % 7) - 3.0f;
  for (auto& x : b) x = static_cast<float>(std::rand() % 5) - 2.0f;
  const int lda = kTA ? M : K, ldb = kTB ? K : N;
  const double flop = 2.0 * M * N * K;
  const int reps = static_cast<int>(4e9 / flop) + 1;
  double best = 0;
  for (int trial = 0; trial < 5; ++trial) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) tl::cpu::gemm<kTA, kTB>(a.data(), b.data(), c.data(), M, N, K, lda, ldb, N);
    auto t1 = std::chrono::steady_clock::now();
    const double g = flop * reps / std::chrono::duration<double>(t1 - t0).count() * 1e-9;
    if (g > best) best = g;
  }
  std::printf("  %s%s %dx%dx%d: %7.1f GFLOP/s (c[0]=%g)\n", kTA ? "T" : "N", kTB ? "T" : "N", M, N, K, best,
              static_cast<double>(c[0]));
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  const int M = argc > 1 ? std::atoi(argv[1]) : 128;
  const int N = argc > 2 ? std::atoi(argv[2]) : 128;
  const int K = argc > 3 ? std::atoi(argv[3]) : 32;
  const double peak = fma_peak();
  double sum = 0;
  sum += bench<false, false>(M, N, K);
  sum += bench<false, true>(M, N, K);
  sum += bench<true, false>(M, N, K);
  sum += bench<true, true>(M, N, K);
  const double peak2 = fma_peak();
  std::printf("mean %.1f GFLOP/s = %.0f%% of peak\n", sum / 4, 100.0 * sum / 4 / std::max(peak, peak2));
  return 0;
}
