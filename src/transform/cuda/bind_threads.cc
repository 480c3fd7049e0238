// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-bind-threads": wraps each kernel body in a binding of the flat thread index
/// `tx` in [0, threads), which the CUDA passes use to spread work over threads.
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class BindThreads : public IRMutator {
 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    int64_t total = 1;
    for (int64_t t : op->threads) total *= t;
    VarRef tx = Var::Make("tx");
    Stmt body = For::Make(tx, MakeInt(0), MakeInt(total), ForKind::kThreadBinding, op->body, {}, op->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, body, op->span);
  }
};

}  // namespace

ir::PrimFunc CudaBindThreads(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, BindThreads().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-bind-threads", CudaBindThreads);

}  // namespace tl::transform
