// SPDX-License-Identifier: Apache-2.0
/// \file T.set_max_nreg (setmaxnreg: a warpgroup's register budget per thread), as
/// cuda-explicit-warp-specialize applies it.
#pragma once

#include <string>

#include "tl/ir/stmt.h"
#include "tl/transform/pass.h"

namespace tl::transform::cuda {

/// The kernel body with each `set_max_nreg(count, inc)` call made warpgroup_reg_alloc /
/// warpgroup_reg_dealloc when `why_not` is empty and the call runs under a branch on the
/// thread index that selects whole warpgroups of the block's `threads` (setmaxnreg is
/// executed by all the warps of a warpgroup alike); every other one is dropped. Each call
/// gets a remark saying which (and why not: `why_not`, or its branch).
ir::Stmt ApplyRegisterBudget(const ir::Stmt& body, int64_t threads, const std::string& why_not, PassContext& ctx);

}  // namespace tl::transform::cuda
