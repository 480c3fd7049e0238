// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the softmax overlap's mask (tl.ws_softmax_mask_skip): a mask
/// added to the scores after Q K^T, `S[l] += cond ? 0 : -inf` (a causal mask, a sequence
/// bound), changes nothing in the steps where its condition holds for every score of the
/// block, which in a causal attention is every step but the diagonal ones. The add then runs
/// under a guard that depends on the block and the step only, true wherever some score may
/// be masked:
///
///   cond:  a - b >= c  (any integer comparison but == and != in that form)
///   a - b = U + P,     U: the terms without the thread index or the register index
///                      P: the others, made of those two indices and constants only
///   guard: U + min(P) < c,  min(P) over every consumer thread and every register
///
/// A value that is zero when several such comparisons all hold (`x >= n or y >= m ? v : 0`,
/// a varlen attention's bounds on both sequences) gets the disjunction of their guards.
/// The guard is conservative: false only where the comparisons provably hold everywhere.
#include <optional>
#include <utility>
#include <vector>

#include "tl/arith/comparison.h"
#include "tl/arith/simplify.h"
#include "tl/arith/sum_terms.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

bool IsFloatZero(const Expr& e) {
  const auto* f = As<FloatImm>(e);
  return f && f->value == 0;
}

bool UsesEither(const Expr& e, const Var* x, const Var* y) {
  return UsesVar(e, [&](const Var* v) { return v == x || v == y; });
}

/// The comparisons that all hold where `cond` is true (`negated`: false), or false when
/// `cond` is not such a conjunction of integer comparisons.
bool ConjunctionOf(const Expr& cond, bool negated, std::vector<std::pair<BinOp, const Binary*>>* out) {
  if (const auto* n = As<Not>(cond)) return ConjunctionOf(n->a, !negated, out);
  const auto* b = As<Binary>(cond);
  if (!b) return false;
  // a and b, or not (a or b): both parts hold
  if ((b->op == BinOp::kAnd && !negated) || (b->op == BinOp::kOr && negated)) {
    return ConjunctionOf(b->a, negated, out) && ConjunctionOf(b->b, negated, out);
  }
  if (!IsComparison(b->op) || !b->a->dtype.IsInt()) return false;
  out->emplace_back(negated ? arith::NegatedComparison(b->op) : b->op, b);
  return true;
}

}  // namespace

/// The guard for one comparison `cmp` (under `op`) that makes the mask zero: true wherever
/// it may fail for some thread and register; null where its form is not the one above.
Expr WarpSpecializer::ComparisonMayFail(BinOp op, const Binary* cmp, const Var* reg, int64_t regs) const {
  Expr d;
  int64_t c = 0;
  switch (op) {
    case BinOp::kGE: d = cmp->a - cmp->b; break;
    case BinOp::kGT: d = cmp->a - cmp->b, c = 1; break;
    case BinOp::kLE: d = cmp->b - cmp->a; break;
    case BinOp::kLT: d = cmp->b - cmp->a, c = 1; break;
    default: return nullptr;
  }
  arith::Analyzer analyzer;
  d = analyzer.Simplify(d);
  std::vector<std::pair<bool, Expr>> uniform, per_thread;
  for (const auto& term : arith::SumTerms(d)) {
    (UsesEither(term.second, tx_.get(), reg) ? per_thread : uniform).push_back(term);
  }
  // (the mask runs in the consumers, threads [0, threads_): the producer warpgroup is above them)
  analyzer.BindRange(tx_.get(), MakeInt(0, tx_->dtype), MakeInt(threads_, tx_->dtype));
  analyzer.BindRange(reg, MakeInt(0, reg->dtype), MakeInt(regs, reg->dtype));
  // P's terms may hold no other variable (a bound would not cover its values)
  for (const auto& [negated, term] : per_thread) {
    bool other = UsesVar(term, [&](const Var* v) { return v != tx_.get() && v != reg; });
    if (other) return nullptr;
  }
  const arith::IntBound least = analyzer.Bound(arith::SumOfTerms(per_thread, d->dtype));
  if (!least.min) return nullptr;
  Expr u = arith::SumOfTerms(uniform, d->dtype);
  return LT(u + MakeInt(*least.min, d->dtype), MakeInt(c, d->dtype));
}

/// The guard above for a mask value (per register `reg` in [0, regs)), or null when the
/// value is not `cond ? 0 : v` / `cond ? v : 0` with such comparisons.
Expr WarpSpecializer::MaskNeeded(const Expr& value, const Var* reg, int64_t regs) const {
  const auto* sel = As<Select>(value);
  if (!sel || IsFloatZero(sel->t) == IsFloatZero(sel->f)) return nullptr;
  // the comparisons under which the value is zero
  std::vector<std::pair<BinOp, const Binary*>> zero_when;
  if (!ConjunctionOf(sel->cond, !IsFloatZero(sel->t), &zero_when)) return nullptr;
  Expr needed;
  for (const auto& [op, cmp] : zero_when) {
    Expr may_fail = ComparisonMayFail(op, cmp, reg, regs);
    if (!may_fail) return nullptr;
    needed = needed ? Binary::Make(BinOp::kOr, needed, may_fail) : may_fail;
  }
  return needed;
}

}  // namespace tl::transform::cuda
