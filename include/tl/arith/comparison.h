// SPDX-License-Identifier: Apache-2.0
/// \file A comparison of an expression with an integer constant, in one orientation
/// (`c < x` read as `x > c`): what thread ranges (transform/thread_range.h) and the
/// statement simplifier's branch bounds read off a condition.
#pragma once

#include <cstdint>
#include <optional>

#include "tl/arith/simplify.h"
#include "tl/ir/expr.h"

namespace tl::arith {

struct ConstComparison {
  ir::Expr operand;  ///< the side that is not the constant
  ir::BinOp op;      ///< kLT, kLE, kGT, kGE, kEQ or kNE, with `operand` on the left
  int64_t c;
};

/// `cond` as `operand op c`, or nullopt when it is not a comparison with a constant.
std::optional<ConstComparison> AsConstComparison(const ir::Expr& cond);

/// The comparison that holds exactly when `op` fails (`<` and `>=`, ...; `==` and `!=`).
ir::BinOp NegatedComparison(ir::BinOp op);

/// `b` narrowed to where `operand op c` holds (holds = true) or fails: `x < 32` lowers x's
/// maximum to 31 where it holds and raises its minimum to 32 where it fails. Nullopt when the
/// comparison says nothing about a range (`!=`, or `==` where it fails).
std::optional<IntBound> NarrowedBound(IntBound b, const ConstComparison& cmp, bool holds);

}  // namespace tl::arith
