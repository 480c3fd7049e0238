// SPDX-License-Identifier: Apache-2.0
/// \file Umbrella header of the CPU device library: the only header that
/// generated C++ kernels include.
///
/// Provides tl::half / tl::bfloat16 (types.h), scalar math with Python-style
/// floordiv / floormod and tl::infinity<T>() (math.h), tl::atomic_add / _max /
/// _min (atomic.h) and the tile GEMM tl::cpu::gemm (gemm.h).
#pragma once

// Generated code also uses these standard facilities directly.
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
}  // namespace tl::cpu
