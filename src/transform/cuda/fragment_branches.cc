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
  ThreadRange all{0, threads};
  std::optional<ThreadRange> then_range = threads > 0 ? ThreadRangeOf(op->cond, is_thread, threads) : std::nullopt;
  bool outer_known = range_known_;
  std::optional<ThreadRange> outer = range_;
  std::optional<ThreadRange> else_range;
  if (then_range) else_range = ComplementWithin(*then_range, outer.value_or(all));
  auto enter = [&](const std::optional<ThreadRange>& r) {
    range_known_ = outer_known && r.has_value();
    if (range_known_) {
      ThreadRange o = outer.value_or(all);
      range_ = ThreadRange{std::max(o.lo, r->lo), std::min(o.hi, r->hi)};
    }
  };
  ++thread_branch_;
  Expr cond = Mutate(op->cond);
  enter(then_range);
  Stmt then_case = Mutate(op->then_case);
  Stmt else_case;
  if (op->else_case) {
    enter(else_range);
    else_case = Mutate(op->else_case);
  }
  range_known_ = outer_known;
  range_ = outer;
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
  bool own_threads = !frags.empty() && range_known_ && range_;
  for (const RegFragment* rf : frags) {
    own_threads &= rf == nullptr || (rf->layout->first_thread() == range_->lo &&
                                     rf->layout->first_thread() + rf->layout->num_threads() == range_->hi);
  }
  if (own_threads) return;
  TL_USER_ERROR(op->span) << what << " on a register fragment under a condition on the thread index: a fragment is "
                          << "spread over all the block's threads, so the threads that take the branch hold only "
                          << "part of it; move the operation out of the condition";
}

}  // namespace tl::transform::fragments
