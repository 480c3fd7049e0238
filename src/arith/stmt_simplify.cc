// SPDX-License-Identifier: Apache-2.0
/// \file Statement-level Simplify: simplifies every expression under the ranges of the
/// enclosing loops, block indices and let-bindings, and removes control flow that the
/// ranges decide (provable ifs, loops of extent 0 or 1).
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "tl/arith/comparison.h"
#include "tl/arith/simplify.h"
#include "tl/ir/equal.h"
#include "tl/ir/functor.h"

namespace tl::arith {

using ir::Expr;
using ir::Stmt;

namespace {

bool IsEmpty(const Stmt& s) {
  auto* seq = ir::As<ir::Seq>(s);
  return !s || (seq && seq->stmts.empty());
}

Stmt Empty(const Span& span) { return ir::Seq::Make({}, span); }

/// Whether `body` holds a `break` or `continue` of the loop around it (one not inside a
/// nested loop): such a loop cannot be replaced by its body, even when it runs once.
class LoopExitFinder : public ir::IRVisitor {
 public:
  bool found = false;

 protected:
  void Visit_(const ir::Break*) override { found = true; }
  void Visit_(const ir::Continue*) override { found = true; }
  void Visit_(const ir::For*) override {}
  void Visit_(const ir::While*) override {}
};

bool HasLoopExit(const Stmt& body) {
  LoopExitFinder f;
  f.Visit(body);
  return f.found;
}

/// Replaces one variable (by identity) with an expression.
class VarReplacer : public ir::IRMutator {
 public:
  VarReplacer(const ir::Var* var, Expr value) : var_(var), value_(std::move(value)) {}

 protected:
  Expr Mutate_(const ir::Var* op, const Expr& self) override { return op == var_ ? value_ : self; }

 private:
  const ir::Var* var_;
  Expr value_;
};

class StmtSimplifier : public ir::IRMutator {
 public:
  using IRMutator::Mutate;
  /// A variable and its bound before a scope narrowed or rebound it.
  using Saved = std::pair<const ir::Var*, std::optional<IntBound>>;
  Expr Mutate(const Expr& e) override { return e ? an_.Simplify(e) : e; }

 protected:
  Stmt Mutate_(const ir::For* op, const Stmt& self) override {
    Expr min = Mutate(op->min), extent = Mutate(op->extent);
    if (auto* n = ir::As<ir::IntImm>(extent)) {
      if (n->value <= 0) return Empty(op->span);
      // A pipelined loop keeps its structure: the pipeliner needs the loop, even of one
      // step. So does a T.Parallel loop: it names a tile dimension, and layout inference
      // matches fragment indices to the nest's variables.
      if (n->value == 1 && op->for_kind != ir::ForKind::kPipelined && op->for_kind != ir::ForKind::kParallel &&
          !HasLoopExit(op->body)) {
        return Mutate(VarReplacer(op->var.get(), min).Mutate(op->body));
      }
    }
    Saved saved = Save(op->var.get());
    an_.BindRange(op->var.get(), min, extent);
    // a loop that binds a variable again (a copied body) shadows what was known of it
    std::vector<Expr> known = known_;
    known_.erase(std::remove_if(known_.begin(), known_.end(),
                                [&](const Expr& k) { return ir::UsesVar(k, [&](const ir::Var* v) { return v == op->var.get(); }); }),
                 known_.end());
    Stmt body = Mutate(op->body);
    known_ = std::move(known);
    Restore(saved);
    if (IsEmpty(body)) return Empty(op->span);
    if (min == op->min && extent == op->extent && body == op->body) return self;
    return ir::For::Make(op->var, min, extent, op->for_kind, body, op->annotations, op->span);
  }

  Stmt Mutate_(const ir::KernelLaunch* op, const Stmt& self) override {
    bool changed = false;
    std::vector<Expr> grid = MutateAll(op->grid, &changed);
    std::vector<Saved> saved;
    for (size_t i = 0; i < op->block_vars.size() && i < grid.size(); ++i) {
      const ir::Var* v = op->block_vars[i].get();
      saved.push_back(Save(v));
      an_.BindRange(v, ir::IntImm::Make(grid[i]->dtype, 0), grid[i]);
    }
    Stmt body = Mutate(op->body);
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) Restore(*it);
    if (!changed && body == op->body) return self;
    return ir::KernelLaunch::Make(std::move(grid), op->block_vars, op->threads, body, op->span);
  }

  Stmt Mutate_(const ir::IfThenElse* op, const Stmt& self) override {
    Expr cond = Mutate(op->cond);
    if (auto* k = ir::As<ir::IntImm>(cond)) {
      if (k->value != 0) return Mutate(op->then_case);
      return op->else_case ? Mutate(op->else_case) : Empty(op->span);
    }
    // The same test again inside its own then-branch (an edge guard next to the user's or a
    // view's guard of the same index) holds there.
    if (Known(cond)) return Mutate(op->then_case);
    size_t known_before = known_.size();
    if (!ReadsMemory(cond)) AddKnown(cond);
    std::vector<Saved> narrowed;
    Narrow(cond, true, &narrowed);
    Stmt then_case = Mutate(op->then_case);
    RestoreAll(&narrowed);
    known_.resize(known_before);
    Stmt else_case = nullptr;
    if (op->else_case) {
      Narrow(cond, false, &narrowed);
      else_case = Mutate(op->else_case);
      RestoreAll(&narrowed);
    }
    if (else_case && IsEmpty(else_case)) else_case = nullptr;
    if (IsEmpty(then_case)) {
      // Conditions are pure, so an if with nothing to do goes away.
      if (!else_case) return Empty(op->span);
      return ir::IfThenElse::Make(an_.Simplify(ir::Not::Make(cond)), else_case, nullptr, op->span);
    }
    if (cond == op->cond && then_case == op->then_case && else_case == op->else_case) return self;
    return ir::IfThenElse::Make(cond, then_case, else_case, op->span);
  }

