// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, deciding: whether a kernel's pipelined loop can be
/// warp-specialized and, when not, the reason the remark gives (the first check that fails
/// sets it). It fits when it is the one pipelined loop, at the thread binding's top level,
/// of a one-dimensional block of whole warpgroups, without break or continue, and every
/// hoistable global -> shared copy (and T.im2col nest) of its body can be a TMA load whose
/// tile nothing outside the loop uses. Also decides which statements each role runs.
#include <functional>
#include <string>
#include <unordered_set>
#include <vector>

#include "pipeline_schedule.h"
#include "shared_plan.h"
#include "tma_copy.h"
#include "tma_im2col.h"
#include "warp_specialize.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Whether the copy's regions read one of `vars` (values the producer does not have).
bool RegionsUse(const CopyOp* c, const std::unordered_set<const Var*>& vars) {
  for (const Region* r : {&c->src, &c->dst}) {
    for (const Range& rg : r->ranges) {
      for (const Expr& e : {rg.min, rg.extent}) {
        if (UsesVar(e, [&](const Var* v) { return vars.count(v) > 0; })) return true;
      }
    }
  }
  return false;
}

/// Whether `s` writes buffer `b`.
bool AddsWrite(const Stmt& s, const BufferNode* b) {
  std::unordered_set<const BufferNode*> w;
  AddWrites(s, &w);
  return w.count(b) > 0;
}

}  // namespace

