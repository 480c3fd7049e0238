// SPDX-License-Identifier: Apache-2.0
/// \file The threads tile work is spread over (thread_share.h).
#include "thread_share.h"

#include <algorithm>

#include "tl/ir/functor.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

void ThreadShare::Bind(const VarRef& var, int64_t extent) {
  tx_ = part_tx_ = var;
  threads_ = part_threads_ = extent;
}

void ThreadShare::NoteLet(const LetStmt* op) {
  if (OnThread(op->value)) thread_vars_.insert(op->var.get());  // e.g. tx = T.get_thread_binding()
  if (IsThreadIndex(op->value)) aliases_.insert(op->var.get());
}

bool ThreadShare::OnThread(const Expr& e) const {
  return tx_ && UsesVar(e, [&](const Var* v) { return v == tx_.get() || thread_vars_.count(v) > 0; });
}

bool ThreadShare::IsThreadIndex(const Expr& e) const {
  const auto* v = As<Var>(e);
  return v && tx_ && (v == tx_.get() || aliases_.count(v) > 0);
}

Stmt ThreadShare::Branches(const IfThenElse* op, const std::function<Stmt(const Stmt&)>& mutate) {
  auto range = ThreadRangeOf(op->cond, [&](const Expr& e) { return IsThreadIndex(e); }, threads_);
  std::optional<ThreadRange> other;
  if (range) other = ComplementRange(*range, threads_);
  Stmt then_case = InRange(range, op->then_case, mutate);
  Stmt else_case = op->else_case ? InRange(other, op->else_case, mutate) : nullptr;
  return IfThenElse::Make(op->cond, then_case, else_case, op->span);
}

Stmt ThreadShare::InRange(const std::optional<ThreadRange>& range, const Stmt& body,
                          const std::function<Stmt(const Stmt&)>& mutate) {
  VarRef prev = part_tx_;
  int64_t prev_threads = part_threads_;
  int prev_unranged = unranged_;
  bool prev_used = sub_used_;
  // Inside a range already narrowed, work keeps the outer range (a nested condition is
  // one more mask): only the first condition narrows.
  bool narrow = range && part_tx_.get() == tx_.get() && part_threads_ == threads_;
  VarRef sub;
  if (narrow && range->lo > 0) sub = Var::Make(tx_->name + "_in_range", tx_->dtype);
  if (narrow) {
    if (sub) part_tx_ = sub;
    part_threads_ = std::max<int64_t>(range->hi - range->lo, 1);
  } else if (!range) {
    ++unranged_;
  }
  sub_used_ = false;
  Stmt out = mutate(body);
  if (!sub_used_) sub = nullptr;  // nothing was spread over the range's numbers: no let
  sub_used_ = prev_used;
  part_tx_ = prev;
  part_threads_ = prev_threads;
  unranged_ = prev_unranged;
  if (sub) {  // the thread's number within the range: tx - lo
    Stmt let = LetStmt::Make(sub, Binary::Make(BinOp::kSub, tx_, MakeInt(range->lo, tx_->dtype)), body->span);
    out = Seq::Make({let, out}, body->span);
  }
  return out;
}

}  // namespace tl::transform::cuda
