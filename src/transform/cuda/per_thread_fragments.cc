// SPDX-License-Identifier: Apache-2.0
/// \file Per-thread fragments (per_thread_fragments.h).
#include "per_thread_fragments.h"

#include <unordered_set>

#include "tl/ir/functor.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

class Uses : public IRVisitor {
 public:
  Uses(const BufferNode* b, const Var* tx) : b_(b) { thread_vars_.insert(tx); }
  bool ok = true;

 protected:
  void Visit_(const BufferStore* op) override {
    if (op->buffer.get() == b_ && (parallel_ > 0 || thread_branch_ > 0)) ok = false;
    IRVisitor::Visit_(op);
  }
  void Visit_(const For* op) override {
    bool par = op->for_kind == ForKind::kParallel;
    bool on_thread = OnThread(op->extent) || OnThread(op->min);
    parallel_ += par;
    thread_branch_ += on_thread;
    IRVisitor::Visit_(op);
    parallel_ -= par;
    thread_branch_ -= on_thread;
  }
  void Visit_(const While* op) override { Branch(op->cond, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const IfThenElse* op) override { Branch(op->cond, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const LetStmt* op) override {
    if (OnThread(op->value)) thread_vars_.insert(op->var.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override { TileOp({&op->src, &op->dst}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const GemmOp* op) override { TileOp({&op->a, &op->b, &op->c}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const FillOp* op) override { TileOp({&op->dst}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const ReduceOp* op) override { TileOp({&op->src, &op->dst}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const AtomicOp* op) override { TileOp({&op->dst, &op->src}, [&] { IRVisitor::Visit_(op); }); }
  void Visit_(const Call* op) override {
    // An address of the fragment (a copy helper, an extern call) reaches it as memory.
    if (op->op == "address_of" && !op->args.empty()) {
      if (const auto* at = As<BufferLoad>(op->args[0]); at && at->buffer.get() == b_) ok = false;
    }
    IRVisitor::Visit_(op);
  }

 private:
  template <typename F>
  void Branch(const Expr& cond, F visit) {
    bool on_thread = OnThread(cond);
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
  bool OnThread(const Expr& e) const {
    bool found = false;
    ForEachExpr(e, [&](const Expr& x) {
      if (const auto* v = As<Var>(x)) found |= thread_vars_.count(v) > 0;
    });
    return found;
  }

  const BufferNode* b_;
  std::unordered_set<const Var*> thread_vars_;
  int parallel_ = 0, thread_branch_ = 0;
};

}  // namespace

bool HeldPerThread(const Buffer& b, const Stmt& scope, const Var* tx) {
  int64_t n = 0;
  if (!tx || !AsConstInt(b->NumElements(), &n) || n > kMaxPerThreadFragmentElems) return false;
  Uses uses(b.get(), tx);
  uses.Visit(scope);
  return uses.ok;
}

}  // namespace tl::transform::cuda