/// The kernel's new thread-binding body, or null with `why_not_` set.
Stmt WarpSpecializer::Run(const KernelLaunch* launch, const For* binding) {
  threads_ = 0;
  AsConstInt(binding->extent, &threads_);
  std::vector<Stmt> stmts = cuda::Flatten(cuda::InlinePipelineIndexLets(binding->body));
  size_t at = stmts.size();
  for (size_t i = 0; i < stmts.size(); ++i) {
    const auto* loop = As<For>(stmts[i]);
    if (loop && loop->for_kind == ForKind::kPipelined) at = i;
  }
  PipelinedLoopCounter count;
  count.Visit(binding->body);
  if (count.pipelined > 1) return Fail("the kernel has several pipelined loops");
  std::vector<Stmt> tile_body;  // in a tile loop (a persistent kernel): the tile's statements
  if (at == stmts.size()) {
    std::string nested = FindTileLoop(stmts, &tile_body, &at);
    if (!nested.empty()) return Fail(nested);
  }
  loop_ = As<For>((tile_.outer ? tile_body : stmts)[at]);
  if (launch->threads.size() != 1) return Fail("the block's threads are not one-dimensional");
  if (threads_ % kProducerThreads || threads_ + kProducerThreads > 1024) {
    return Fail("the block's thread count is not a multiple of 128 (whole consumer warpgroups)");
  }
  stages_ = cuda::NumStages(loop_);
  if (stages_ < 1) return Fail("num_stages is below 1");
  stages_ += ExtraStages();
  // One stage: the producer can only run ahead where the loads feed different statements
  // (attention's K and V), each released after its own last use, so they get pairs of their own.
  if (stages_ == 1) split_groups_ = true;
  PipelinedLoopCounter in_loop;
  in_loop.Visit(loop_->body);
  if (in_loop.jumps) return Fail("the loop body breaks or continues");
  std::string why;
  loop_ = HoistGuardedCopies(loop_, binding->body);
  producers_ = cuda::PipelineProducers(loop_, &why);
  if (producers_.empty()) return Fail(why);
  // The statements before the loop run on the consumer threads only: a per-thread scalar
  // they set (`start = T.alloc_var(...)`) would keep its initial value in the producer.
  std::vector<Expr> producer_reads = {loop_->min, loop_->extent};
  for (const CopyOp* c : producers_) {
    for (const Region* r : {&c->src, &c->dst}) {
      for (const Range& rg : r->ranges) producer_reads.insert(producer_reads.end(), {rg.min, rg.extent});
    }
  }
  for (const Expr& e : producer_reads) {
    const BufferNode* scalar = nullptr;
    ForEachExpr(e, [&](const Expr& x) {
      const auto* load = As<BufferLoad>(x);
      if (load && (load->buffer->scope == Scope::kVar || load->buffer->scope == Scope::kLocal)) {
        scalar = load->buffer.get();
      }
    });
    if (scalar) {
      return Fail("the loop's bounds or copies read " + scalar->name +
                  ", a per-thread variable that only the consumer threads would compute");
    }
  }
  if (!CheckProducers()) return nullptr;
  if (std::string mma = MmaSyncOnly(launch); !mma.empty()) return Fail(mma);
  TakeIm2colNests();
  // What runs outside the loop must leave the produced tiles alone: their stages belong
  // to the mbarriers.
  auto used_outside = [&](const std::vector<Stmt>& list, size_t skip) -> const BufferNode* {
    for (size_t i = 0; i < list.size(); ++i) {
      if (i == skip || As<Allocate>(list[i])) continue;
      for (const BufferNode* b : BuffersOf(list[i])) {
        if (produced_.count(b)) return b;
      }
    }
    return nullptr;
  };
  const BufferNode* outside = tile_.outer ? used_outside(stmts, tile_.at) : used_outside(stmts, at);
  if (!outside && tile_.outer) outside = used_outside(tile_body, at);
  if (outside) return Fail("tile " + outside->name + " is also used outside the loop");
  FormGroups();
  if (tile_.outer && SkippedStepGuard()) {
    return Fail("in a tile loop, the k-tiles its guard skips would need a step count across tiles");
  }
  DecideGemmOrder(binding->body);  // (may add a stage: before the tiles are staged)
  Roles roles;
  if (tile_.outer ? !AssignTileRoles(stmts, tile_body, at, &roles) : !AssignRoles(stmts, at, &roles)) return nullptr;
  // An attention loop the softmax overlap takes releases K after Q K^T and V after P V, a
  // step apart: with one pair for both, step k's loads would wait for step k - 1's P V (a
  // bubble per step), so its loads get pairs of their own.
  if (!split_groups_ && SoftmaxOverlapOn()) {
    AttentionSteps probe;
    if (MatchAttentionSteps(&probe).empty()) {
      split_groups_ = true;
      FormGroups();
    }
  }
  if (stages_ == 1 && groups_.size() < 2) {
    return Fail("one stage, and every load feeds the same statements: nothing to overlap");
  }
  if (!gemm_order_remark_.empty()) ctx_.remarks.push_back(gemm_order_remark_);
  if (!tile_.outer) DecideMulticast(launch);  // (a persistent block's tiles are not its grid neighbours')
  if (!multicast_remark_.empty()) ctx_.remarks.push_back(multicast_remark_);
  return Build(roles);
}

/// Why TMA cannot do copy `c` ("" when it can); *panelled: whether it writes wgmma panels.
std::string WarpSpecializer::TmaUnfit(const CopyOp* c, bool* panelled) {
  if (!operands_known_) {
    wgmma_operands_ = WgmmaOperands(f_->body);
    gemm_operands_ = cuda::GemmOperands(f_->body);
    operands_known_ = true;
  }
  const Buffer& dst = c->dst.buffer;
  *panelled = wgmma_operands_.count(dst.get()) > 0;
  if (c->disable_tma) return "the T.copy into " + dst->name + " at line " + std::to_string(c->span.line) + " has disable_tma=True";
  if (!*panelled && cuda::Swizzled(dst, gemm_operands_, wgmma_operands_)) {
    return "tile " + dst->name + " is an ldmatrix-swizzled operand, which TMA does not write";
  }
  std::string why = cuda::TmaLoadUnfit(c, *panelled, f_->params, cuda::DynamicAlignment(ctx_));
  return why.empty() ? why : "T.copy into " + dst->name + " cannot use TMA: " + why;
}

