// SPDX-License-Identifier: Apache-2.0
/// \file A comparison of an expression with an integer constant, in one orientation
/// (`c < x` read as `x > c`): what thread ranges (transform/thread_range.h) and the
/// statement simplifier's branch bounds read off a condition.
#pragma once

#include <cstdint>
#include <optional>

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

}  // namespace tl::arith
