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
///   guard: U + min(P) < c,  min(P) over every thread of the block and every register
///
/// The guard is conservative: false only where the comparison provably holds everywhere.
#include <optional>

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

}  // namespace

/// The guard above for a mask value (per register `reg` in [0, regs)), or null when the
/// value is not `cond ? 0 : v` / `cond ? v : 0` with such a comparison.
Expr WarpSpecializer::MaskNeeded(const Expr& value, const Var* reg, int64_t regs) const {
  const auto* sel = As<Select>(value);
  if (!sel || IsFloatZero(sel->t) == IsFloatZero(sel->f)) return nullptr;
  const auto* cmp = As<Binary>(sel->cond);
  if (!cmp || !IsComparison(cmp->op) || !cmp->a->dtype.IsInt()) return nullptr;
  // the comparison under which the value is zero, as d >= c
  const BinOp zero_when = IsFloatZero(sel->t) ? cmp->op : arith::NegatedComparison(cmp->op);
  Expr d;
  int64_t c = 0;
  switch (zero_when) {
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
  analyzer.BindRange(tx_.get(), MakeInt(0, tx_->dtype), MakeInt(threads_ + kProducerThreads, tx_->dtype));
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

}  // namespace tl::transform::cuda
