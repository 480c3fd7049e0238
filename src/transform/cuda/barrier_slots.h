// SPDX-License-Identifier: Apache-2.0
/// \file Which shared accesses need no barrier between them although they touch the same
/// buffer (cuda-insert-barriers): each thread's own slots.
///
/// An element access `S[i, j]` whose index names the thread index touches the slot the
/// thread computes. Two such accesses by the index expression (structurally equal):
///  - a read after the same thread's write of that slot, with no loop iteration between
///    them, reads the thread's own write (another thread writing the same slot races with
///    it whether or not a barrier separates them: the program's own race, as upstream's
///    barrier analysis also takes it);
///  - accesses from different iterations of a loop (what one iteration leaves pending when
///    the next begins) touch disjoint slots when one dimension of the index is c v + r with
///    r, over every thread of the range and every value of the inner loops, spanning fewer
///    than |c| values: `is_kv_valid[stage, r * 16 + tx // 8]` in upstream's sparse MLA
///    producer, whose iterations write 16 slots each.
/// Everything else (other indices, whole-tile and intrinsic accesses, a write after a read
/// of the same slot) keeps its barrier.
#pragma once

#include <unordered_map>
#include <vector>

#include "../thread_range.h"
#include "tl/arith/simplify.h"
#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// One access of a shared buffer: an element access with its index, or an opaque one (a
/// tile operation, an intrinsic's address). `loop` / `carried`: it comes from an earlier
/// iteration of that loop (a while loop: `loop` null).
struct SlotAccess {
  std::vector<ir::Expr> index;
  bool element = false;
  bool carried = false;
  ir::VarRef loop;
};
using SlotAccesses = std::unordered_map<const ir::BufferNode*, std::vector<SlotAccess>>;

/// Adds `from` to `into`.
void MergeSlots(SlotAccesses* into, const SlotAccesses& from);
/// Marks every access as from an earlier iteration of `loop` (null: a while loop).
void CarrySlots(SlotAccesses* slots, const ir::VarRef& loop);

class SlotProver {
 public:
  /// `tx`: the thread index, over the threads of `range`.
  SlotProver(const ir::Var* tx, const ThreadRange& range);
  /// Records a loop's range, in the order loops are entered: in a proof across iterations of
  /// loop v, the loops entered before v (around it) are fixed, those inside vary over theirs.
  void BindLoop(const ir::Var* v, const ir::Expr& min, const ir::Expr& extent) {
    an_.BindRange(v, min, extent);
    order_.emplace(v, static_cast<int>(order_.size()));
  }
  /// Whether `cur` (a read unless `cur_write`) needs no barrier after `pending` (a write
  /// unless... `pending_write`) of the same buffer.
  bool Independent(const SlotAccess& cur, bool cur_write, const SlotAccess& pending, bool pending_write);

 private:
  bool DisjointAcrossIterations(const std::vector<ir::Expr>& index, const ir::VarRef& loop);
  const ir::Var* tx_;
  arith::Analyzer an_;
  std::unordered_map<const ir::Var*, int> order_;  ///< loops in the order they were entered
};

}  // namespace tl::transform::cuda
