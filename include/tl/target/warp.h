// SPDX-License-Identifier: Apache-2.0
/// \file Threads per warp. Every layout, collective and thread-range rule counts in CUDA's
/// warps of 32 lanes; the CPU target emulates the same warps so that one tile program means
/// the same on both. A target with another width (an AMD wavefront of 64) changes this one
/// name's users, not a literal 32 spread over the passes.
#pragma once

namespace tl::target {

inline constexpr int kWarpSize = 32;

}  // namespace tl::target
