// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the producer branch: the warpgroup gives up registers and
/// its first warp runs the loop's trip count, per k and group waiting for the stage's empty
/// barrier, and one elected lane arms its full barrier with the stage's bytes and issues the
/// TMA loads (or, where the group's guard is false, arrives without bytes); before the loop
/// it issues the prologue's loads. The tensor-map descriptors are prefetched at the
/// kernel's start (InitBarriers).
#include <vector>

#include "pipeline_schedule.h"
#include "tma_copy.h"
#include "tma_im2col.h"
#include "warp_specialize.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

/// The producer branch; *bytes: the bytes every stage loads.
Stmt WarpSpecializer::Producer(const Buffer& bars, int64_t* bytes) {
  const Span& span = loop_->span;
  VarRef k = Var::Make(loop_->var->name, loop_->var->dtype);
  // Stages and phases from the loop's trip count, or from the steps where the loop's guard
  // held (SkippedStepGuard: the masked k-tiles skipped altogether).
  const Expr skip = SkippedStepGuard();
  const Buffer step = skip ? StepCounter() : Buffer();
  if (tile_.outer) tile_steps_ = TileStepCounter();
  const Expr count = skip ? BufferLoad::Make(step, {MakeInt(0)}) : Count(k);
  Expr stage = FloorMod(count, MakeInt(stages_)), round = FloorDiv(count, MakeInt(stages_));
  std::vector<Stmt> body, prefetch;
  cuda::StageSelector select(staged_, stage);
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::vector<Stmt> loads;
    int64_t group_bytes = 0;
    for (const CopyOp* c : groups_[g].copies) {
      Region src = cuda::SubstituteRegion(c->src, loop_->var.get(), loop_->min + k);
      Region dst = select.MutateRegion(cuda::SubstituteRegion(c->dst, loop_->var.get(), loop_->min + k));
      Stmt copy = CopyOp::Make(src, dst, c->span, c->disable_tma);
      Stmt issue = multicast_.count(c)
                       ? cuda::LowerTmaLoadMulticast(As<CopyOp>(copy), panelled_.at(c), Full(bars, g, stage),
                                                     Call::Make(DType::Int(32), "block_rank_in_cluster", {}),
                                                     ClusterBlocks(), &group_bytes)
                       : cuda::LowerTmaLoad(As<CopyOp>(copy), panelled_.at(c), Full(bars, g, stage), &group_bytes);
      loads.push_back(issue);
      PrefetchDescriptor(issue, &prefetch);
    }
    for (size_t j : groups_[g].im2cols) {
      const cuda::Im2colNest& n = im2cols_[j];
      Region dst = select.MutateRegion(Region::Full(n.tile));
      Stmt issue = cuda::LowerTmaIm2col(n, im2col_panelled_[j], dst, AtIteration(n.nhw_step, k),
                                        AtIteration(n.c_step, k), Full(bars, g, stage), &group_bytes);
      loads.push_back(issue);
      PrefetchDescriptor(issue, &prefetch);
    }
    body.push_back(
        CallStmt("mbarrier_wait_parity", {Empty(bars, g, stage), FloorMod(round + MakeInt(1), MakeInt(2))}, span));
    std::vector<Stmt> issue{CallStmt("mbarrier_arrive_expect_tx", {Full(bars, g, stage), MakeInt(group_bytes)}, span)};
    issue.insert(issue.end(), loads.begin(), loads.end());
    Stmt issued = Seq::Make(issue, span);
    Expr guard = skip ? Expr() : GroupGuard(groups_[g].copies, !groups_[g].im2cols.empty());
    if (guard) {
      // a skipped k-tile still completes the stage's phase: an arrival without bytes
      guard = AtIteration(guard, k);
      issued = IfThenElse::Make(guard, issued, CallStmt("mbarrier_arrive", {Full(bars, g, stage)}, span), span);
    }
    body.push_back(OneLane(issued));
    *bytes += group_bytes;
  }
  std::vector<Stmt> leader;
  if (!prologue_.empty()) {
    std::vector<Stmt> loads;
    int64_t prologue_bytes = 0;
    for (const CopyOp* c : prologue_) {
      loads.push_back(cuda::LowerTmaLoad(c, panelled_.at(c), PrologueBar(bars), &prologue_bytes));
      PrefetchDescriptor(loads.back(), &prefetch);
    }
    leader.push_back(CallStmt("mbarrier_arrive_expect_tx", {PrologueBar(bars), MakeInt(prologue_bytes)}, span));
    leader.insert(leader.end(), loads.begin(), loads.end());
  }
  // The descriptors are prefetched where the barriers are initialized (InitBarriers), at
  // the kernel's start: here, right before the first loads, the prefetch would hide nothing.
  descriptor_prefetches_ = prefetch;
  Stmt loop = skip ? CountedSteps(k, skip, body, step)
                   : For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, Seq::Make(body, span), {}, span);
  if (tile_.outer) loop = InTileLoop({}, loop, {}, /*fresh_vars=*/true);
  tile_steps_ = Buffer();
  std::vector<Stmt> producer{OneLane(Seq::Make(leader, span)), loop};
  const char* who = single_thread_producer_ ? "ws_is_producer_leader" : "ws_is_producer_warp";
  Stmt issuer =
      IfThenElse::Make(Call::Make(DType::Bool(), who, {MakeInt(threads_)}), Seq::Make(producer, span), nullptr, span);
  return Seq::Make({CallStmt("warpgroup_reg_dealloc", {MakeInt(kProducerRegisters)}, span), issuer}, span);
}

/// What one thread of the producer issues (arming a barrier, TMA loads): in the one-thread
/// producer, `s` as is; in the producer warp (the default), under elect.sync, so that the
/// loop's values stay warp-uniform and ptxas issues each TMA load once, without a loop over
/// the lanes that might be active (upstream's producers are warps as well).
Stmt WarpSpecializer::OneLane(const Stmt& s) const {
  if (single_thread_producer_) return s;
  return IfThenElse::Make(Call::Make(DType::Bool(), "elect_one", {}), s, nullptr, loop_->span);
}

/// `e` in iteration `k` of the producer's loop (the source loop's variable is min + k).
Expr WarpSpecializer::AtIteration(const Expr& e, const VarRef& k) const {
  return Substitute(e, [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + k : nullptr; });
}

/// The descriptor of the first TMA load in `issue`, prefetched once at the kernel's start.
void WarpSpecializer::PrefetchDescriptor(const Stmt& issue, std::vector<Stmt>* prefetch) const {
  bool first = true;
  ForEachExpr(issue, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    if (first && (IsIntrinsic(call, TL_INTRINSIC_NAME("tma_load")) ||
                  IsIntrinsic(call, TL_INTRINSIC_NAME("tma_load_multicast")) ||
                  IsIntrinsic(call, TL_INTRINSIC_NAME("tma_load_im2col")))) {
      prefetch->push_back(CallStmt("tma_prefetch_descriptor", {call->args[0]}, loop_->span));
      first = false;
    }
  });
}

}  // namespace tl::transform::cuda
