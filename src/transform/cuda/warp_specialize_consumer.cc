// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the consumer branch: the block's own threads run the
/// statements around the loop and, per k, wait for each group's full barrier before the
/// first statement using its tiles, consume the stage, and arrive on its empty barrier
/// after the last (with a proxy fence first where ordinary loads read it). A loop that is
/// one wgmma GEMM instead keeps a k-tile's wgmmas in flight while it issues the next.
#include <unordered_set>
#include <vector>

#include "pipeline_schedule.h"
#include "tl/ir/intrinsics.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Whether a statement writes a shared tile (which a wgmma may read after the loop starts).
bool WritesShared(const std::vector<Stmt>& stmts) {
  std::unordered_set<const BufferNode*> written;
  for (const Stmt& s : stmts) AddWrites(s, &written);
  for (const BufferNode* b : written) {
    if (b->scope == Scope::kShared) return true;
  }
  return false;
}

/// `before` without its copies into tiles that no other statement of `before` or `uses`
/// touches. Where the steps are counted (SkippedStepGuard) the consumers evaluate the guard
/// as the producer does, from the tensor a block mask was copied from, and the copy into
/// the mask's tile (with the barrier that published it) is left with no reader.
std::vector<Stmt> WithoutUnreadFills(const std::vector<Stmt>& before, const std::vector<Stmt>& uses) {
  std::vector<Stmt> kept;
  for (size_t i = 0; i < before.size(); ++i) {
    const auto* copy = As<CopyOp>(before[i]);
    bool read = !copy || copy->dst.buffer->scope == Scope::kGlobal;
    for (size_t j = 0; !read && j < before.size(); ++j) read = j != i && BuffersOf(before[j]).count(copy->dst.buffer.get());
    for (const Stmt& u : uses) read = read || BuffersOf(u).count(copy->dst.buffer.get());
    if (read) kept.push_back(before[i]);
  }
  return kept;
}

}  // namespace

/// The consumer branch: more registers, the statements before the loop, the loop
/// (ConsumerLoop), the statements after it.
Stmt WarpSpecializer::Consumer(const Buffer& bars, const Roles& roles, int64_t consumer_regs) {
  const Span& span = loop_->span;
  std::vector<Stmt> consumer{CallStmt("warpgroup_reg_alloc", {MakeInt(consumer_regs)}, span)};
  if (tile_.outer) tile_steps_ = TileStepCounter();
  Stmt loop = ConsumerLoop(bars);
  std::vector<Stmt> before = roles.consumer_before;
  if (SkippedStepGuard()) {
    std::vector<Stmt> uses = roles.consumer_after;
    uses.push_back(loop);
    uses.insert(uses.end(), roles.common.begin(), roles.common.end());
    before = WithoutUnreadFills(before, uses);
  }
  if (tile_.outer) {
    // a persistent kernel: what comes before the tile loop, then per tile what comes
    // before and after the pipelined loop (warp_specialize_tiles.cc)
    consumer.insert(consumer.end(), roles.consumer_pre.begin(), roles.consumer_pre.end());
    if (WritesShared(roles.consumer_pre)) {
      consumer.push_back(CallStmt("fence_proxy_async", {}, span));
      consumer.push_back(CallStmt("syncthreads", {}, span));
    }
    if (WritesShared(before)) {
      before.push_back(CallStmt("fence_proxy_async", {}, span));
      before.push_back(CallStmt("syncthreads", {}, span));
    }
    consumer.push_back(InTileLoop(before, loop, roles.consumer_after, /*fresh_vars=*/false));
    consumer.insert(consumer.end(), roles.consumer_post.begin(), roles.consumer_post.end());
    tile_steps_ = Buffer();
    return Seq::Make(consumer, span);
  }
  consumer.insert(consumer.end(), before.begin(), before.end());
  // What the consumers stage in shared memory before the loop (a Q tile, say) is
  // synchronized once here, not at its first use inside every iteration.
  // The wgmmas in the loop skip their proxy fence (WithoutProxyFence): one fence here
  // orders the consumers' own shared-memory writes before the wgmmas read them.
  if (WritesShared(before)) {
    consumer.push_back(CallStmt("fence_proxy_async", {}, span));
    consumer.push_back(CallStmt("syncthreads", {}, span));
  }
  // The tiles the producer loads before its loop (a Q tile): one wait, before the loop.
  if (!prologue_.empty()) consumer.push_back(CallStmt("mbarrier_wait_parity", {PrologueBar(bars), MakeInt(0)}, span));
  consumer.push_back(loop);
  consumer.insert(consumer.end(), roles.consumer_after.begin(), roles.consumer_after.end());
  return Seq::Make(consumer, span);
}

