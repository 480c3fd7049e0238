// SPDX-License-Identifier: Apache-2.0
/// \file The TMA descriptors a CUDA kernel takes as parameters (tensor_maps.cc).
#pragma once

#include <sstream>
#include <string>
#include <unordered_map>

#include "tl/codegen/cuda.h"
#include "tl/ir/stmt.h"

namespace tl::codegen::cuda {

/// One `const __grid_constant__ tl::TmaDescriptor` parameter per distinct
/// tma_descriptor(...) / tma_im2col_descriptor(...) of `f`'s body: appended to `sig`, with the
/// spec the runtime builds it from appended to `out->tma_specs`; `names` maps each call's
/// printed form to its parameter's name (how the body's uses are printed).
void DeclareTensorMaps(const ir::PrimFunc& f, CudaSource* out, std::ostringstream* sig,
                       std::unordered_map<std::string, std::string>* names);

}  // namespace tl::codegen::cuda
