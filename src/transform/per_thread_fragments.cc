// SPDX-License-Identifier: Apache-2.0
/// \file Per-thread fragments (per_thread_fragments.h).
#include "per_thread_fragments.h"

#include <unordered_set>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

namespace {

/// What depends on the thread index: the index itself and lets computed from it.
class ThreadVars {
 public:
  explicit ThreadVars(const std::function<bool(const Expr&)>& is_index) : is_index_(is_index) {}
  bool OnThread(const Expr& e) const {
    bool found = false;
    ForEachExpr(e, [&](const Expr& x) {
      const auto* v = As<Var>(x);
      found = found || is_index_(x) || (v && vars_.count(v) > 0);
    });
    return found;
  }
  void NoteLet(const LetStmt* op) {
    if (OnThread(op->value)) vars_.insert(op->var.get());
  }

 private:
  const std::function<bool(const Expr&)>& is_index_;
  std::unordered_set<const Var*> vars_;
};

class Uses : public IRVisitor {
 public:
  Uses(const BufferNode* b, ThreadVars* threads) : b_(b), threads_(threads) {}
  bool ok = true;

 protected:
  void Visit_(const BufferStore* op) override {
    if (op->buffer.get() == b_ && (parallel_ > 0 || thread_branch_ > 0)) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const For* op) override {
    bool par = op->for_kind == ForKind::kParallel;
    bool on_thread = threads_->OnThread(op->extent) || threads_->OnThread(op->min);
    parallel_ += par;
    thread_branch_ += on_thread;
    IRVisitor::Visit_(op);
    parallel_ -= par;
    thread_branch_ -= on_thread;
  }
  void Visit_(const While* op) override { Branch(op->cond, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const IfThenElse* op) override { Branch(op->cond, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const LetStmt* op) override {
    threads_->NoteLet(op);
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override { TileOp({&op->src, &op->dst}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const GemmOp* op) override { TileOp({&op->a, &op->b, &op->c}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const FillOp* op) override { TileOp({&op->dst}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const ReduceOp* op) override { TileOp({&op->src, &op->dst}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const AtomicOp* op) override { TileOp({&op->dst, &op->src}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const Call* op) override {
    // An address of the fragment (a copy helper, an extern call) reaches it as memory.
    if (HasEffect(op, kAddress) && !op->args.empty()) {
      if (const auto* at = As<BufferLoad>(op->args[0]); at && at->buffer.get() == b_) ok = false;
    }
    IRVisitor::Visit_(op);
  }

 private:
  template <typename F>
  void Branch(const Expr& cond, F visit) {
    bool on_thread = threads_->OnThread(cond);
    thread_branch_ += on_thread;
    visit();
    thread_branch_ -= on_thread;
  }
  template <typename F>
  void TileOp(std::initializer_list<const Region*> regions, F visit) {
    for (const Region* r : regions) {
      if (r->buffer.get() == b_) ok = false;
    }
    visit();
  }

  const BufferNode* b_;
  ThreadVars* threads_;
  int parallel_ = 0, thread_branch_ = 0;
};

/// How many times `s` names buffer `b` (element accesses and tile-op regions).
int64_t CountUses(const Stmt& s, const BufferNode* b) {
  struct Counter : IRVisitor {
    const BufferNode* b;
    int64_t n = 0;
    void Visit_(const BufferLoad* op) override {
      n += op->buffer.get() == b;
      IRVisitor::Visit_(op);
    }
    void Visit_(const BufferStore* op) override {
      n += op->buffer.get() == b;
      IRVisitor::Visit_(op);
    }
    void VisitRegion(const Region& r) override {
      n += r.buffer.get() == b;
      IRVisitor::VisitRegion(r);
    }
  } counter;
  counter.b = b;
  if (s) counter.Visit(s);
  return counter.n;
}

/// The branch of a condition on the thread index that holds all `total` uses of `b`, the
/// innermost one; null when none does.
Stmt OwningBranch(const Stmt& s, const BufferNode* b, int64_t total, ThreadVars* threads) {
  Stmt found;
  struct Finder : IRVisitor {
    const BufferNode* b;
    int64_t total;
    ThreadVars* threads;
    Stmt* found;
    void Visit_(const LetStmt* op) override {
      threads->NoteLet(op);
      IRVisitor::Visit_(op);
    }
    void Visit_(const IfThenElse* op) override {
      if (threads->OnThread(op->cond)) {
        for (const Stmt& branch : {op->then_case, op->else_case}) {
          if (branch && CountUses(branch, b) == total) *found = branch;  // (the innermost wins: visited later)
        }
      }
      IRVisitor::Visit_(op);
    }
  } finder;
  finder.b = b;
  finder.total = total;
  finder.threads = threads;
  finder.found = &found;
  finder.Visit(s);
  return found;
}

}  // namespace

bool HeldPerThread(const Buffer& b, const Stmt& scope, const std::function<bool(const Expr&)>& is_thread_index) {
  int64_t n = 0;
  if (!AsConstInt(b->NumElements(), &n) || n > kMaxPerThreadFragmentElems) return false;
  ThreadVars threads(is_thread_index);
  Uses uses(b.get(), &threads);
  uses.Visit(scope);
  if (uses.ok) return true;
  // Every use inside one branch on the thread index: the same test within it.
  const int64_t total = CountUses(scope, b.get());
  ThreadVars outer(is_thread_index);
  Stmt branch = total > 0 ? OwningBranch(scope, b.get(), total, &outer) : Stmt();
  if (!branch) return false;
  Uses inner(b.get(), &outer);
  inner.Visit(branch);
  return inner.ok;
}

}  // namespace tl::transform