Stmt WarpSpecializer::ConsumerLoop(const Buffer& bars) {
  // With a guard over the whole body (SkippedStepGuard), only the steps where it holds run,
  // counted: stages and phases come from that count, and each step runs the statements
  // inside the guard.
  const Expr skip = SkippedStepGuard();
  if (!skip && groups_.size() == 1) {
    if (const Call* gemm = LoneWgmma()) {
      gemm_main_loop_ = true;
      return GemmMainLoop(bars, gemm);
    }
  }
  if (SoftmaxOverlapOn()) {
    AttentionSteps at;
    const std::string why_not = MatchAttentionSteps(&at);
    if (why_not.empty()) return OverlappedAttentionLoop(bars, at);
    // said where the loop has a GEMM from registers (attention's P V) or the key was set
    const bool looks_like_attention = !consumers_.empty() && at.pv;
    if (looks_like_attention || ConfigTrue(ctx_, "tl.ws_softmax_overlap")) {
      ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(loop_->span.line) +
                             ": tl.ws_softmax_overlap not applied: " + why_not);
    }
  }
  const Span& span = loop_->span;
  VarRef k = Var::Make(loop_->var->name, loop_->var->dtype);
  const Buffer step = skip ? StepCounter() : Buffer();
  const Expr count = skip ? BufferLoad::Make(step, {MakeInt(0)}) : Count(k);
  const Expr stage = FloorMod(count, MakeInt(stages_));
  const Expr parity = FloorMod(FloorDiv(count, MakeInt(stages_)), MakeInt(2));
  std::vector<Stmt> body;
  cuda::StageSelector select(staged_, stage);
  for (size_t i = 0; i < consumers_.size(); ++i) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].first == i) body.push_back(CallStmt("mbarrier_wait_parity", {Full(bars, g, stage), parity}, span));
    }
    const Stmt& s = skip ? As<IfThenElse>(consumers_[i])->then_case : consumers_[i];
    Stmt x = Substitute(WithoutProxyFence(s),
                        [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + k : nullptr; });
    body.push_back(select.Mutate(x));
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (groups_[g].last != i) continue;
      if (ReadThroughGenericProxy(groups_[g])) body.push_back(CallStmt("fence_proxy_async", {}, span));
      body.push_back(Release(Empty(bars, g, stage)));
    }
  }
  // A body without consumers still takes and releases its stages (the copies are dead,
  // but the producer's waits must balance).
  if (consumers_.empty()) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      body.push_back(CallStmt("mbarrier_wait_parity", {Full(bars, g, stage), parity}, span));
      body.push_back(Release(Empty(bars, g, stage)));
    }
  }
  if (!skip) return For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, Seq::Make(body, span), {}, span);
  ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) +
                         ": the k-tiles its guard skips take no stage (steps counted where it holds)");
  return CountedSteps(k, skip, body, step);
}

/// The loop's only consumer when it is one wgmma GEMM from shared memory (a plain GEMM
/// main loop), else null.
const Call* WarpSpecializer::LoneWgmma() {
  if (consumers_.size() != 1) return nullptr;
  const auto* ev = As<Evaluate>(consumers_[0]);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  return IsIntrinsic(call, TL_INTRINSIC_NAME("gemm_ss_wgmma")) ? call : nullptr;
}

