// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA text of the GEMM intrinsics (gemm_intrinsics.cc): mma.sync GEMMs (gemm_ss,
/// gemm_rs, the tf32 one), wgmma GEMMs and their waits. Each prints as a call of the device
/// library's templates (templates/tl/cuda: gemm.h, wgmma.h), the shared operands' layouts
/// as template arguments.
#pragma once

#include <functional>
#include <string>

#include "tl/ir/expr.h"

namespace tl::codegen::cuda {

/// The CUDA expression of `op`, with `print` for its arguments and `shared_layout` for the
/// layout constant of a shared operand's address (tl::kRowMajor, tl::kXorRows,
/// tl::kWgmmaPanels + rows), or "" when `op` is not one of these intrinsics.
std::string PrintGemmCall(const ir::Call* op, const std::function<std::string(const ir::Expr&)>& print,
                          const std::function<std::string(const ir::Expr&)>& shared_layout);

}  // namespace tl::codegen::cuda
