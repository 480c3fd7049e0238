// SPDX-License-Identifier: Apache-2.0
/// \file "lower-ldmatrix-operands" (CPU pipeline, before the threads are emulated): each
/// ldmatrix_operand call (TensorCoreIntrinEmitter's operand loads) becomes the element loads
/// that give the thread the same registers (op/ldmatrix_operand.h). CUDA prints the call as
/// ldmatrix instead, one matrix row address per lane.
#include "tl/ir/functor.h"
#include "tl/op/ldmatrix_operand.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Lowerer : public IRMutator {
 protected:
  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    const auto* call = As<Call>(op->value);
    if (!IsIntrinsic(call, TL_INTRINSIC_NAME("ldmatrix_operand"))) return self;
    return op::LdmatrixOperand::Of(call, op->span).ElementLoads(op->span);
  }
};

}  // namespace

ir::PrimFunc LowerLdmatrixOperands(const ir::PrimFunc& f, PassContext& ctx) {
  (void)ctx;
  return ir::PrimFuncNode::Make(f->name, f->params, Lowerer().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("lower-ldmatrix-operands", LowerLdmatrixOperands);

}  // namespace tl::transform
