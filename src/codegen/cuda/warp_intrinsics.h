// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA text of the warp-level intrinsics (warp_intrinsics.cc): votes, shuffles,
/// warp reductions, __ffs / __fns and __syncwarp. CUDA's own intrinsics where they take the
/// operand type; the device library's (templates/tl/cuda/reduce.h) otherwise.
#pragma once

#include <functional>
#include <string>

#include "tl/ir/expr.h"

namespace tl::codegen::cuda {

/// The CUDA expression of `op`, with `print` for its arguments, or "" when `op` is not one
/// of these intrinsics.
std::string PrintWarpCall(const ir::Call* op, const std::function<std::string(const ir::Expr&)>& print);

}  // namespace tl::codegen::cuda