bool WarpSpecializer::CheckProducers() {
  for (const CopyOp* c : producers_) {
    bool panelled = false;
    std::string why = TmaUnfit(c, &panelled);
    if (!why.empty()) {
      Fail(why);
      return false;
    }
    panelled_[c] = panelled;
    produced_.insert(c->dst.buffer.get());
  }
  return true;
}

namespace {

/// Multiply-adds of the mma.sync GEMMs in one run of `body` (loops counted by their constant
/// trip counts): tile GEMMs (arguments 3..5: M, N, K) and the emitter's mma_fragment calls
/// (16 x 8 x k per warp, k = 256 bits over A's element width). *wgmma: a wgmma GEMM is there.
int64_t MmaSyncWork(const Stmt& body, int64_t threads, bool* wgmma) {
  int64_t total = 0;
  std::function<void(const Stmt&, int64_t)> walk = [&](const Stmt& s, int64_t trips) {
    if (const auto* loop = As<For>(s)) {
      int64_t n = 1;
      AsConstInt(loop->extent, &n);
      return walk(loop->body, trips * std::max<int64_t>(n, 1));
    }
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& st : seq->stmts) walk(st, trips);
      return;
    }
    if (const auto* guard = As<IfThenElse>(s)) {
      walk(guard->then_case, trips);
      if (guard->else_case) walk(guard->else_case, trips);
      return;
    }
    const auto* ev = As<Evaluate>(s);
    const auto* call = ev ? As<Call>(ev->value) : nullptr;
    if (!call) return;
    if (HasEffect(call, kWgmmaPanels)) {
      *wgmma = true;
    } else if (HasEffect(call, kGemm) && call->args.size() > 5) {
      int64_t m = 0, n = 0, k = 0;
      if (AsConstInt(call->args[3], &m) && AsConstInt(call->args[4], &n) && AsConstInt(call->args[5], &k)) {
        total += trips * m * n * k;
      }
    } else if (IsIntrinsic(call, TL_INTRINSIC_NAME("mma_fragment")) && call->args.size() == 3) {
      const auto* a = As<Call>(call->args[1]);
      const auto* load = a && !a->args.empty() ? As<BufferLoad>(a->args[0]) : nullptr;
      const int64_t bits = load ? load->buffer->dtype.bits : 0;
      if (bits > 0) total += trips * (threads / 32) * 16 * 8 * (256 / bits);
    }
  };
  walk(body, 1);
  return total;
}

}  // namespace

