// SPDX-License-Identifier: Apache-2.0
#include "tl/arith/sum_terms.h"

#include "tl/ir/functor.h"

namespace tl::arith {

using namespace ir;  // NOLINT: implementation file

namespace {

void CollectTerms(const Expr& e, bool negated, std::vector<std::pair<bool, Expr>>* out) {
  const auto* b = As<Binary>(e);
  if (b && (b->op == BinOp::kAdd || b->op == BinOp::kSub)) {
    CollectTerms(b->a, negated, out);
    CollectTerms(b->b, b->op == BinOp::kSub ? !negated : negated, out);
    return;
  }
  out->push_back({negated, e});
}

void Append(Expr* sum, bool negated, const Expr& term) {
  if (!*sum) {
    *sum = negated ? Binary::Make(BinOp::kSub, MakeInt(0, term->dtype), term) : term;
  } else {
    *sum = Binary::Make(negated ? BinOp::kSub : BinOp::kAdd, *sum, term);
  }
}

}  // namespace

std::vector<std::pair<bool, Expr>> SumTerms(const Expr& e) {
  std::vector<std::pair<bool, Expr>> out;
  CollectTerms(e, false, &out);
  return out;
}

Expr SumOfTerms(const std::vector<std::pair<bool, Expr>>& terms, DType dtype) {
  Expr sum;
  for (const auto& [negated, t] : terms) Append(&sum, negated, t);
  return sum ? sum : MakeInt(0, dtype);
}

bool LoopArithmetic(const Expr& e, const std::unordered_set<const Var*>& loop_vars) {
  if (As<IntImm>(e)) return true;
  if (const auto* v = As<Var>(e)) return loop_vars.count(v) > 0;
  if (const auto* c = As<Cast>(e)) return LoopArithmetic(c->value, loop_vars);
  const auto* b = As<Binary>(e);
  return b && (b->op == BinOp::kAdd || b->op == BinOp::kSub || b->op == BinOp::kMul) &&
         LoopArithmetic(b->a, loop_vars) && LoopArithmetic(b->b, loop_vars);
}

std::pair<Expr, Expr> SplitLoopTerms(const Expr& e, const std::unordered_set<const Var*>& loop_vars) {
  if (loop_vars.empty()) return {};
  Expr others, loop;
  for (const auto& [negated, t] : SumTerms(e)) {
    Append(!As<IntImm>(t) && LoopArithmetic(t, loop_vars) ? &loop : &others, negated, t);
  }
  if (!others || !loop) return {};
  return {others, loop};
}

std::pair<Expr, Expr> SplitInnerLoopTerms(const Expr& e, const std::vector<const Var*>& loops) {
  std::pair<Expr, Expr> best;
  std::unordered_set<const Var*> inner;
  for (auto it = loops.rbegin(); it != loops.rend() && *it; ++it) {
    inner.insert(*it);
    auto split = SplitLoopTerms(e, inner);
    const Expr& rest = split.first ? split.first : e;
    if (UsesVar(rest, [&](const Var* v) { return inner.count(v) > 0; })) break;
    if (split.first) best = split;
  }
  return best;
}

bool UnrolledLoop(const For& loop) {
  if (loop.for_kind == ForKind::kUnrolled || loop.for_kind == ForKind::kVectorized) return true;
  const auto* trips = As<IntImm>(loop.extent);
  return loop.for_kind == ForKind::kSerial && trips && trips->value <= kUnrolledTrips;
}

}  // namespace tl::arith
