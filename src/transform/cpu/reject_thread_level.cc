// SPDX-License-Identifier: Apache-2.0
/// \file "cpu-reject-thread-level": thread-level code (T.get_thread_binding,
/// T.warp_reduce_*, T.shfl_*) is a clear error on the CPU target, which runs each block as one
/// sequence: there is no thread index to read and no warp to reduce over.
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Rejecter : public IRVisitor {
 public:
  void Visit(const Stmt& s) override {
    if (s) span_ = s->span;
    IRVisitor::Visit(s);
  }
  using IRVisitor::Visit;

 protected:
  void Visit_(const Call* op) override {
    if (op->op == "thread_binding") {
      TL_USER_ERROR(span_) << "T.get_thread_binding needs the CUDA target: the CPU target runs each block as "
                              "one sequence, without thread indices";
    }
    if (op->op.rfind("warp_reduce_", 0) == 0 || op->op.rfind("shfl_", 0) == 0) {
      TL_USER_ERROR(span_) << "T." << op->op << " needs the CUDA target: the CPU target runs each block as one "
                              "sequence, without warps (T.reduce_* works on both targets)";
    }
    IRVisitor::Visit_(op);
  }

 private:
  Span span_;
};

}  // namespace

ir::PrimFunc CpuRejectThreadLevel(const ir::PrimFunc& f, PassContext& ctx) {
  Rejecter().Visit(f->body);
  return f;
}

TL_REGISTER_PASS("cpu-reject-thread-level", CpuRejectThreadLevel);

}  // namespace tl::transform
