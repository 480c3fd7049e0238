// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-unroll-mma-steps": a short serial loop over a tile's k steps that issues the
/// TensorCoreIntrinEmitter's warp MMAs (`for ki in T.serial(block_K // 16):` around
/// ldmatrix_a / ldmatrix_b / mma) is printed with `#pragma unroll`.
///
/// Why: each step's shared addresses depend on ki (a swizzle XORs it into the column), and
/// unrolled they fold into constants, while the next step's ldmatrix can be scheduled under
/// this step's mma.sync. nvcc unrolls such a loop by itself only while the body is small:
/// upstream's example_gemm_intrinsics (two steps of 8 ldmatrix.x4 and 32 mma.sync) kept
/// ours rolled, 124 SASS instructions a step against 138 for both of upstream's unrolled
/// ones (sm_90a). Only the loop's kind changes, so nothing about the program's meaning does.
///
/// Qualifies: a serial loop with a constant trip count of at most kMaxSteps whose body
/// issues mma_fragment and holds no loop other than unrolled or vectorized ones. A remark
/// names each loop; "tl.unroll_mma_steps" = false leaves them to nvcc.
#include <string>

#include "pass_helpers.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kMaxSteps = 8;

/// Whether a body issues warp MMAs and whether it holds a loop nvcc would have to keep.
struct StepSurvey : IRVisitor {
  bool mma = false, rolled_loop = false;

 protected:
  void Visit_(const For* op) override {
    if (op->for_kind != ForKind::kUnrolled && op->for_kind != ForKind::kVectorized) rolled_loop = true;
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("mma_fragment"))) mma = true;
    IRVisitor::Visit_(op);
  }
};

class Unroller : public IRMutator {
 public:
  explicit Unroller(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt visited = IRMutator::Mutate_(op, self);
    const auto* loop = As<For>(visited);
    int64_t extent = 0;
    if (!loop || loop->for_kind != ForKind::kSerial || !AsConstInt(loop->extent, &extent) || extent < 2 ||
        extent > kMaxSteps) {
      return visited;
    }
    StepSurvey survey;
    survey.Visit(loop->body);
    if (!survey.mma || survey.rolled_loop) return visited;
    ctx_.remarks.push_back("loop " + loop->var->name + " at line " + std::to_string(loop->span.line) + " unrolled (" +
                           std::to_string(extent) + " steps of warp MMAs)");
    return For::Make(loop->var, loop->min, loop->extent, ForKind::kUnrolled, loop->body, loop->annotations,
                     loop->span);
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc CudaUnrollMmaSteps(const ir::PrimFunc& f, PassContext& ctx) {
  if (!cuda::ConfigOn(ctx, "tl.unroll_mma_steps", /*default_on=*/true)) return f;
  Stmt body = Unroller(ctx).Mutate(f->body);
  return body == f->body ? f : ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-unroll-mma-steps", CudaUnrollMmaSteps);

}  // namespace tl::transform
