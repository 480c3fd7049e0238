// SPDX-License-Identifier: Apache-2.0
/// \file "check-target-features": conversions with upstream TileLang's restrictions, refused
/// at the user's line as upstream refuses them (it does when lowering, so here too):
/// - stochastic rounding (T.cast(..., round="rs")) saturates: sat=False is refused;
/// - on CUDA it needs sm_100a (upstream lowers it to Blackwell's cvt.rs and fails to compile
///   it for any other target). The CPU target rounds stochastically in software
///   (templates/tl/stochastic_round.h), as CUDA does where it is allowed.
/// - intrinsics declared kCudaOnly are refused on the CPU target;
/// - thread-block clusters (T.ClusterKernel) need sm_90.
/// The CUDA pipeline sets "tl.target_arch"; without it (the CPU) no architecture applies.
#include <string>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

std::string FormatName(DType t) {
  if (t == DType::Float(16)) return "FP16";
  if (t == DType::BFloat16()) return "BF16";
  return t.bits == 4 ? "FP4" : "FP8";
}

class Checker : public IRVisitor {
 public:
  explicit Checker(PassContext& ctx) : cuda_(ctx.TargetsCuda()), ctx_(ctx) {}

  void Visit(const Stmt& s) override {
    Span saved = span_;
    if (s) span_ = s->span;
    IRVisitor::Visit(s);
    span_ = saved;
  }

 protected:
  void Visit_(const Call* op) override {
    if (!cuda_ && HasEffect(op, kCudaOnly)) {
      TL_USER_ERROR(span_) << "T." << op->op << " is not supported on the CPU target (a CUDA instruction this "
                           << "target does not emulate); compile this kernel for CUDA";
    }
    if (HasEffect(op, kSm100aOnly)) {  // cast_rs(value, rbits, sat)
      int64_t sat = 1;
      if (op->args.size() > 2 && AsConstInt(op->args[2], &sat) && sat == 0) {
        TL_USER_ERROR(span_) << "T.cast(..., round=\"rs\", sat=False): sat=false is not supported (stochastic "
                                "rounding saturates to the largest finite value)";
      }
      if (cuda_ && !ctx_.Cuda().HasSm100aFeatures()) {
        TL_USER_ERROR(span_) << "Stochastic rounding f32-to-" << FormatName(op->dtype) << " requires sm_100a "
                             << "(T.cast(..., round=\"rs\")); this kernel is compiled for " << ctx_.Cuda().arch
                             << " (the CPU target rounds stochastically too)";
      }
      if (cuda_ && !reported_) {  // a decision worth saying: not Blackwell's instruction
        ctx_.remarks.push_back("T.cast(..., round=\"rs\") at line " + std::to_string(span_.line) +
                               ": stochastic rounding in integer arithmetic (stochastic_round.h), not cvt.rs");
        reported_ = true;
      }
    }
    IRVisitor::Visit_(op);
  }

  void Visit_(const AttrStmt* op) override {
    // T.ClusterKernel / cluster_dims: clusters are sm_90's (the CPU runs the blocks as usual)
    if (op->key == "tl.cluster_dims" && cuda_ && ctx_.Cuda().sm < 90) {
      TL_USER_ERROR(span_) << "cluster_dims: thread-block clusters need sm_90 or newer; this kernel is compiled for "
                           << ctx_.Cuda().arch;
    }
    IRVisitor::Visit_(op);
  }

 private:
  const bool cuda_;  // compiled for CUDA (else the CPU)
  PassContext& ctx_;
  Span span_;
  bool reported_ = false;
};

}  // namespace

ir::PrimFunc CheckTargetFeatures(const ir::PrimFunc& f, PassContext& ctx) {
  Checker(ctx).Visit(f->body);
  return f;
}

TL_REGISTER_PASS("check-target-features", CheckTargetFeatures);

}  // namespace tl::transform
