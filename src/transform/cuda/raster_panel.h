// SPDX-License-Identifier: Apache-2.0
/// \file The order a kernel's blocks run in: in panels of a few grid columns, so that the
/// operand tiles a wave of blocks shares stay in L2, or plain. Decided once per launch, by
/// cuda-launch-bounds for the code generator (which prints the panel order) and by a
/// persistent launch (warp_specialize_persistent.cc) for its own tile order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// The panel width of `op`'s blocks (0: the plain order): T.use_swizzle's, else `asked`
/// (tl.raster_panel; -1 when unset), else 8 for 2-D grids of GEMM kernels wider than 8 whose
/// tensors (`tensor_bytes`, -1 unknown) do not fit in the L2 (`l2_bytes`, 0 unknown)
/// together; `remarks` gets the reason when the L2 decides the plain order.
int64_t RasterPanelWidth(const ir::KernelLaunch* op, int64_t asked, int64_t tensor_bytes, int64_t l2_bytes,
                         std::vector<std::string>* remarks);

/// The bytes of `f`'s tensor parameters together; -1 when a shape is not constant.
int64_t TensorBytes(const ir::PrimFunc& f);

}  // namespace tl::transform::cuda