/// A GEMM main loop (the loop's one consumer is a wgmma GEMM from shared memory):
///   for k: wait full[k % S]; issue gemm(k); wait for it; release stage k % S
/// or, in flight (DecideGemmOrder), one k-tile's wgmmas running while the next is issued:
///   for k: wait full[k % S]; issue gemm(k); wait until gemm(k - 1) is done;
///          if k > 0: release stage (k - 1) % S
///   wait for gemm(n - 1)
/// The accumulators stay untouched between issue and wait (nothing else is in the loop).
Stmt WarpSpecializer::GemmMainLoop(const Buffer& bars, const Call* gemm) {
  const Span& span = loop_->span;
  VarRef k = Var::Make(loop_->var->name, loop_->var->dtype);
  Expr stage = Stage(k);
  int64_t n = 0, wg_n = 1, reps = 1;
  AsConstInt(gemm->args[4], &n);
  AsConstInt(gemm->args[9], &wg_n);
  AsConstInt(gemm->args[10], &reps);
  Expr acc = gemm->args[2], regs = MakeInt(n / wg_n / 2 * reps);
  std::vector<Expr> args = gemm->args;
  args[8] = MakeBool(false);  // TMA fills both operands: no proxy fence
  Stmt issue = Evaluate::Make(Call::Make(gemm->dtype, "gemm_ss_wgmma_issue", args), consumers_[0]->span);
  issue = Substitute(issue, [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + k : nullptr; });
  cuda::StageSelector select(staged_, stage);
  issue = select.Mutate(issue);
  Expr parity = FloorMod(Round(k), MakeInt(2));
  Stmt wait_full = CallStmt("mbarrier_wait_parity", {Full(bars, 0, stage), parity}, span);
  const int64_t depth = gemm_in_flight_ ? gemm_in_flight_depth_ : 1;
  Stmt release_previous = IfThenElse::Make(
      depth == 1 ? LT(MakeInt(0), k) : LE(MakeInt(depth), k),
      Release(Empty(bars, 0, FloorMod(Count(k) - MakeInt(depth), MakeInt(stages_)))), nullptr, span);
  std::vector<Stmt> body;
  if (gemm_in_flight_) {
    // k-tile k's wgmmas stay in flight while k + 1's are issued; stage k is released in
    // iteration k + 1, only once k + 1's stage has arrived (k + depth, depth k-tiles in flight)
    body = {wait_full, issue, CallStmt("wgmma_wait_hold", {acc, MakeInt(depth), regs}, span), release_previous};
  } else if (ConfigTrue(ctx_, "tl.ws_gemm_adaptive")) {
    // ... the same, but a late stage first drains and releases the previous one
    Stmt ready = Seq::Make({issue, CallStmt("wgmma_wait_hold", {acc, MakeInt(1), regs}, span), release_previous}, span);
    Stmt late = Seq::Make({CallStmt("wgmma_wait_hold", {acc, MakeInt(0), regs}, span), release_previous, wait_full, issue}, span);
    body = {IfThenElse::Make(Call::Make(DType::Bool(), "mbarrier_test_wait_parity", {Full(bars, 0, stage), parity}),
                             ready, late, span)};
  } else {
    // Each k-tile's wgmmas complete before its stage is released (upstream's order): the
    // producer refills a stage as early as it can, which is what bounds a GEMM whose
    // loads, not its tensor cores, set the pace (the H200, GEMM 1024^3 on 64 blocks:
    // 0.0170 -> 0.0147 ms against the in-flight order without its extra stage; 4096^3:
    // 0.2724 -> 0.2581 ms). Short k-tiles go in flight with a stage more (DecideGemmOrder).
    body = {wait_full, issue, CallStmt("wgmma_wait_hold", {acc, MakeInt(0), regs}, span), Release(Empty(bars, 0, stage))};
  }
  Stmt loop = For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, Seq::Make(body, span), {}, span);
  if (!gemm_in_flight_ && ConfigTrue(ctx_, "tl.ws_gemm_adaptive")) {
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) +
                           ": the wgmmas of one k-tile stay in flight while the next is issued (tl.ws_gemm_adaptive)");
  }
  std::vector<Stmt> out{loop, CallStmt("wgmma_wait_hold", {acc, MakeInt(0), regs}, span)};
  // in a tile loop the next tile's loads need the stages the in-flight order left unreleased
  if (tile_steps_ && gemm_in_flight_) out.push_back(InFlightTail(bars, depth));
  return Seq::Make(out, span);
}

