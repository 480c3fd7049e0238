// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-warp-specialize": T.Pipelined on sm_90a as a producer warpgroup loading
/// with TMA and the block's own threads consuming, synchronized by mbarriers.
///
/// The pipeline's schedule is cuda-pipeline's (pipeline_schedule.h): the loop body's
/// hoistable global -> shared copies produce, the rest consumes, each produced tile gets
/// S stages. The mechanism differs. The block is launched with 128 more threads than the
/// source asks for; those threads (above the thread binding's range, so every index the
/// earlier passes computed for the source's threads is unchanged) form the producer:
///
///   common:   declarations; thread 0 initializes full[s] (1 arrival) and empty[s]
///             (one arrival per consumer thread); __syncthreads
///   producer: setmaxnreg.dec; one thread runs
///               for k: wait empty[k % S] (parity (k / S + 1) % 2: a fresh barrier passes)
///                      arrive on full[k % S] expecting the stage's bytes; issue the TMA boxes
///   consumer: setmaxnreg.inc; the statements before the loop; then
///               for k: wait full[k % S] (parity (k / S) % 2); consume stage k % S;
///                      arrive on empty[k % S]
///             then the statements after the loop.
///
/// Both roles run the same trip count, so phases follow from k. The consumers' statements
/// keep their meaning: cuda-insert-barriers synchronizes them with a named barrier over
/// the consumer threads (never __syncthreads, which the producer would not reach), and
/// leaves the staged tiles to the mbarriers. The consumer releases a stage after the last
/// statement that uses it; every wgmma here waits for its own completion, so no operand
/// read is outstanding then, and a stage read with ordinary loads (ldmatrix, element reads)
/// gets a proxy fence before its release (the next TMA into it is an async-proxy write).
///
/// Kernels that do not fit (another arch, a tile TMA cannot write, several pipelined
/// loops, ...) are left to cuda-pipeline, and the remark says why.
///
/// The work is spread over warp_specialize_*.cc (warp_specialize.h lists them); this file
/// decides which kernels are candidates and turns a refusal into the remark.
#include <string>

#include "pass_helpers.h"
#include "raster_panel.h"
#include "warp_specialize.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/target/cuda_target.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using cuda::ConfigTrue;
using cuda::PipelinedLoopCounter;
using cuda::WarpSpecializer;

/// Whether plain GEMM main loops are launched persistent unless tl.auto_persistent says
/// otherwise (warp_specialize_persistent.cc).
constexpr bool kAutoPersistentGemms = false;

