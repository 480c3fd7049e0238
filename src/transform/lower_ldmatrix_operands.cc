// SPDX-License-Identifier: Apache-2.0
/// \file "lower-ldmatrix-operands" (both pipelines, before any pass reads the loads): each
/// ldmatrix_operand call (TensorCoreIntrinEmitter's operand loads) becomes the element loads
/// that give the thread the same registers (op/ldmatrix_operand.h). Always on the CPU. On
/// CUDA the code generator prints the call as one ldmatrix per micro tile instead
/// (`tl.emitter_ldmatrix`, on by default; off, a remark names the loads it expanded).
#include <set>
#include <string>

#include "tl/ir/functor.h"
#include "tl/op/ldmatrix_operand.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Lowerer : public IRMutator {
 public:
  std::set<int> lines;  ///< where the lowered calls came from

 protected:
  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    const auto* call = As<Call>(op->value);
    if (!IsIntrinsic(call, TL_INTRINSIC_NAME("ldmatrix_operand"))) return self;
    lines.insert(op->span.line);
    return op::LdmatrixOperand::Of(call, op->span).ElementLoads(op->span);
  }
};

}  // namespace

ir::PrimFunc LowerLdmatrixOperands(const ir::PrimFunc& f, PassContext& ctx) {
  const bool cuda = ctx.TargetsCuda();
  if (cuda && ConfigOn(ctx, "tl.emitter_ldmatrix", /*default_on=*/true)) return f;
  Lowerer lowerer;
  Stmt body = lowerer.Mutate(f->body);
  for (int line : cuda ? lowerer.lines : std::set<int>{}) {
    ctx.remarks.push_back("TensorCoreIntrinEmitter operand loads at line " + std::to_string(line) +
                          ": two-element register reads of the shared tile, as tl.emitter_ldmatrix=False asks "
                          "(on, each micro tile is one ldmatrix)");
  }
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("lower-ldmatrix-operands", LowerLdmatrixOperands);

}  // namespace tl::transform