/// The consumers' arrival on an empty barrier: every consumer thread once. (One lane
/// per warp after __syncwarp measured no faster on the H200.) In clusters, each warp once
/// on the barrier of every block of the cluster (warp_specialize_multicast.cc).
Stmt WarpSpecializer::Release(const Expr& empty) {
  if (ClusterBlocks() > 1) {
    return CallStmt("mbarrier_arrive_cluster_warp", {empty, MakeInt(ClusterBlocks())}, loop_->span);
  }
  return CallStmt("mbarrier_arrive", {empty}, loop_->span);
}

/// The arrivals that complete a phase of an empty barrier (Release).
int64_t WarpSpecializer::EmptyArrivals() const {
  return ClusterBlocks() > 1 ? threads_ / 32 * ClusterBlocks() : threads_;
}

/// wgmma calls whose shared operands no loop statement writes through the generic proxy
/// skip their proxy fence: TMA (async proxy) fills the staged tiles, and what the
/// consumers stage before the loop is fenced once there.
Stmt WarpSpecializer::WithoutProxyFence(const Stmt& s) {
  // a wgmma under a guard hoisted copies left behind (`if mask: gemm`): the same, inside
  if (const auto* branch = As<IfThenElse>(s); branch && !branch->else_case && As<Evaluate>(branch->then_case)) {
    Stmt inner = WithoutProxyFence(branch->then_case);
    return inner == branch->then_case ? s : IfThenElse::Make(branch->cond, inner, nullptr, s->span);
  }
  const auto* ev = As<Evaluate>(s);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  if (!HasEffect(call, kWgmmaPanels)) return s;
  for (int a = HasEffect(call, kRegisterA) ? 1 : 0; a < 2; ++a) {
    const auto* load = As<BufferLoad>(As<Call>(call->args[a])->args[0]);
    if (written_in_loop_.count(load->buffer.get())) return s;
  }
  std::vector<Expr> args = call->args;
  // proxy_fence: argument 8 of gemm_ss_wgmma(_issue), 7 of gemm_rs_wgmma (fragment_gemm.cc).
  args[HasEffect(call, kRegisterA) ? 7 : 8] = MakeBool(false);
  return Evaluate::Make(Call::Make(call->dtype, call->op, args), s->span);
}

/// Whether a consumer statement reads the group's tiles with ordinary loads (ldmatrix,
/// element reads) rather than wgmma descriptors. The producer's next TMA into the stage
/// writes through the async proxy, which the mbarrier's release and acquire do not order
/// after those loads: without a proxy fence before the release, the TMA overwrote tiles an
/// mma.sync GEMM was still reading (nondeterministic dK in upstream's example_gqa_bwd, 2
/// stages, on the H200). wgmma reads through the async proxy itself and needs none.
bool WarpSpecializer::ReadThroughGenericProxy(const Group& group) {
  for (size_t i = group.first; i <= group.last && i < consumers_.size(); ++i) {
    const Stmt* st = &consumers_[i];
    if (const auto* branch = As<IfThenElse>(*st); branch && !branch->else_case) st = &branch->then_case;
    const auto* ev = As<Evaluate>(*st);
    const auto* call = ev ? As<Call>(ev->value) : nullptr;
    if (HasEffect(call, kWgmmaPanels)) continue;
    auto used = BuffersOf(consumers_[i]);
    for (const CopyOp* c : group.copies) {
      if (used.count(c->dst.buffer.get())) return true;
    }
    for (size_t j : group.im2cols) {
      if (used.count(im2cols_[j].tile.get())) return true;
    }
  }
  return false;
}

}  // namespace tl::transform::cuda
