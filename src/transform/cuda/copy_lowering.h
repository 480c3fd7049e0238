// SPDX-License-Identifier: Apache-2.0
/// \file Thread-partitioned, vectorized lowering of one T.copy between global and shared
/// memory (shared by cuda-lower-copies and cuda-pipeline).
#pragma once

#include "pass_helpers.h"
#include "tl/arith/simplify.h"
#include "tl/ir/stmt.h"
#include "tl/transform/pass.h"

namespace tl::transform::cuda {

/// Annotation on loops whose iterations are spread over the block's threads: each thread
/// runs its own share, so barriers are placed around the loop, never inside it.
inline constexpr const char* kPartitioned = "tl.thread_partitioned";
/// Marks a loop over one thread's registers of a fragment (cuda-lower-fragments): each
/// thread runs it over its own elements, so what it does (an atomic, say) is per thread.
inline constexpr const char* kRegisterWalk = "tl.register_walk";

/// Lowers `op` to a loop over this thread's share of 16/8/4-byte vectors (or elements),
/// with edge predicates. With `async`, global->shared vectors of 4 bytes or more use
/// cp.async (zero-filling reads past the edge). Returns null when the copy is not
/// between global and shared memory of one dtype (the generic loop lowering handles it).
/// Every narrowing of the vector width is recorded in ctx.remarks.
ir::Stmt LowerCopyPartitioned(const ir::CopyOp* op, const ir::VarRef& tx, int64_t threads, bool async,
                              PassContext& ctx);

/// Whether a vector of `v` elements starting at any tile position of `r` (a multiple of
/// v along its last dimension) is contiguous and aligned to its size, and either wholly
/// inside or wholly outside the buffer.
/// `promise` (DynamicAlignment): dynamic sizes promised to be multiples of some number of
/// elements, so that e.g. a row of K elements fits vectors of v when v divides that number.
bool VectorFits(const ir::Region& r, int64_t v, arith::Analyzer& an, const AlignmentPromise& promise = {});

/// Spreads a loop nest over extents across threads: iteration f = it * threads + tx.
ir::Stmt PartitionOverThreads(const std::vector<ir::Expr>& extents, const ir::VarRef& tx, int64_t threads,
                              const Span& span,
                              const std::function<ir::Stmt(const std::vector<ir::Expr>&)>& body);

}  // namespace tl::transform::cuda
