// SPDX-License-Identifier: Apache-2.0
#include "loop_addresses.h"

#include <vector>

#include "tl/ir/functor.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The terms of a sum, in order, with their signs (true: subtracted).
void Terms(const Expr& e, bool negated, std::vector<std::pair<bool, Expr>>* out) {
  const auto* b = As<Binary>(e);
  if (b && (b->op == BinOp::kAdd || b->op == BinOp::kSub)) {
    Terms(b->a, negated, out);
    Terms(b->b, b->op == BinOp::kSub ? !negated : negated, out);
    return;
  }
  out->push_back({negated, e});
}

/// Arithmetic of constants and loop variables only (no thread index, no loaded value): a
/// term that is a constant once nvcc unrolls the loops.
bool LoopArithmetic(const Expr& e, const std::unordered_set<const Var*>& loop_vars) {
  if (As<IntImm>(e)) return true;
  if (const auto* v = As<Var>(e)) return loop_vars.count(v) > 0;
  if (const auto* c = As<Cast>(e)) return LoopArithmetic(c->value, loop_vars);
  const auto* b = As<Binary>(e);
  return b && (b->op == BinOp::kAdd || b->op == BinOp::kSub || b->op == BinOp::kMul) &&
         LoopArithmetic(b->a, loop_vars) && LoopArithmetic(b->b, loop_vars);
}

void Append(Expr* sum, bool negated, const Expr& term) {
  if (!*sum) {
    *sum = negated ? Binary::Make(BinOp::kSub, MakeInt(0, term->dtype), term) : term;
  } else {
    *sum = Binary::Make(negated ? BinOp::kSub : BinOp::kAdd, *sum, term);
  }
}

}  // namespace

std::pair<Expr, Expr> SplitLoopTerms(const Expr& offset, const std::unordered_set<const Var*>& loop_vars) {
  if (loop_vars.empty()) return {};
  std::vector<std::pair<bool, Expr>> terms;
  Terms(offset, false, &terms);
  Expr base, loop;
  for (const auto& [negated, t] : terms) {
    bool in_loop = !As<IntImm>(t) && LoopArithmetic(t, loop_vars);
    Append(in_loop ? &loop : &base, negated, t);
  }
  if (!base || !loop) return {};
  return {base, loop};
}

}  // namespace tl::codegen::cuda
