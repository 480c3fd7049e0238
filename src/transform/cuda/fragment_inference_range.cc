// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference under branches on the thread index: a GEMM inside
/// `if tx < 128:` / `elif tx < 256:` (upstream's hand warp-specialized kernels, each
/// warpgroup with GEMMs of its own) runs on the threads the branch selects, so its
/// accumulator is laid out over those threads only (layout::ThreadRangeLayout), with the warp
/// split of a block of that many threads. The device GEMMs number their warps modulo the
/// GEMM's own warp count, so the range must start on a multiple of its size; a range that
/// does not is left to the lowering, which refuses the GEMM at its line, and so is a GEMM
/// whose accumulator is also used outside the branch (those threads would not hold it).
#include <algorithm>

#include "fragment_inference_internal.h"
#include "../fragment_uses.h"
#include "tl/support/error.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

void FragmentLayoutInference::Visit_(const LetStmt* op) {
  const auto* v = As<Var>(op->value);
  if (v && (v == tx_ || tx_aliases_.count(v))) {
    tx_aliases_.insert(op->var.get());
  } else if (tx_ && UsesVar(op->value, [&](const Var* u) { return u == tx_ || thread_vars_.count(u) > 0; })) {
    thread_vars_.insert(op->var.get());
  }
  IRVisitor::Visit_(op);
}

void FragmentLayoutInference::Visit_(const IfThenElse* op) {
  auto on_thread = [&](const Var* u) { return u == tx_ || tx_aliases_.count(u) > 0 || thread_vars_.count(u) > 0; };
  if (!tx_ || !UsesVar(op->cond, on_thread)) return IRVisitor::Visit_(op);
  auto is_thread = [&](const Expr& e) {
    const auto* v = As<Var>(e);
    return v && (v == tx_ || tx_aliases_.count(v) > 0);
  };
  std::optional<ThreadRange> then_range = ThreadRangeOf(op->cond, is_thread, block_threads_);
  const bool outer_known = range_known_;
  const std::optional<ThreadRange> outer = range_;
  std::optional<ThreadRange> else_range;
  if (then_range) else_range = ComplementWithin(*then_range, outer.value_or(ThreadRange{0, block_threads_}));
  auto enter = [&](const std::optional<ThreadRange>& r) {
    range_known_ = outer_known && r.has_value();
    if (!range_known_) return;
    ThreadRange o = outer.value_or(ThreadRange{0, block_threads_});
    range_ = ThreadRange{std::max(o.lo, r->lo), std::min(o.hi, r->hi)};
  };
  Visit(op->cond);
  enter(then_range);
  Visit(op->then_case);
  if (op->else_case) {
    enter(else_range);
    Visit(op->else_case);
  }
  range_known_ = outer_known;
  range_ = outer;
}

void FragmentLayoutInference::NoteUseRanges(const Stmt& body) {
  if (!tx_) return;
  use_ranges_ = FragmentUseRanges(body, [&](const Expr& e) { return As<Var>(e) == tx_; }, block_threads_);
}

std::optional<ThreadRange> FragmentLayoutInference::PartialRange() const {
  if (!range_known_ || !range_ || range_->Empty()) return std::nullopt;
  if (range_->lo <= 0 && range_->hi >= block_threads_) return std::nullopt;
  return range_;
}

layout::FragmentLayoutRef FragmentLayoutInference::Held(const layout::FragmentLayoutRef& l) const {
  if (first_thread_ == 0) return l;
  return std::make_shared<layout::ThreadRangeLayout>(l, first_thread_);
}

}  // namespace tl::transform::cuda

namespace tl::transform::cuda {

bool FragmentLayoutInference::UsedOnlyIn(const ir::Buffer& b, const ThreadRange& r) const {
  auto it = use_ranges_.find(b.get());
  return it == use_ranges_.end() || it->second.OnlyIn(r);
}

void FragmentLayoutInference::CheckRangeLayouts() const {
  for (const auto& [b, assigned] : layouts) {
    const layout::FragmentLayout& l = *assigned.layout;
    const ThreadRange held{l.first_thread(), l.first_thread() + l.num_threads()};
    if (held.lo == 0 && held.hi >= block_threads_) continue;
    auto it = use_ranges_.find(b);
    if (it == use_ranges_.end()) continue;
    const FragmentUses& u = it->second;
    if (u.OnlyIn(held)) continue;
    const Span& where = u.one_range ? u.first : u.other;
    TL_USER_ERROR(where) << "fragment " << b->name << " is held by threads " << held.lo << ".." << held.hi - 1
                         << " only (" << assigned.origin << " at line " << assigned.span.line
                         << " lays it out under a branch on the thread index), but this use runs on other "
                            "threads; use it only under that branch, or move its T.gemm out of the branch";
  }
}

}  // namespace tl::transform::cuda
