// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-copies": T.copy between global and shared memory as vectorized,
/// thread-partitioned loops (see copy_lowering.h). Copies it cannot vectorize are left
/// for the generic loop lowering. Under a condition selecting a range of threads
/// (thread_range.h) a copy is spread over those threads; under another thread-dependent
/// condition it is refused.
#include "copy_lowering.h"
#include "thread_share.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class CopyLowerer : public cuda::ThreadShareMutator {
 public:
  explicit CopyLowerer(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    cuda::ThreadShare saved = share_;
    int64_t threads = 0;
    AsConstInt(op->extent, &threads);
    share_.Bind(op->var, threads);
    Stmt out = IRMutator::Mutate_(op, self);
    share_ = saved;
    return out;
  }

  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    TL_ICHECK(share_.Bound()) << "copy outside a thread binding";
    Stmt s = cuda::LowerCopyPartitioned(op, share_.Spread(), share_.SpreadThreads(), false, ctx_);
    if (s && share_.Unranged()) {
      TL_USER_ERROR(op->span) << "T.copy under a condition on the thread index that does not select a range of "
                                 "threads (tx < c, tx >= c, and their conjunctions): the copy is shared by all "
                                 "threads, so only part of it would run; test a range, or move it out";
    }
    return s ? s : self;
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc CudaLowerCopies(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, CopyLowerer(ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-lower-copies", CudaLowerCopies);

}  // namespace tl::transform