class KernelRewriter : public IRMutator {
 public:
  KernelRewriter(const PrimFunc& f, PassContext& ctx, bool disabled) : f_(f), ctx_(ctx), disabled_(disabled) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    const auto* binding = As<For>(op->body);
    PipelinedLoopCounter count;
    count.Visit(op->body);
    if (!binding || binding->for_kind != ForKind::kThreadBinding || count.pipelined == 0) return self;
    if (disabled_) {
      ctx_.remarks.push_back("warp specialization is off (tl.disable_warp_specialized / tl.disable_tma_lower)");
      return self;
    }
    // T.wgmma_gemm's wgmmas read their shared operands until the program's T.wait_wgmma;
    // the consumer would release a stage right after the issue (the last statement that
    // names it), while the wgmmas may still read it.
    bool user_waits = false;
    ForEachExpr(op->body, [&](const Expr& e) { user_waits |= HasEffect(As<Call>(e), kWgmmaWait); });
    if (user_waits) {
      ctx_.remarks.push_back("T.Pipelined: not warp-specialized (the kernel waits for its own wgmmas with "
                             "T.wait_wgmma; cuda-pipeline keeps the loop's statement order)");
      return self;
    }
    // tl.auto_persistent: unset, plain GEMM main loops (kAutoPersistentGemms); true, any
    // warp-specialized loop (said when it does not apply); false, none
    const bool asked = ConfigTrue(ctx_, "tl.auto_persistent");
    if (asked || (kAutoPersistentGemms && !ctx_.config.count("tl.auto_persistent"))) {
      if (Stmt persistent = Persistent(op, /*any_loop=*/asked)) return persistent;
    }
    std::string why;
    Stmt specialized = Specialize(op, &why);
    if (!specialized) ctx_.remarks.push_back(why);
    return specialized ? specialized : self;
  }

 private:
  /// The launch with its pipelined loop warp-specialized, or null with the remark in *why;
  /// *gemm_loop: whether its consumers run a plain GEMM main loop.
  Stmt Specialize(const KernelLaunch* op, std::string* why, bool* gemm_loop = nullptr) {
    const auto* binding = As<For>(op->body);
    WarpSpecializer sp(f_, ctx_);
    sp.tx_ = binding->var;
    sp.binding_span_ = binding->body->span;
    Stmt body = sp.Run(op, binding);
    if (!body) {
      int line = sp.loop() ? sp.loop()->span.line : op->span.line;
      *why = "T.Pipelined at line " + std::to_string(line) + ": not warp-specialized (" + sp.why_not() + ")";
      return nullptr;
    }
    if (gemm_loop) *gemm_loop = sp.gemm_main_loop();
    Stmt b = For::Make(binding->var, binding->min, binding->extent, binding->for_kind, body, binding->annotations,
                       binding->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, b, op->span);
  }

  /// tl.auto_persistent: the launch made persistent (PersistentLaunch) and warp-specialized
  /// as such, or null for the launch as written (with a remark saying why when `any_loop`:
  /// the key was set; otherwise only plain GEMM main loops are taken, silently).
  Stmt Persistent(const KernelLaunch* op, bool any_loop) {
    std::string why;
    auto sms = ConfigInt(ctx_, "tl.sm_count", 1, 4096, op->span, "a positive integer (the GPU's SMs)");
    if (!sms) {
      why = "the GPU's SM count is not known (tl.sm_count; the JIT sets it when it compiles for the current device)";
    } else {
      const int64_t asked = ConfigInt(ctx_, "tl.raster_panel", 0, 1 << 30, op->span, "a non-negative integer").value_or(-1);
      std::vector<std::string> ignored;  // (cuda-launch-bounds says it for the launch as written)
      const int64_t panel = cuda::RasterPanelWidth(op, asked, cuda::TensorBytes(f_), ctx_.Cuda().L2Bytes(), &ignored);
      Stmt launch = cuda::PersistentLaunch(op, *sms, panel, &why);
      if (launch) {
        const size_t said = ctx_.remarks.size();
        bool gemm_loop = false;
        Stmt specialized = Specialize(As<KernelLaunch>(launch), &why, &gemm_loop);
        if (specialized && !any_loop && !gemm_loop) {
          specialized = nullptr;
          why = "the loop is not a plain GEMM main loop";
        }
        if (specialized) {
          ctx_.remarks.push_back("persistent launch (tl.auto_persistent): " + std::to_string(*sms) +
                                 " blocks walk the grid's blocks" +
                                 (panel > 0 ? " in panels of " + std::to_string(panel) + " columns" : std::string()) +
                                 ", the next tile's loads overlapping the last one's epilogue");
          return specialized;
        }
        ctx_.remarks.resize(said);  // (the launch as written gets its own remarks)
      }
    }
    if (any_loop) ctx_.remarks.push_back("tl.auto_persistent not applied: " + why);
    return nullptr;
  }

  const PrimFunc& f_;
  PassContext& ctx_;
  bool disabled_;
};

}  // namespace

ir::PrimFunc CudaWarpSpecialize(const ir::PrimFunc& f, PassContext& ctx) {
  if (!ctx.Cuda().HasWgmma()) return f;
  bool disabled = ConfigTrue(ctx, "tl.disable_warp_specialized") || ConfigTrue(ctx, "tl.disable_tma_lower");
  ir::Stmt body = KernelRewriter(f, ctx, disabled).Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-warp-specialize", CudaWarpSpecialize);

}  // namespace tl::transform
