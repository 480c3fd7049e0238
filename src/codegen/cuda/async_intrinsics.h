// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA text of Hopper's asynchronous-pipeline intrinsics (async_intrinsics.cc):
/// TMA loads and stores, mbarriers, named barriers, the roles and register reallocation of
/// warp-specialized kernels. Each prints as a call of the device library's function of the
/// same name (templates/tl/cuda/async_pipeline.h).
#pragma once

#include <functional>
#include <string>

#include "tl/ir/expr.h"

namespace tl::codegen::cuda {

/// The CUDA expression of `op`, with `print` for its arguments, or "" when `op` is not
/// one of these intrinsics. (A TMA descriptor is a kernel parameter the code generator
/// names itself.) `tma_cache_hint`: the L2 policy TMA loads carry (0 none, 1 evict-normal,
/// 2 evict-first, 3 evict-last; tl::L2Hint).
std::string PrintAsyncPipelineCall(const ir::Call* op, const std::function<std::string(const ir::Expr&)>& print,
                                   int64_t tma_cache_hint = 0);

}  // namespace tl::codegen::cuda
