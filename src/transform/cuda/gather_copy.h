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
  size_t lead = 0;                     ///< leading tile indices the loops do not walk (a stage)
};

/// Forms of gather copies beyond the plain one that a caller accepts.
struct GatherForms {
  /// The tile may have leading dimensions the loops do not walk, indexed by expressions of
  /// no loop variable (`S[stage, i, d]`, a stage the program picks).
  bool leading_indices = false;
  /// Guards nested in guards (`if_then_else(a, if_then_else(b, G[...], 0), 0)`: the program's
  /// and guard-global-access's) are one guard, their conjunction.
  bool nested_guards = false;
};

/// `s` as a gather copy, or nullopt with `why` set: a nest of T.Parallel loops from 0 with
/// constant extents around one store into a shared tile indexed by exactly the loop
/// variables, of a load of a plain global tensor of the same dtype whose last index is the
/// innermost variable plus a multiple of 16 bytes' elements, that variable appearing nowhere
/// else; the innermost extent and the tensor's last dimension hold whole 16-byte groups.
std::optional<GatherCopy> MatchGatherCopy(const ir::Stmt& s, std::string* why, GatherForms forms = {});

/// How LowerGatherCopy issues each group.
struct GatherIssue {
  GatherForms forms;  ///< the forms the copy was matched with
  /// The intrinsic, (dst, src, 16, pred): "cp_async" (the compiler's groups, block-level) or
  /// "ptx_cp_async" (the program's groups: T.Parallel(prefer_async=True)).
  const char* intrinsic = "cp_async";
  /// Under a guard, the source address is the tensor's first element where the guard fails:
  /// the address of a row the guard rules out may itself be out of range (an index read
  /// past its table).
  bool guard_source = false;
};

/// The gather copy `s` (as MatchGatherCopy accepts it) as cp.async of 16 bytes per group,
/// zero-filled where the guard fails, the groups spread over `threads` threads numbered by
/// `tx`. Its accesses stay those of the tile, so a stage can be selected afterwards.
ir::Stmt LowerGatherCopy(const ir::Stmt& s, const ir::VarRef& tx, int64_t threads, GatherIssue issue = {});

}  // namespace tl::transform::cuda
