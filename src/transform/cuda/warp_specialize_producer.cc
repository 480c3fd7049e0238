// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the producer branch: the warpgroup gives up registers and
/// one thread runs the loop's trip count, per k and group waiting for the stage's empty
/// barrier, arming its full barrier with the stage's bytes and issuing the TMA loads (or,
/// where the group's guard is false, arriving without bytes); before the loop it prefetches
/// the tensor-map descriptors and issues the prologue's loads.
#include <vector>

#include "pipeline_schedule.h"
#include "tma_copy.h"
#include "tma_im2col.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

/// The producer branch; *bytes: the bytes every stage loads.
Stmt WarpSpecializer::Producer(const Buffer& bars, int64_t* bytes) {
  const Span& span = loop_->span;
  VarRef k = Var::Make(loop_->var->name, loop_->var->dtype);
  Expr stage = Stage(k);
  std::vector<Stmt> body, prefetch;
  cuda::StageSelector select(staged_, stage);
  for (size_t g = 0; g < groups_.size(); ++g) {
    std::vector<Stmt> loads;
    int64_t group_bytes = 0;
    for (const CopyOp* c : groups_[g].copies) {
      Region src = cuda::SubstituteRegion(c->src, loop_->var.get(), loop_->min + k);
      Region dst = select.MutateRegion(cuda::SubstituteRegion(c->dst, loop_->var.get(), loop_->min + k));
      Stmt copy = CopyOp::Make(src, dst, c->span);
      Stmt issue = cuda::LowerTmaLoad(As<CopyOp>(copy), panelled_.at(c), Full(bars, g, stage), &group_bytes);
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
        CallStmt("mbarrier_wait_parity", {Empty(bars, g, stage), FloorMod(Round(k) + MakeInt(1), MakeInt(2))}, span));
    std::vector<Stmt> issue{CallStmt("mbarrier_arrive_expect_tx", {Full(bars, g, stage), MakeInt(group_bytes)}, span)};
    issue.insert(issue.end(), loads.begin(), loads.end());
    if (Expr guard = GroupGuard(groups_[g].copies, !groups_[g].im2cols.empty())) {
      // a skipped k-tile still completes the stage's phase: an arrival without bytes
      guard = AtIteration(guard, k);
      body.push_back(IfThenElse::Make(guard, Seq::Make(issue, span),
                                      CallStmt("mbarrier_arrive", {Full(bars, g, stage)}, span), span));
    } else {
      body.insert(body.end(), issue.begin(), issue.end());
    }
    *bytes += group_bytes;
  }
  std::vector<Stmt> leader = prefetch;
  if (!prologue_.empty()) {
    std::vector<Stmt> loads;
    int64_t prologue_bytes = 0;
    for (const CopyOp* c : prologue_) {
      loads.push_back(cuda::LowerTmaLoad(c, panelled_.at(c), PrologueBar(bars), &prologue_bytes));
    }
    leader.push_back(CallStmt("mbarrier_arrive_expect_tx", {PrologueBar(bars), MakeInt(prologue_bytes)}, span));
    leader.insert(leader.end(), loads.begin(), loads.end());
  }
  leader.push_back(For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, Seq::Make(body, span), {}, span));
  Stmt issuer = IfThenElse::Make(Call::Make(DType::Bool(), "ws_is_producer_leader", {MakeInt(threads_)}),
                                 Seq::Make(leader, span), nullptr, span);
  return Seq::Make({CallStmt("warpgroup_reg_dealloc", {MakeInt(kProducerRegisters)}, span), issuer}, span);
}

/// `e` in iteration `k` of the producer's loop (the source loop's variable is min + k).
Expr WarpSpecializer::AtIteration(const Expr& e, const VarRef& k) const {
  return Substitute(e, [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + k : nullptr; });
}

/// The descriptor of the first TMA load in `issue`, prefetched once before the loop.
void WarpSpecializer::PrefetchDescriptor(const Stmt& issue, std::vector<Stmt>* prefetch) const {
  bool first = true;
  ForEachExpr(issue, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    if (first && call && (call->op == "tma_load" || call->op == "tma_load_im2col")) {
      prefetch->push_back(CallStmt("tma_prefetch_descriptor", {call->args[0]}, loop_->span));
      first = false;
    }
  });
}

}  // namespace tl::transform::cuda
