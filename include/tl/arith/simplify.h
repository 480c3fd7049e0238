// SPDX-License-Identifier: Apache-2.0
/// \file Arithmetic simplification and bound analysis on integer index expressions.
///
/// Simplify folds constants, puts sums and products of integers in a canonical form
/// (constants last, like terms merged: `x*4 + 2 + x*4` -> `x*8 + 2`), simplifies
/// floordiv/floormod by constants when bounds allow (`(x*8 + y) // 8` -> `x` for y in [0, 8)),
/// and proves comparisons from variable ranges, so guards that always hold can be dropped.
///
/// Floor division/modulo follow Python semantics for negative values; floating-point
/// expressions are only folded where the result is exact (never reassociated).
/// Everything is polynomial in the expression size, so it is safe on the compile path.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "tl/ir/stmt.h"

namespace tl::arith {

/// Inclusive integer interval; nullopt ends mean unbounded.
struct IntBound {
  std::optional<int64_t> min, max;
  bool IsConst() const { return min && max && *min == *max; }
};

/// Holds known variable ranges and answers questions about expressions.
class Analyzer {
 public:
  /// Records that v is in [min, min + extent) (loop ranges). Non-constant ends are
  /// bounded through their own bounds where known.
  void BindRange(const ir::Var* v, const ir::Expr& min, const ir::Expr& extent);
  /// Records v in [lo, hi] (inclusive).
  void BindBound(const ir::Var* v, IntBound b);
  /// Forgets a variable (when leaving its scope).
  void Unbind(const ir::Var* v);

  /// Simplified, equivalent expression.
  ir::Expr Simplify(const ir::Expr& e);
  /// True when the (bool) expression holds for every value of the bound variables.
  bool CanProve(const ir::Expr& cond);
  /// Interval containing every value the integer expression can take.
  IntBound Bound(const ir::Expr& e);
  /// Like Bound, but takes `e` as it is (cheaper when `e` is already simplified).
  IntBound BoundOfSimplified(const ir::Expr& e) const;
  /// The recorded bound of `v`, if any (lets callers restore it after shadowing).
  std::optional<IntBound> VarBound(const ir::Var* v) const;

 private:
  std::unordered_map<const ir::Var*, IntBound> bounds_;
};

/// Simplifies every expression of a statement, using the ranges of enclosing loops and
/// block indices; removes ifs whose condition is provably true or false and loops of
/// extent 0 or 1 (a loop of extent 1 binds its variable to `min`).
ir::Stmt Simplify(const ir::Stmt& s);

}  // namespace tl::arith
