// SPDX-License-Identifier: Apache-2.0
/// \file Umbrella header of the CPU device library: the only header that
/// generated C++ kernels include.
///
/// Provides tl::half / tl::bfloat16 (types.h), scalar math with Python-style
/// floordiv / floormod and tl::infinity<T>() (math.h), tl::atomic_add / _max /
/// _min (atomic.h) and the tile GEMM tl::cpu::gemm (gemm.h).
#pragma once

// Generated code also uses these standard facilities directly.
#include <atomic>
#include <cstdint>
#include <cstdio>  // printf, for T.print
#include <limits>
#include <memory>

#include "types.h"
#include "math.h"
#include "atomic.h"
#include "gemm.h"
#include "memory.h"
#include "mbarrier.h"

#include <cstdlib>

namespace tl::cpu {
/// A failed run-time `assert` / T.device_assert: the message was printed; stop the process,
/// as a device-side assert stops a CUDA context (output flushed first).
inline void trap() {
  std::fflush(stdout);
  std::abort();
}

/// The status a kernel returns (ORed with the line) when a block's threads disagreed where
/// the lockstep emulation needs them to agree (src/transform/cpu/emulate_threads.cc): some
/// but not all took a break or continue, or they computed different bounds for a loop.
inline constexpr int32_t kDivergentThreadsStatus = 0x7C000000;

/// The line of the first such statement in this call (0: none).
inline std::atomic<int32_t>& divergent_threads_line() {
  static std::atomic<int32_t> line{0};
  return line;
}
}  // namespace tl::cpu

namespace tl {
inline void cpu_divergent_threads(int32_t line) {
  int32_t none = 0;
  cpu::divergent_threads_line().compare_exchange_strong(none, line);
}
}  // namespace tl
