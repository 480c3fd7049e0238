// SPDX-License-Identifier: Apache-2.0
/// \file Single-thread micro-benchmark of tl::cpu::gemm (float) on the tile
/// shapes generated kernels use, all four transpose combinations, reported
/// against the measured FMA peak of one core.
///
/// Build: g++ -std=c++17 -O3 -march=native -I templates benchmarks/cpu_gemm_micro.cc -o cpu_gemm_micro
/// Run:   ./cpu_gemm_micro [M N K]   (default: 128 128 32, plus a few other tile shapes)
///
/// Shared / virtual machines change clock speed under load, so peak and GEMM
/// timings are taken in interleaved rounds and the best of each is kept.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "tl/cpu/tl_cpu.h"

namespace {

using Clock = std::chrono::steady_clock;
using tl::cpu::gemm_detail::vfloat;
using tl::cpu::gemm_detail::vzero;

/// Seconds per flop of 12 independent vector multiply-add chains (named
/// variables so they live in registers); the FMA peak at the kernel's width.
__attribute__((noinline)) double peak_seconds_per_flop() {
  const vfloat z = vzero(), m = z + 0.9999f, d = z + 1e-5f;
  vfloat c0 = z + 0.1f, c1 = z + 0.2f, c2 = z + 0.3f, c3 = z + 0.4f, c4 = z + 0.5f, c5 = z + 0.6f;
  vfloat c6 = z + 0.7f, c7 = z + 0.8f, c8 = z + 0.9f, c9 = z + 1.0f, c10 = z + 1.1f, c11 = z + 1.2f;
  const long n = 200000;
  const auto t0 = Clock::now();
  for (long i = 0; i < n; ++i) {
    c0 = c0 * m + d; c1 = c1 * m + d; c2 = c2 * m + d; c3 = c3 * m + d; c4 = c4 * m + d; c5 = c5 * m + d;
    c6 = c6 * m + d; c7 = c7 * m + d; c8 = c8 * m + d; c9 = c9 * m + d; c10 = c10 * m + d; c11 = c11 * m + d;
  }
  const auto t1 = Clock::now();
  const vfloat s = c0 + c1 + c2 + c3 + c4 + c5 + c6 + c7 + c8 + c9 + c10 + c11;
  if (s[0] == 1.2345f) std::printf(" ");  // Keeps the chains alive.
  return std::chrono::duration<double>(t1 - t0).count() / (2.0 * 12 * tl::cpu::gemm_detail::kVec * n);
}

struct Case {
  std::string name;
  double flops;
  std::function<void()> run;
  double best = 1e30;
};

struct Problem {
  int m, n, k;
  std::vector<float> a, b, c;
};

template <bool kTA, bool kTB>
Case make_case(Problem& p) {
  const std::string name = std::string(kTA ? "T" : "N") + (kTB ? "T" : "N") + " " + std::to_string(p.m) + "x" +
                           std::to_string(p.n) + "x" + std::to_string(p.k);
  return {name, 2.0 * p.m * p.n * p.k, [&p] {
            tl::cpu::gemm<kTA, kTB>(p.a.data(), p.b.data(), p.c.data(), p.m, p.n, p.k, kTA ? p.m : p.k,
                                    kTB ? p.k : p.n, p.n);
          }};
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<Problem> problems;
  if (argc > 3) {
    problems.push_back({std::atoi(argv[1]), std::atoi(argv[2]), std::atoi(argv[3]), {}, {}, {}});
  } else {
    problems = {{128, 128, 32, {}, {}, {}}, {64, 64, 32, {}, {}, {}}, {128, 96, 32, {}, {}, {}},
                {128, 32, 32, {}, {}, {}}, {256, 128, 64, {}, {}, {}}};
  }
  std::vector<Case> cases;
  for (Problem& p : problems) {
    p.a.resize(static_cast<size_t>(p.m) * p.k);
    p.b.resize(static_cast<size_t>(p.k) * p.n);
    p.c.assign(static_cast<size_t>(p.m) * p.n, 0.0f);
    for (float& x : p.a) x = static_cast<float>(std::rand() % 7 - 3) * 0.01f;
    for (float& x : p.b) x = static_cast<float>(std::rand() % 5 - 2) * 0.01f;
    cases.push_back(make_case<false, false>(p));
    cases.push_back(make_case<false, true>(p));
    cases.push_back(make_case<true, false>(p));
    cases.push_back(make_case<true, true>(p));
  }
  double peak = 1e30;
  for (int round = 0; round < 40; ++round) {
    peak = std::min(peak, peak_seconds_per_flop());
    for (Case& c : cases) {
      const int reps = std::max(1, static_cast<int>(2e8 / c.flops));
      const auto t0 = Clock::now();
      for (int r = 0; r < reps; ++r) c.run();
      c.best = std::min(c.best, std::chrono::duration<double>(Clock::now() - t0).count() / reps);
    }
  }
  std::printf("FMA peak, one core, %d-wide: %.1f GFLOP/s\n", tl::cpu::gemm_detail::kVec, 1e-9 / peak);
  for (const Case& c : cases)
    std::printf("  %-16s %8.0f ns  %7.1f GFLOP/s  %5.1f%% of peak\n", c.name.c_str(), c.best * 1e9,
                c.flops / c.best * 1e-9, 100.0 * c.flops * peak / c.best);
  return 0;
}
