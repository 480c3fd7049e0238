// SPDX-License-Identifier: Apache-2.0
/// \file tl.loop_terms_apart in the CUDA code generator: the address of a buffer element
/// inside loops printed as the address the loops start from plus the loop terms,
/// `(&KV_shared[base]) + (u * 4096)` rather than `&KV_shared[base + u * 4096]`. nvcc hoists
/// each unrolled step's whole address out of an enclosing loop as a register of its own
/// (upstream's seesaw sparse MLA producer: 72 cp.async destinations, spilled at its 72
/// registers), where the split form gives one register plus immediate offsets, as
/// upstream's generated code gets ([R41+0x2000]). Checked on the CPU machine in SASS
/// (nvdisasm); off until measured on a GPU.
#pragma once

#include <unordered_set>
#include <utility>

#include "tl/ir/expr.h"

namespace tl::codegen::cuda {

/// An element offset as (base, loop part): the loop part is the terms of its sum that are
/// arithmetic of `loop_vars` and constants alone (`u * 4096`, constants once the loops
/// unroll), the base the others (the thread's offset, a row read from an index tensor),
/// each a sum again, in their order. Both null unless both parts have terms.
std::pair<ir::Expr, ir::Expr> SplitLoopTerms(const ir::Expr& offset,
                                             const std::unordered_set<const ir::Var*>& loop_vars);

}  // namespace tl::codegen::cuda
