// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments" (see lower_fragments.h) under branches on the thread index:
/// which threads each branch runs on, and which register-fragment work may run there (a
/// fragment laid out over exactly those threads, layout::ThreadRangeLayout; anything else
/// spread over all the block's threads is refused, since the threads outside the branch hold
/// part of it).
#include <algorithm>
#include <optional>
#include <vector>

#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "../thread_range.h"
#include "lower_fragments.h"

namespace tl::transform::fragments {

Stmt FragmentRewriter::Mutate_(const IfThenElse* op, const Stmt& self) {
  bool on_thread = UsesVar(op->cond, [&](const Var* v) { return v == tx_.get() || thread_vars_.count(v) > 0; });
  if (!on_thread) return IRMutator::Mutate_(op, self);
  // The threads each branch runs on (ThreadRangeLayout fragments work there).
  auto is_thread = [&](const Expr& e) {
    const auto* v = As<Var>(e);
    return v && (v == tx_.get() || tx_aliases_.count(v));
  };
  const std::optional<RunningThreads> saved = running_;
  const RunningThreads outer = running_.value_or(RunningThreads{true, ThreadRange{0, threads}});
  auto [then_threads, else_threads] = outer.Branches(op->cond, is_thread, threads);
  if (threads <= 0) then_threads.known = else_threads.known = false;  // (the block's size unknown)
  ++thread_branch_;
  Expr cond = Mutate(op->cond);
  running_ = then_threads;
  Stmt then_case = Mutate(op->then_case);
  Stmt else_case;
  if (op->else_case) {
    running_ = else_threads;
    else_case = Mutate(op->else_case);
  }
  running_ = saved;
  --thread_branch_;
  return IfThenElse::Make(cond, then_case, else_case, op->span);
}

Stmt FragmentRewriter::Mutate_(const LetStmt* op, const Stmt& self) {
  const auto* v = As<Var>(op->value);
  if (v && (v == tx_.get() || tx_aliases_.count(v))) tx_aliases_.insert(op->var.get());
  if (UsesVar(op->value, [&](const Var* v) { return v == tx_.get() || thread_vars_.count(v) > 0; })) {
    thread_vars_.insert(op->var.get());
  }
  return IRMutator::Mutate_(op, self);
}

void FragmentRewriter::RefuseUnderThreadBranch(const Stmt& op, const char* what, std::vector<const RegFragment*> frags) {
  if (thread_branch_ == 0) return;
  // Fragments laid out over exactly the threads running this statement.
  bool own_threads = !frags.empty() && running_ && running_->known;
  for (const RegFragment* rf : frags) {
    own_threads &= rf == nullptr || (rf->layout->first_thread() == running_->range.lo &&
                                     rf->layout->first_thread() + rf->layout->num_threads() == running_->range.hi);
  }
  if (own_threads) return;
  TL_USER_ERROR(op->span) << what << " on a register fragment under a condition on the thread index: a fragment is "
                          << "spread over all the block's threads, so the threads that take the branch hold only "
                          << "part of it; move the operation out of the condition";
}

}  // namespace tl::transform::fragments
