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

/// One TMA tensor map the kernel takes as a `const __grid_constant__` parameter (after
/// the dynamic dimensions), built by the runtime at launch from a tensor argument.
struct TmaSpec {
  int tensor_arg = 0;   ///< launch argument (parameter index) of the tensor
  int data_type = 0;    ///< CUtensorMapDataType
  int elem_bytes = 0;
  std::vector<int64_t> dims;  ///< innermost first; v < 0 is launch argument -(v + 1)
  std::vector<int64_t> box;   ///< innermost first
  int swizzle = 0;            ///< CUtensorMapSwizzle
  /// Empty for a tiled map. An im2col map (cuTensorMapEncodeIm2col, 4-D NHWC): channels
  /// per pixel, pixels per column, traversal stride, lower corner W, H, upper corner W, H.
  std::vector<int64_t> im2col;
};

struct CudaSource {
  std::string code;
  std::string entry;
  /// Kernel arguments after the parameters: one per dynamic dimension.
  std::vector<DynamicDim> dynamic_dims;
  std::vector<ir::VarRef> dynamic_vars;
  /// Grid extents (x, y, z), in terms of dynamic_vars and the scalar parameters of
  /// grid_params (e.g. T.ceildiv(max_seqlen, block_M) of a varlen kernel).
  std::vector<ir::Expr> grid;
  /// Indices of the scalar parameters the grid reads, and their variables.
  std::vector<int> grid_params;
  std::vector<ir::VarRef> grid_param_vars;
  std::vector<int64_t> block;
  int64_t shared_bytes = 0;
  /// Per launch argument: "ptr", "i32", "i64", "f32" or "f64".
  std::vector<std::string> arg_kinds;
  /// Tensor-map parameters, after the arguments of arg_kinds.
  std::vector<TmaSpec> tma_specs;
  /// The kernel waits for the previous grid itself (T.pdl_sync, griddepcontrol.wait): it is
  /// launched with programmatic stream serialization allowed, so it may start while the
  /// previous kernel in the stream is still running (upstream's rule).
  bool programmatic_launch = false;
};

/// Generates CUDA for a function lowered by LowerForCuda.
CudaSource GenerateCuda(const ir::PrimFunc& f);

/// The device library's conversion of two elements at a time from `from` to `to`
/// (tl/cuda/pair_convert.h: one packed instruction per pair), as generated code names it;
/// empty when there is none. Code generation uses it for tl::cast_copy and convert_pair
/// (the pass cuda-pair-conversions asks it which element casts to pair up).
std::string CudaPairConversion(ir::DType from, ir::DType to);

/// The value of `e` once dynamic variables are bound (all of e's variables must be).
int64_t EvalWithBindings(const ir::Expr& e, const std::vector<ir::VarRef>& vars,
                         const std::vector<int64_t>& values);

}  // namespace tl::codegen
