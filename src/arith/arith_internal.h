// SPDX-License-Identifier: Apache-2.0
/// \file Internals shared by the arithmetic sources: checked integer helpers, the linear
/// form used to canonicalise sums, and the expression rewriter behind Analyzer::Simplify.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/expr.h"

namespace tl::arith::detail {

// ---- integer helpers --------------------------------------------------------------------

/// Python-style floor division; b != 0 and not (a == INT64_MIN && b == -1).
inline int64_t FloorDivInt(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
/// Python-style modulo (sign of the divisor); b != 0.
inline int64_t FloorModInt(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
/// Greatest common divisor of |a| and |b| (gcd(0, 0) == 0).
int64_t Gcd(int64_t a, int64_t b);
/// Whether `v` is representable in the integer type `t` (any width up to 64).
bool FitsIn(ir::DType t, int64_t v);
/// Checked arithmetic: false on int64 overflow.
inline bool CheckedAdd(int64_t a, int64_t b, int64_t* out) { return !__builtin_add_overflow(a, b, out); }
inline bool CheckedMul(int64_t a, int64_t b, int64_t* out) { return !__builtin_mul_overflow(a, b, out); }
/// Signed integer types of any width get the full canonical treatment.
inline bool IsSignedInt(ir::DType t) { return t.code == ir::DType::kInt; }

// ---- linear form ------------------------------------------------------------------------

/// sum(coeff_i * term_i) + constant over one integer dtype. Terms keep the order in which
/// they first appeared, so the output is deterministic and close to what the user wrote.
struct LinearForm {
  std::vector<std::pair<ir::Expr, int64_t>> terms;
  int64_t constant = 0;
  bool overflow = false;  ///< a coefficient left int64 (or parsing gave up); do not use

  void AddConst(int64_t c);
  /// Adds c * t, merging with a structurally equal term.
  void AddTerm(const ir::Expr& t, int64_t c);
  void AddForm(const LinearForm& o, int64_t scale);
  /// Drops zero coefficients.
  void Compact();
  bool IsConst() const { return terms.empty(); }
  /// Whether every coefficient and the constant fit in `t`.
  bool FitsIn(ir::DType t) const;

 private:
  // Shallow structural hash -> term index, so that merging a term does not compare it
  // against every other term. Terms appended directly to `terms` are indexed lazily.
  std::unordered_multimap<size_t, size_t> index_;
  size_t indexed_ = 0;
};

/// A hash of the top few levels of an expression: structurally equal expressions get
/// equal hashes (variables and buffers hash by identity).
size_t ShallowHash(const ir::Expr& e, int depth = 3);

/// Reads an already-simplified expression as a linear form (Add/Sub/Mul by a constant are
/// taken apart, anything else is a term).
LinearForm ParseLinear(const ir::Expr& e);
/// Builds the canonical expression: positive terms first, then the subtracted ones, then
/// the constant (`x*4 + y - z*2 + 3`).
ir::Expr BuildLinear(const LinearForm& f, ir::DType t);

// ---- rewriter ---------------------------------------------------------------------------

/// One bottom-up simplification pass over an expression, with the analyzer's bounds.
/// Results are memoised per input node so that shared subtrees (DAGs) cost once.
class Rewriter {
 public:
  explicit Rewriter(const Analyzer* an) : an_(an) {}
  ir::Expr Simplify(const ir::Expr& e);

  // Rules on already-simplified operands (also used by one another).
  ir::Expr RewriteBinary(ir::BinOp op, const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr RewriteLinear(ir::BinOp op, const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr RewriteFloorDiv(const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr RewriteFloorMod(const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr RewriteTruncDivMod(ir::BinOp op, const ir::Expr& a, const ir::Expr& b,
                              const ir::Expr& self);
  ir::Expr RewriteMinMax(ir::BinOp op, const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr RewriteCompare(ir::BinOp op, const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr DropRemainderTerm(ir::BinOp op, LinearForm d, ir::DType t);
  ir::Expr RewriteLogic(ir::BinOp op, const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
  ir::Expr RewriteNot(const ir::Expr& a, const ir::Expr& self);
  ir::Expr RewriteSelect(const ir::Expr& c, const ir::Expr& t, const ir::Expr& f, const ir::Expr& self);
  ir::Expr RewriteCast(ir::DType t, const ir::Expr& v, const ir::Expr& self);
  /// `e` (a widened integer expression) computed in the narrower signed type `t`, or null
  /// when some value on the way may not fit in `t`.
  ir::Expr NarrowTo(ir::DType t, const ir::Expr& e) const;

  /// Bound of a simplified integer expression.
  IntBound BoundOf(const ir::Expr& e) const { return an_->BoundOfSimplified(e); }
  /// a - b as a simplified linear form (overflow flagged in the form).
  LinearForm Diff(const ir::Expr& a, const ir::Expr& b) const;

 private:
  ir::Expr SimplifyUncached(const ir::Expr& e);

  const Analyzer* an_;
  int depth_ = 0;
  std::unordered_map<const ir::ExprNode*, std::pair<ir::Expr, ir::Expr>> memo_;
};

/// a <op> b for two constants, or null when folding is not exact or not defined
/// (division by zero, signed overflow, inexact floating point).
ir::Expr FoldBinary(ir::BinOp op, const ir::Expr& a, const ir::Expr& b);
/// Cast of a constant, or null when not foldable exactly.
ir::Expr FoldCast(ir::DType t, const ir::Expr& v);

/// Interval of sum(c_i * Bound(t_i)) + k.
IntBound BoundOfForm(const Analyzer& an, const LinearForm& f);
/// Whether the floating-point value `v` is exactly representable in the float type `t`.
bool ExactIn(ir::DType t, double v);

/// Reuses `self` when a rebuilt binary node would have the same operands.
ir::Expr Rebuild(ir::BinOp op, const ir::Expr& a, const ir::Expr& b, const ir::Expr& self);
/// `built`, or `self` when that is a node `a <op> b` structurally equal to `built`.
ir::Expr KeepIfSame(const ir::Expr& built, ir::BinOp op, const ir::Expr& a, const ir::Expr& b,
                    const ir::Expr& self);
/// An integer constant of dtype t (bool constants too).
inline ir::Expr Const(ir::DType t, int64_t v) { return ir::IntImm::Make(t, v); }

}  // namespace tl::arith::detail
