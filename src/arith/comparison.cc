// SPDX-License-Identifier: Apache-2.0
/// \file Comparisons with a constant (tl/arith/comparison.h).
#include "tl/arith/comparison.h"

namespace tl::arith {

using namespace ir;  // NOLINT: implementation file

namespace {

/// `c op x` as `x op' c`.
BinOp Mirrored(BinOp op) {
  switch (op) {
    case BinOp::kLT: return BinOp::kGT;
    case BinOp::kLE: return BinOp::kGE;
    case BinOp::kGT: return BinOp::kLT;
    case BinOp::kGE: return BinOp::kLE;
    default: return op;  // == and != read the same both ways
  }
}

}  // namespace

std::optional<ConstComparison> AsConstComparison(const Expr& cond) {
  const auto* b = As<Binary>(cond);
  if (!b || !IsComparison(b->op)) return std::nullopt;
  int64_t c = 0;
  if (AsConstInt(b->b, &c)) return ConstComparison{b->a, b->op, c};
  if (AsConstInt(b->a, &c)) return ConstComparison{b->b, Mirrored(b->op), c};
  return std::nullopt;
}

BinOp NegatedComparison(BinOp op) {
  switch (op) {
    case BinOp::kLT: return BinOp::kGE;
    case BinOp::kLE: return BinOp::kGT;
    case BinOp::kGT: return BinOp::kLE;
    case BinOp::kGE: return BinOp::kLT;
    case BinOp::kEQ: return BinOp::kNE;
    case BinOp::kNE: return BinOp::kEQ;
    default: return op;
  }
}

std::optional<IntBound> NarrowedBound(IntBound b, const ConstComparison& cmp, bool holds) {
  if (cmp.op == BinOp::kNE) return std::nullopt;
  const BinOp op = holds ? cmp.op : NegatedComparison(cmp.op);
  auto raise_min = [&](int64_t lo) { b.min = b.min ? std::max(*b.min, lo) : lo; };
  auto lower_max = [&](int64_t hi) { b.max = b.max ? std::min(*b.max, hi) : hi; };
  switch (op) {
    case BinOp::kLT: lower_max(cmp.c - 1); break;
    case BinOp::kLE: lower_max(cmp.c); break;
    case BinOp::kGT: raise_min(cmp.c + 1); break;
    case BinOp::kGE: raise_min(cmp.c); break;
    case BinOp::kEQ: raise_min(cmp.c); lower_max(cmp.c); break;
    default: return std::nullopt;
  }
  return b;
}

}  // namespace tl::arith
