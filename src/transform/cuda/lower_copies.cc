// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-copies": T.copy between global and shared memory as vectorized,
/// thread-partitioned loops (see copy_lowering.h). Copies it cannot vectorize are left
/// for the generic loop lowering.
#include "copy_lowering.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class CopyLowerer : public IRMutator {
 public:
  explicit CopyLowerer(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    VarRef prev = tx_;
    int64_t prev_threads = threads_;
    tx_ = op->var;
    AsConstInt(op->extent, &threads_);
    Stmt out = IRMutator::Mutate_(op, self);
    tx_ = prev;
    threads_ = prev_threads;
    return out;
  }

  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    TL_ICHECK(tx_) << "copy outside a thread binding";
    Stmt s = cuda::LowerCopyPartitioned(op, tx_, threads_, false, ctx_);
    return s ? s : self;
  }

 private:
  PassContext& ctx_;
  VarRef tx_;
  int64_t threads_ = 0;
};

}  // namespace

ir::PrimFunc CudaLowerCopies(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, CopyLowerer(ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-lower-copies", CudaLowerCopies);

}  // namespace tl::transform
