// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-bind-threads": wraps each kernel body in a binding of the flat thread index
/// `tx` in [0, threads), which the CUDA passes use to spread work over threads.
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

/// T.get_thread_binding(d) as an expression of the flat index (x fastest), so that every
/// later pass sees thread-dependent code through the one variable `tx`.
class ThreadIndexOf : public IRMutator {
 public:
  ThreadIndexOf(VarRef tx, std::vector<int64_t> threads) : tx_(std::move(tx)), threads_(std::move(threads)) {}
  Stmt Mutate(const Stmt& s) override {
    if (s) span_ = s->span;
    return IRMutator::Mutate(s);
  }
  using IRMutator::Mutate;

 protected:
  Expr Mutate_(const Call* op, const Expr& self) override {
    if (!HasEffect(op, kThreadIndex)) return IRMutator::Mutate_(op, self);
    int64_t dim = 0;
    AsConstInt(op->args[0], &dim);
    if (dim >= static_cast<int64_t>(threads_.size())) {
      TL_USER_ERROR(span_) << "T.get_thread_binding(" << dim << ") on a block of " << threads_.size()
                           << " dimension(s)";
    }
    Expr index = tx_;
    int64_t below = 1;
    for (int64_t d = 0; d < dim; ++d) below *= threads_[d];
    if (below > 1) index = FloorDiv(index, MakeInt(below));
    if (dim + 1 < static_cast<int64_t>(threads_.size())) index = FloorMod(index, MakeInt(threads_[dim]));
    return index;
  }

 private:
  VarRef tx_;
  std::vector<int64_t> threads_;
  Span span_;
};

class BindThreads : public IRMutator {
 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    int64_t total = 1;
    for (int64_t t : op->threads) total *= t;
    VarRef tx = Var::Make("tx");
    Stmt inner = ThreadIndexOf(tx, op->threads).Mutate(op->body);
    Stmt body = For::Make(tx, MakeInt(0), MakeInt(total), ForKind::kThreadBinding, inner, {}, op->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, body, op->span);
  }
};

}  // namespace

ir::PrimFunc CudaBindThreads(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, BindThreads().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-bind-threads", CudaBindThreads);

}  // namespace tl::transform
