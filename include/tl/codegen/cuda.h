// SPDX-License-Identifier: Apache-2.0
/// \file CUDA C++ generation: one `extern "C" __global__` kernel per function, plus the
/// launch facts the runtime needs (grid as expressions of the dynamic dimensions, block,
/// dynamic shared memory).
#pragma once

#include <string>
#include <vector>

#include "tl/codegen/cpu.h"
#include "tl/ir/stmt.h"

namespace tl::codegen {

struct CudaSource {
  std::string code;
  std::string entry;
  /// Kernel arguments after the parameters: one per dynamic dimension.
  std::vector<DynamicDim> dynamic_dims;
  std::vector<ir::VarRef> dynamic_vars;
  /// Grid extents (x, y, z), in terms of dynamic_vars.
  std::vector<ir::Expr> grid;
  std::vector<int64_t> block;
  int64_t shared_bytes = 0;
  /// Per launch argument: "ptr", "i32", "i64", "f32" or "f64".
  std::vector<std::string> arg_kinds;
};

/// Generates CUDA for a function lowered by LowerForCuda.
CudaSource GenerateCuda(const ir::PrimFunc& f);

/// The value of `e` once dynamic variables are bound (all of e's variables must be).
int64_t EvalWithBindings(const ir::Expr& e, const std::vector<ir::VarRef>& vars,
                         const std::vector<int64_t>& values);

}  // namespace tl::codegen
