// SPDX-License-Identifier: Apache-2.0
/// \file Thread ranges of conditions (thread_range.h).
#include "thread_range.h"

#include <algorithm>

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
  int64_t c;
  BinOp op = b->op;
  if (is_thread(b->a) && AsConstInt(b->b, &c)) {
    // t op c
  } else if (is_thread(b->b) && AsConstInt(b->a, &c)) {
    // c op t: flip to t op' c
    switch (op) {
      case BinOp::kLT: op = BinOp::kGT; break;
      case BinOp::kLE: op = BinOp::kGE; break;
      case BinOp::kGT: op = BinOp::kLT; break;
      case BinOp::kGE: op = BinOp::kLE; break;
      default: break;
    }
  } else {
    return std::nullopt;
  }
  ThreadRange r{0, threads};
  switch (op) {
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

}  // namespace tl::transform
