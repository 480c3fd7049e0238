// SPDX-License-Identifier: Apache-2.0
/// \file Which threads block-level work is spread over at a point of a CUDA kernel: all of
/// the block's, or, inside a branch on a range of the thread index (`if tx < 128:`; see
/// ../thread_range.h), the range's threads numbered from its first. Used by the passes that
/// spread tile work over threads (cuda-lower-copies, cuda-partition-parallel), so that both
/// treat such branches alike.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_set>

#include "../thread_range.h"
#include "tl/ir/functor.h"
#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

class ThreadShare {
 public:
  /// Entering a thread binding (`var` over `extent` threads); the caller keeps a copy of
  /// the previous state and restores it on leaving.
  void Bind(const ir::VarRef& var, int64_t extent);
  /// Notes a let: one bound to the thread index is an alias of it; one that depends on it
  /// is thread-dependent.
  void NoteLet(const ir::LetStmt* op);

  bool Bound() const { return tx_ != nullptr; }
  const ir::VarRef& Tx() const { return tx_; }
  /// Whether `e` depends on the thread index (directly or through a let).
  bool OnThread(const ir::Expr& e) const;
  /// Whether `e` is exactly the thread index (or an alias).
  bool IsThreadIndex(const ir::Expr& e) const;
  /// Inside a thread-dependent branch that is not a range: block work there is refused.
  bool Unranged() const { return unranged_ > 0; }

  /// The thread number and count to spread a piece of work over (marks the number used).
  const ir::VarRef& Spread() {
    sub_used_ |= part_tx_.get() != tx_.get();
    return part_tx_;
  }
  int64_t SpreadThreads() const { return part_threads_; }

  /// The branches of a thread-dependent `if`, each mutated by `mutate` with the threads
  /// that take it (a range, its complement when that is one range, else unknown).
  ir::Stmt Branches(const ir::IfThenElse* op, const std::function<ir::Stmt(const ir::Stmt&)>& mutate);

 private:
  ir::Stmt InRange(const std::optional<ThreadRange>& range, const ir::Stmt& body,
                   const std::function<ir::Stmt(const ir::Stmt&)>& mutate);

  ir::VarRef tx_, part_tx_;
  int64_t threads_ = 0, part_threads_ = 0;
  int64_t part_lo_ = 0;  ///< the first of the threads work is spread over
  int unranged_ = 0;       ///< depth of thread-dependent branches that are not a range
  bool sub_used_ = false;  ///< work was spread over a range's own thread numbers
  std::unordered_set<const ir::Var*> thread_vars_, aliases_;
};

/// A mutator that tracks the threads work is spread over: lets of the thread index are
/// noted, and thread-dependent branches are walked with the threads that take them. The
/// derived pass binds `share_` to the kernel's thread index and spreads its work with it.
class ThreadShareMutator : public ir::IRMutator {
 protected:
  ir::Stmt Mutate_(const ir::LetStmt* op, const ir::Stmt& self) override {
    share_.NoteLet(op);
    return ir::IRMutator::Mutate_(op, self);
  }
  ir::Stmt Mutate_(const ir::IfThenElse* op, const ir::Stmt& self) override {
    if (!share_.OnThread(op->cond)) return ir::IRMutator::Mutate_(op, self);
    return share_.Branches(op, [&](const ir::Stmt& s) { return Mutate(s); });
  }

  ThreadShare share_;
};

}  // namespace tl::transform::cuda
