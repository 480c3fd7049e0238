// SPDX-License-Identifier: Apache-2.0
/// \file C++ source generation for the CPU target.
///
/// The entry point is `extern "C" int32_t <name>(const TLArg* args)`: one TLArg per
/// parameter (a data pointer for tensors, the value for scalars), followed by one per
/// dynamic dimension, in the order of `dynamic_dims`.
#pragma once

#include <string>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::codegen {

/// Where the runtime reads a dynamic dimension from: params[param].shape[dim], or with
/// `stride` set, the stride (in elements) of that dimension (a T.StridedTensor's symbolic
/// stride).
struct DynamicDim {
  std::string name;
  int param;
  int dim;
  bool stride = false;
};

struct CpuSource {
  std::string code;
  std::string entry;
  std::vector<DynamicDim> dynamic_dims;
};

/// Generates C++ for a function lowered by LowerForCpu (no tile ops left).
CpuSource GenerateCpu(const ir::PrimFunc& f);

/// The C++ spelling of a dtype in generated code ("float", "tl::half", "int32_t").
std::string CType(ir::DType t);

/// The device library's stochastic rounding of one float to `t` (templates/tl/stochastic_round.h),
/// named as upstream TileLang's helper: `__tl_cvt_f32x1_to_<format>x1_rs_sat`.
std::string StochasticRoundingHelper(ir::DType t);

}  // namespace tl::codegen