/// Why the loop's consumers are better off without a producer warpgroup ("" when they are
/// not): one warpgroup of consumers whose GEMMs all run on mma.sync (T.gemm where wgmma does
/// not fit, the TensorCoreIntrinEmitter's mma), at least kMmaSyncBound multiply-adds per
/// byte a stage loads, on stages that leave room for a second block in the SM's shared
/// memory, in a grid of more blocks than the GPU has SMs (tl.sm_count, else an H100's 132).
/// mma.sync hides its latency across resident warps; such a block fits twice in an SM's
/// registers, but with a producer warpgroup (and setmaxnreg) only once. Upstream's
/// example_gemm_intrinsics on an H100 (32 multiply-adds a byte): at 4096^3 (1,024 blocks)
/// 0.59 ms warp-specialized, 0.41 ms as a cp.async pipeline, upstream 0.39; at 1024^3 (64
/// blocks, one per SM either way) the TMA producer is the faster. A loop that mostly moves
/// data (mHC's pre-norm GEMM, 5 a byte) keeps it too. tl.ws_mma_sync=True always specializes.
std::string WarpSpecializer::MmaSyncOnly(const KernelLaunch* launch) {
  constexpr int64_t kMmaSyncBound = 16;                   // multiply-adds per loaded byte
  constexpr int64_t kHalfSharedMemory = 227 * 1024 / 2;  // sm_90's opt-in shared memory, halved
  if (ConfigTrue(ctx_, "tl.ws_mma_sync") || threads_ != kProducerThreads) return "";
  bool wgmma = false;
  const int64_t work = MmaSyncWork(loop_->body, threads_, &wgmma);
  int64_t bytes = 0;
  for (const CopyOp* c : producers_) {
    int64_t elems = 1;
    for (const Range& r : c->dst.ranges) {
      int64_t n = 0;
      if (!AsConstInt(r.extent, &n)) return "";
      elems *= n;
    }
    bytes += elems * c->dst.buffer->dtype.bytes();
  }
  if (wgmma || work == 0 || bytes == 0 || work < kMmaSyncBound * bytes || bytes * stages_ > kHalfSharedMemory) {
    return "";
  }
  int64_t blocks = 1;
  for (const Expr& e : launch->grid) {
    int64_t n = 0;
    blocks = AsConstInt(e, &n) && blocks > 0 ? blocks * n : -1;  // (-1: not known, so more than the SMs)
  }
  const int64_t sms = ConfigInt(ctx_, "tl.sm_count", 1, 4096, launch->span, "a positive integer (the GPU's SMs)")
                          .value_or(132);
  if (blocks > 0 && blocks <= sms) return "";
  return "its GEMMs run on mma.sync, " + std::to_string(work / bytes) +
         " multiply-adds per loaded byte: as a cp.async pipeline two such blocks share an SM, which hides "
         "mma.sync's latency better than a producer warpgroup would (tl.ws_mma_sync=True specializes it)";
}

/// T.im2col nests at the loop body's top level that TMA can load (tma_im2col.h) become
/// producers too; the others stay consumer loops, with a remark saying why.
void WarpSpecializer::TakeIm2colNests() {
  if (ConfigTrue(ctx_, "tl.disable_tma_im2col")) return;
  std::vector<Stmt> body = cuda::Flatten(loop_->body);
  for (const Stmt& st : body) {
    std::optional<cuda::Im2colNest> nest = cuda::AsIm2colNest(st);
    if (!nest) continue;
    const Buffer& tile = nest->tile;
    bool panelled = wgmma_operands_.count(tile.get()) > 0;
    std::string why;
    if (!panelled && cuda::Swizzled(tile, gemm_operands_, wgmma_operands_)) {
      why = "tile " + tile->name + " is an ldmatrix-swizzled operand, which TMA does not write";
    } else {
      why = cuda::TmaIm2colUnfit(*nest, panelled, f_->params);
    }
    for (const Stmt& other : body) {  // the tile is the nest's alone to write
      if (why.empty() && other.get() != st.get() && AddsWrite(other, tile.get())) {
        why = "tile " + tile->name + " is also written by another statement of the loop";
      }
    }
    if (!why.empty()) {
      ctx_.remarks.push_back("T.im2col at line " + std::to_string(st->span.line) +
                             ": element loops in the consumer threads, not a TMA im2col load (" + why + ")");
      continue;
    }
    im2cols_.push_back(*nest);
    im2col_panelled_.push_back(panelled);
    produced_.insert(tile.get());
  }
}

/// Whether a declaration before the loop can be shared by both roles: allocations,
/// annotations, and lets whose value reads no buffer the kernel writes.
bool WarpSpecializer::Common(const Stmt& s, const std::unordered_set<const BufferNode*>& written) {
  if (As<Allocate>(s) || As<AttrStmt>(s)) return true;
  const auto* let = As<LetStmt>(s);
  if (!let) return false;
  bool reads_written = false;
  ForEachExpr(s, [&](const Expr& e) {
    if (const auto* load = As<BufferLoad>(e)) reads_written |= written.count(load->buffer.get()) > 0;
  });
  return !reads_written;
}

