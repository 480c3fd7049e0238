// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA text of the copy and conversion intrinsics (copy_intrinsics.cc): cp.async,
/// vector copies and fills, converting copies and pair conversions. Each prints as a call
/// of the device library (templates/tl/cuda: memory.h, tile_ops.h, pair_convert.h).
#pragma once

#include <functional>
#include <string>

#include "tl/ir/expr.h"

namespace tl::codegen::cuda {

/// The CUDA expression of `op`, with `print` for its arguments, or "" when `op` is not one
/// of these intrinsics.
std::string PrintCopyCall(const ir::Call* op, const std::function<std::string(const ir::Expr&)>& print);

}  // namespace tl::codegen::cuda
