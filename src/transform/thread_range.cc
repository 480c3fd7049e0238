// SPDX-License-Identifier: Apache-2.0
/// \file Thread ranges of conditions (thread_range.h).
#include "thread_range.h"

#include <algorithm>

#include "tl/arith/comparison.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

std::optional<ThreadRange> ThreadRangeOf(const Expr& cond, const std::function<bool(const Expr&)>& is_thread,
                                         int64_t threads) {
  const auto* b = As<Binary>(cond);
  if (!b) return std::nullopt;
  if (b->op == BinOp::kAnd) {
    auto l = ThreadRangeOf(b->a, is_thread, threads), r = ThreadRangeOf(b->b, is_thread, threads);
    if (!l || !r) return std::nullopt;
    return ThreadRange{std::max(l->lo, r->lo), std::min(l->hi, r->hi)};
  }
  auto cmp = arith::AsConstComparison(cond);
  if (!cmp || !is_thread(cmp->operand)) return std::nullopt;
  const int64_t c = cmp->c;
  ThreadRange r{0, threads};
  switch (cmp->op) {
    case BinOp::kLT: r.hi = c; break;
    case BinOp::kLE: r.hi = c + 1; break;
    case BinOp::kGT: r.lo = c + 1; break;
    case BinOp::kGE: r.lo = c; break;
    case BinOp::kEQ: r = {c, c + 1}; break;
    default: return std::nullopt;
  }
  r.lo = std::clamp<int64_t>(r.lo, 0, threads);
  r.hi = std::clamp<int64_t>(r.hi, 0, threads);
  return r;
}

std::optional<ThreadRange> ComplementRange(const ThreadRange& r, int64_t threads) {
  if (r.lo <= 0) return ThreadRange{std::max<int64_t>(r.hi, 0), threads};
  if (r.hi >= threads) return ThreadRange{0, r.lo};
  return std::nullopt;
}

std::optional<ThreadRange> ComplementWithin(const ThreadRange& r, const ThreadRange& outer) {
  const int64_t lo = std::max(r.lo, outer.lo), hi = std::min(r.hi, outer.hi);
  if (hi <= lo) return outer;  // r selects none of outer's threads
  if (lo <= outer.lo) return ThreadRange{hi, outer.hi};
  if (hi >= outer.hi) return ThreadRange{outer.lo, lo};
  return std::nullopt;
}

std::optional<int64_t> NamedBarrierThreads(const Stmt& s, int64_t block_threads) {
  const auto* ev = As<Evaluate>(s);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  if (!call) return std::nullopt;
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("named_barrier_sync_all"))) return block_threads;
  if (!IsIntrinsic(call, TL_INTRINSIC_NAME("named_barrier_sync")) || call->args.size() != 2) return std::nullopt;
  int64_t count = 0;
  return AsConstInt(call->args[1], &count) ? count : -1;
}

std::pair<RunningThreads, RunningThreads> RunningThreads::Branches(
    const Expr& cond, const std::function<bool(const Expr&)>& is_thread, int64_t threads) const {
  const std::optional<ThreadRange> then_range = ThreadRangeOf(cond, is_thread, threads);
  const std::optional<ThreadRange> else_range = then_range ? ComplementWithin(*then_range, range) : std::nullopt;
  auto within = [&](const std::optional<ThreadRange>& r) {
    if (!known || !r) return RunningThreads{false, range};
    return RunningThreads{true, ThreadRange{std::max(range.lo, r->lo), std::min(range.hi, r->hi)}};
  };
  return {within(then_range), within(else_range)};
}

}  // namespace tl::transform