/// Which statements around the loop both roles share (allocations, with the produced tiles
/// staged, and the lets Common admits), which the consumers run before and after the loop,
/// and which copies before it the producer issues (TakePrologueLoads). False when the
/// producer would need a value only the consumers compute.
bool WarpSpecializer::AssignRoles(const std::vector<Stmt>& stmts, size_t at, Roles* roles) {
  std::unordered_set<const BufferNode*> written;
  for (const Stmt& s : stmts) AddWrites(s, &written);
  std::unordered_set<const Var*> consumer_lets;
  for (size_t i = 0; i < stmts.size(); ++i) {
    if (i == at) continue;
    const Stmt& s = stmts[i];
    if (As<Allocate>(s) || (i < at && Common(s, written))) {
      roles->common.push_back(StageAllocation(s));
    } else {
      if (const auto* let = As<LetStmt>(s)) consumer_lets.insert(let->var.get());
      (i < at ? roles->consumer_before : roles->consumer_after).push_back(s);
    }
  }
  if (ProducerReadsAny(consumer_lets)) {
    Fail("the copies depend on values computed by the consumer threads");
    return false;
  }
  roles->consumer_before = TakePrologueLoads(roles->consumer_before, consumer_lets);
  return true;
}

/// Whether what the producer evaluates (the loop's trip count, its copies' regions, their
/// hoisted guards, the im2col steps) reads one of `vars`, values only the consumers compute.
bool WarpSpecializer::ProducerReadsAny(const std::unordered_set<const Var*>& vars) const {
  auto among = [&](const Var* v) { return vars.count(v) > 0; };
  bool reads = UsesVar(loop_->min, among) || UsesVar(loop_->extent, among);
  for (const CopyOp* c : producers_) reads = reads || RegionsUse(c, vars);
  for (const auto& [copy, guard] : guards_) reads = reads || UsesVar(guard, among);
  for (const cuda::Im2colNest& n : im2cols_) reads = reads || UsesVar(n.nhw_step, among) || UsesVar(n.c_step, among);
  return reads;
}

/// Copies before the loop that the producer can issue with TMA instead of the consumers
/// (upstream does the same for attention's Q tile and the backward's K and V): a global
/// tile into a shared tile that no other statement before the loop touches, with regions
/// the producer can evaluate. The consumers wait for them once, before the loop, so the
/// loads overlap the first stages' and the consumers' own set-up. Returns the rest.
std::vector<Stmt> WarpSpecializer::TakePrologueLoads(const std::vector<Stmt>& before,
                                                     const std::unordered_set<const Var*>& lets) {
  if (ConfigTrue(ctx_, "tl.ws_consumer_prologue")) return before;  // (the old behaviour, for comparisons)
  std::vector<Stmt> rest;
  for (size_t i = 0; i < before.size(); ++i) {
    const auto* c = As<CopyOp>(before[i]);
    bool panelled = false;
    bool take = c && c->src.buffer->scope == Scope::kGlobal && c->dst.buffer->scope == Scope::kShared &&
                !produced_.count(c->dst.buffer.get()) && TmaUnfit(c, &panelled).empty() && !RegionsUse(c, lets);
    for (size_t j = 0; take && j < before.size(); ++j) {
      take = j == i || !BuffersOf(before[j]).count(c->dst.buffer.get());
    }
    if (!take) {
      rest.push_back(before[i]);
      continue;
    }
    prologue_.push_back(c);
    panelled_[c] = panelled;
  }
  return rest;
}

/// tl.ws_extra_stages: stages added to the source's num_stages (an experiment; a GEMM loop
/// that DecideGemmOrder puts in flight gets its one extra stage without it).
int64_t WarpSpecializer::ExtraStages() const {
  return ConfigInt(ctx_, "tl.ws_extra_stages", 0, 8, loop_->span, "an integer from 0 to 8").value_or(0);
}

}  // namespace tl::transform::cuda
