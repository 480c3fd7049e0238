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

}  // namespace tl::arith
