// SPDX-License-Identifier: Apache-2.0
/// \file Each thread's own shared slots (barrier_slots.h).
#include "barrier_slots.h"

#include <cstdlib>
#include <functional>

#include "tl/ir/equal.h"
#include "tl/ir/functor.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

void MergeSlots(SlotAccesses* into, const SlotAccesses& from) {
  for (const auto& [b, list] : from) {
    auto& dst = (*into)[b];
    dst.insert(dst.end(), list.begin(), list.end());
  }
}

void CarrySlots(SlotAccesses* slots, const VarRef& loop) {
  for (auto& [b, list] : *slots) {
    for (SlotAccess& a : list) {
      a.carried = true;
      a.loop = loop;
    }
  }
}

SlotProver::SlotProver(const Var* tx, const ThreadRange& range) : tx_(tx) {
  if (tx_ && range.hi > range.lo) an_.BindBound(tx_, arith::IntBound{range.lo, range.hi - 1});
}

namespace {

/// Calls f(term, negated) for each additive term of e.
void AddTerms(const Expr& e, bool negated, const std::function<void(const Expr&, bool)>& f) {
  const auto* b = As<Binary>(e);
  if (b && (b->op == BinOp::kAdd || b->op == BinOp::kSub)) {
    AddTerms(b->a, negated, f);
    AddTerms(b->b, b->op == BinOp::kSub ? !negated : negated, f);
    return;
  }
  f(e, negated);
}

bool SameIndex(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!StructuralEqual(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

bool SlotProver::Independent(const SlotAccess& cur, bool cur_write, const SlotAccess& pending, bool pending_write) {
  if (!cur.element || !pending.element || !SameIndex(cur.index, pending.index)) return false;
  if (pending.carried) return pending.loop && DisjointAcrossIterations(pending.index, pending.loop);
  // The same iteration: a read of the slot this thread wrote.
  if (cur_write || !pending_write) return false;
  bool on_thread = false;
  for (const Expr& e : cur.index) on_thread = on_thread || UsesVar(e, [&](const Var* v) { return v == tx_; });
  return on_thread;
}

bool SlotProver::DisjointAcrossIterations(const std::vector<Expr>& index, const VarRef& loop) {
  const Var* lv = loop.get();
  for (const Expr& e : index) {
    if (!UsesVar(e, [&](const Var* v) { return v == lv; })) continue;
    // e = c v + rest: c from one step of v, rest without v
    Expr v = loop;
    Expr next = Substitute(e, [&](const Var* u) -> Expr { return u == lv ? v + MakeInt(1, loop->dtype) : nullptr; });
    int64_t c = 0;
    if (!AsConstInt(an_.Simplify(next - e), &c) || c == 0) continue;
    Expr rest = an_.Simplify(e - MakeInt(c, loop->dtype) * v);
    if (UsesVar(rest, [&](const Var* u) { return u == lv; })) continue;
    // Terms of the loops around v are the same in both iterations: what may differ is the
    // sum of the other terms (the thread index's, the inner loops').
    auto entered = order_.find(lv);
    auto fixed = [&](const Var* u) {
      auto o = order_.find(u);
      return entered != order_.end() && o != order_.end() && o->second < entered->second;
    };
    Expr varying;
    AddTerms(rest, false, [&](const Expr& term, bool negated) {
      bool moves = UsesVar(term, [&](const Var* u) { return !fixed(u); });
      if (!moves) return;
      Expr t = negated ? MakeInt(0, term->dtype) - term : term;
      varying = varying ? varying + t : t;
    });
    if (!varying) return true;  // each iteration's slot of this dimension is one value: c apart
    arith::IntBound b = an_.Bound(varying);
    if (b.min && b.max && *b.max - *b.min < std::llabs(c)) return true;
  }
  return false;
}

}  // namespace tl::transform::cuda
