// SPDX-License-Identifier: Apache-2.0
/// \file T.CUDASourceCodeKernel: a kernel launch whose body is hand-written CUDA
/// (hand_written.cc).
#pragma once

#include <string>

#include "tl/codegen/cuda.h"
#include "tl/ir/stmt.h"

namespace tl::codegen::cuda {

/// When `launch_body` is a T.CUDASourceCodeKernel (the AttrStmt whose key is `prefix`, the
/// entry name, a newline and the source), fills `out` with that source as the kernel's code
/// and its entry (an extern "C" __global__ function: the one named, or the only one; else a
/// user error listing the available ones) and returns true; false for any other body.
bool HandWrittenKernel(const ir::Stmt& launch_body, const std::string& prefix, CudaSource* out);

}  // namespace tl::codegen::cuda
