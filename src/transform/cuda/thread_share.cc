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
  part_lo_ = 0;
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
  if (range) other = ComplementWithin(*range, ThreadRange{part_lo_, part_lo_ + part_threads_});
  Stmt then_case = InRange(range, op->then_case, mutate);
  Stmt else_case = op->else_case ? InRange(other, op->else_case, mutate) : nullptr;
  return IfThenElse::Make(op->cond, then_case, else_case, op->span);
}

Stmt ThreadShare::InRange(const std::optional<ThreadRange>& range, const Stmt& body,
                          const std::function<Stmt(const Stmt&)>& mutate) {
  VarRef prev = part_tx_;
  int64_t prev_threads = part_threads_, prev_lo = part_lo_;
  int prev_unranged = unranged_;
  bool prev_used = sub_used_;
  // A nested range narrows the enclosing one further (`if tx < 128:` inside the `else` of
  // `if tx < 128:` ... `elif tx < 256:`): work there is spread over the threads both select.
  VarRef sub;
  bool narrowed = false;
  if (range) {
    const int64_t lo = std::max(part_lo_, range->lo), hi = std::min(part_lo_ + part_threads_, range->hi);
    if (hi > lo && (lo != part_lo_ || hi != part_lo_ + part_threads_)) {
      narrowed = true;
      if (lo > 0) sub = Var::Make(tx_->name + "_in_range", tx_->dtype);
      part_tx_ = sub ? sub : tx_;
      part_threads_ = hi - lo;
      part_lo_ = lo;
    }
  } else {
    ++unranged_;
  }
  sub_used_ = false;
  Stmt out = mutate(body);
  const bool used_here = sub_used_;
  const int64_t lo = part_lo_, size = part_threads_;
  part_tx_ = prev;
  part_threads_ = prev_threads;
  part_lo_ = prev_lo;
  unranged_ = prev_unranged;
  // Work here spread over the enclosing range's numbers keeps that range's let needed.
  sub_used_ = prev_used || (!narrowed && used_here);
  if (sub && used_here) {
    // The thread's number within the range: tx - lo, written tx % size when the range starts
    // on a multiple of its size (the same number there, and one the simplifier knows is in
    // [0, size), so divisions of it by powers of two become shifts).
    Expr number = lo % size == 0 ? Binary::Make(BinOp::kFloorMod, tx_, MakeInt(size, tx_->dtype))
                                 : Binary::Make(BinOp::kSub, tx_, MakeInt(lo, tx_->dtype));
    out = Seq::Make({LetStmt::Make(sub, number, body->span), out}, body->span);
  }
  return out;
}

}  // namespace tl::transform::cuda