  Stmt Mutate_(const ir::While* op, const Stmt& self) override {
    Expr cond = Mutate(op->cond);
    if (auto* k = ir::As<ir::IntImm>(cond); k && k->value == 0) return Empty(op->span);
    Stmt body = Mutate(op->body);
    if (cond == op->cond && body == op->body) return self;
    return ir::While::Make(cond, body, op->span);
  }

  Stmt Mutate_(const ir::Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    std::vector<Saved> saved;
    bool changed = false;
    for (const Stmt& s : op->stmts) {
      Stmt m = Mutate(s);
      changed |= m != s;
      if (IsEmpty(m)) {
        changed = true;
        continue;
      }
      // A let is in scope until the end of this Seq: its value's bound holds there.
      if (auto* let = ir::As<ir::LetStmt>(m); let && let->var->dtype.IsInt()) {
        saved.push_back(Save(let->var.get()));
        an_.BindBound(let->var.get(), an_.BoundOfSimplified(let->value));
      }
      out.push_back(std::move(m));
    }
    for (auto it = saved.rbegin(); it != saved.rend(); ++it) Restore(*it);
    if (!changed) return self;
    return ir::Seq::Make(std::move(out), op->span);
  }

 private:
  /// Conditions that hold where the mutator is (the tests of enclosing then-branches, split
  /// at their top-level `and`s); only ones that read no memory, which statements in between
  /// could change.
  std::vector<Expr> known_;

  void AddKnown(const Expr& c) {
    if (const auto* b = ir::As<ir::Binary>(c); b && b->op == ir::BinOp::kAnd) {
      AddKnown(b->a);
      AddKnown(b->b);
      return;
    }
    known_.push_back(c);
  }

  bool Known(const Expr& c) const {
    if (const auto* b = ir::As<ir::Binary>(c); b && b->op == ir::BinOp::kAnd) return Known(b->a) && Known(b->b);
    for (const Expr& k : known_) {
      if (ir::StructuralEqual(k, c)) return true;
    }
    return false;
  }

  static bool ReadsMemory(const Expr& c) {
    bool reads = false;  // (a call may read memory too)
    ir::ForEachExpr(c, [&](const Expr& e) { reads = reads || ir::As<ir::BufferLoad>(e) || ir::As<ir::Call>(e); });
    return reads;
  }

  /// Where `cond` holds (`holds`) or fails, the bounds it implies on a variable compared
  /// with a constant (`tx < 32`; in the else branch tx >= 32, so `tx - 32` is known to be
  /// non-negative there). A conjunction narrows each part where it holds; where it fails,
  /// only a single comparison says something. `saved` gets what to restore.
  void Narrow(const Expr& cond, bool holds, std::vector<Saved>* saved) {
    const auto* b = ir::As<ir::Binary>(cond);
    if (!b) return;
    if (b->op == ir::BinOp::kAnd) {
      if (holds) {
        Narrow(b->a, true, saved);
        Narrow(b->b, true, saved);
      }
      return;
    }
    auto cmp = AsConstComparison(cond);
    // `v + c0 < c` (a pipeline's guard on its next step, `k + 1 < n`) narrows v as `v < c - c0`
    if (const auto* off = cmp ? ir::As<ir::Binary>(cmp->operand) : nullptr;
        off && (off->op == ir::BinOp::kAdd || off->op == ir::BinOp::kSub) && ir::As<ir::Var>(off->a)) {
      int64_t c0 = 0;
      if (AsConstInt(off->b, &c0) && c0 > -(int64_t(1) << 40) && c0 < (int64_t(1) << 40) &&
          cmp->c > -(int64_t(1) << 40) && cmp->c < (int64_t(1) << 40)) {
        cmp->c -= off->op == ir::BinOp::kAdd ? c0 : -c0;
        cmp->operand = off->a;
      }
    }
    const ir::Var* v = cmp ? ir::As<ir::Var>(cmp->operand) : nullptr;
    // (v != c says nothing about v's range where it holds, so neither branch narrows on it)
    if (!v || !v->dtype.IsInt()) return;
    std::optional<IntBound> narrowed = NarrowedBound(an_.VarBound(v).value_or(IntBound{}), *cmp, holds);
    if (!narrowed) return;
    const IntBound bound = *narrowed;
    if (bound.min && bound.max && *bound.min > *bound.max) return;  // dead branch: leave it alone
    saved->push_back(Save(v));
    an_.BindBound(v, bound);
  }
  void RestoreAll(std::vector<Saved>* saved) {
    for (auto it = saved->rbegin(); it != saved->rend(); ++it) Restore(*it);
    saved->clear();
  }

  /// A variable's previous bound, restored when its scope ends (handles shadowing).
  Saved Save(const ir::Var* v) const { return {v, an_.VarBound(v)}; }
  void Restore(const Saved& s) {
    if (s.second) {
      an_.BindBound(s.first, *s.second);
    } else {
      an_.Unbind(s.first);
    }
  }

  Analyzer an_;
};

}  // namespace

Stmt Simplify(const Stmt& s) {
  if (!s) return s;
  return StmtSimplifier().Mutate(s);
}

}  // namespace tl::arith
