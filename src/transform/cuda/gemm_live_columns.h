// SPDX-License-Identifier: Apache-2.0
/// \file The columns of a T.gemm's B that can be non-zero, when a tile is wider than the
/// tensor it is loaded from (upstream's convolution example on Hopper: a 256-column tile of
/// a 128-column weight matrix): the GEMM then needs only those columns.
#pragma once

#include <cstdint>
#include <string>

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// How many leading columns (N) of `op`'s B can hold anything but zero, or B's full N when
/// that is not proven. Proven when B is a whole 2-D shared tile written only by T.copy's
/// from global tensors (whose out-of-range reads give zero: guard-global-access has turned
/// copies with a safe value into loops by then), each copy's N range starting at a
/// non-negative place in a tensor of constant extent E along it: tile column j >= E is then
/// outside the tensor for every block and step. The accumulator C must be written only by
/// fills and GEMMs and read only by copies, so that skipping the zero products changes no
/// value a later step reads differently (C's columns past the result keep their fill: the
/// full GEMM would add A x 0 there, the same unless A holds an infinity or a NaN).
/// `source` is set to the tensor's name when the answer is below N.
int64_t LiveGemmColumns(const ir::Stmt& kernel, const ir::GemmOp* op, std::string* source);

}  // namespace tl::transform::cuda
