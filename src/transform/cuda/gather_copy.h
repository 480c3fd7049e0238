// SPDX-License-Identifier: Apache-2.0
/// \file Element copies into shared tiles that cp.async can do 16 bytes at a time, written as
/// T.Parallel nests rather than T.copy: `S[i, d] = G[b, Idx[b, i], d + c]` (the rows of G
/// that an index tensor names: the sparse attention kernels' gathers), possibly guarded as
/// guard-global-access leaves them (`if_then_else(row ok, G[...], 0)`). cuda-pipeline
/// prefetches them like T.copy producers when "tl.enable_gather_pipeline" is set.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

struct GatherCopy {
  const ir::For* nest = nullptr;       ///< the statement: the outermost loop
  std::vector<const ir::For*> loops;   ///< outermost first; the last runs along rows
  const ir::BufferStore* store = nullptr;
  const ir::BufferLoad* load = nullptr;
  ir::Expr cond;                       ///< the guard (zero-fill where false), or null
  int64_t vec = 0;                     ///< elements per 16-byte group
};

/// `s` as a gather copy, or nullopt with `why` set: a nest of T.Parallel loops from 0 with
/// constant extents around one store into a shared tile indexed by exactly the loop
/// variables, of a load of a plain global tensor of the same dtype whose last index is the
/// innermost variable plus a multiple of 16 bytes' elements, that variable appearing nowhere
/// else; the innermost extent and the tensor's last dimension hold whole 16-byte groups.
std::optional<GatherCopy> MatchGatherCopy(const ir::Stmt& s, std::string* why);

/// The gather copy `s` (as MatchGatherCopy accepts it) as cp.async of 16 bytes per group,
/// zero-filled where the guard fails, the groups spread over `threads` threads numbered by
/// `tx`. Its accesses stay those of the tile, so a stage can be selected afterwards.
ir::Stmt LowerGatherCopy(const ir::Stmt& s, const ir::VarRef& tx, int64_t threads);

}  // namespace tl::transform::cuda
