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
#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_set>

#include "copy_lowering.h"
#include "pass_helpers.h"
#include "pipeline_schedule.h"
#include "shared_plan.h"
#include "tma_copy.h"
#include "tma_im2col.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using cuda::AddressOf;
using cuda::AddWrites;
using cuda::BuffersOf;
using cuda::CallStmt;
using cuda::ConfigTrue;
using cuda::WgmmaOperands;

/// Threads of the producer: one warpgroup (setmaxnreg acts per warpgroup).
constexpr int64_t kProducerThreads = 128;
/// Registers per producer thread after setmaxnreg.dec: it only issues TMA.
constexpr int64_t kProducerRegisters = 24;
/// The register file of one SM, shared by the block (one block per SM at these sizes).
constexpr int64_t kRegisterFile = 65536;

struct LoopCounter : IRVisitor {
  int pipelined = 0;
  bool jumps = false;
  void Visit_(const For* op) override {
    pipelined += op->for_kind == ForKind::kPipelined;
    IRVisitor::Visit_(op);
  }
  void Visit_(const Break*) override { jumps = true; }
  void Visit_(const Continue*) override { jumps = true; }
};

class Specializer {
 public:
  Specializer(const PrimFunc& f, PassContext& ctx)
      : f_(f),
        ctx_(ctx),
        split_groups_(ConfigTrue(ctx, "tl.ws_barrier_groups")) {}

  /// The kernel's new thread-binding body, or null with `why_not_` set.
  Stmt Run(const KernelLaunch* launch, const For* binding) {
    threads_ = 0;
    AsConstInt(binding->extent, &threads_);
    std::vector<Stmt> stmts = cuda::Flatten(cuda::InlinePipelineIndexLets(binding->body));
    size_t at = stmts.size();
    for (size_t i = 0; i < stmts.size(); ++i) {
      const auto* loop = As<For>(stmts[i]);
      if (loop && loop->for_kind == ForKind::kPipelined) at = i;
    }
    LoopCounter count;
    count.Visit(binding->body);
    if (at == stmts.size()) return Fail("the pipelined loop is nested in other statements");
    loop_ = As<For>(stmts[at]);
    if (count.pipelined > 1) return Fail("the kernel has several pipelined loops");
    if (launch->threads.size() != 1) return Fail("the block's threads are not one-dimensional");
    if (threads_ % kProducerThreads || threads_ + kProducerThreads > 1024) {
      return Fail("the block's thread count is not a multiple of 128 (whole consumer warpgroups)");
    }
    stages_ = cuda::NumStages(loop_);
    if (stages_ < 1) return Fail("num_stages is below 1");
    // One stage: the producer can only run ahead where the loads feed different statements
    // (attention's K and V), each released after its own last use, so they get pairs of their own.
    if (stages_ == 1) split_groups_ = true;
    LoopCounter in_loop;
    in_loop.Visit(loop_->body);
    if (in_loop.jumps) return Fail("the loop body breaks or continues");
    std::string why;
    loop_ = HoistGuardedCopies(loop_, binding->body);
    producers_ = cuda::PipelineProducers(loop_, &why);
    if (producers_.empty()) return Fail(why);
    if (!CheckProducers()) return nullptr;
    TakeIm2colNests();
    // What runs outside the loop must leave the produced tiles alone: their stages belong
    // to the mbarriers.
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (i == at) continue;
      for (const BufferNode* b : BuffersOf(stmts[i])) {
        if (produced_.count(b) && !As<Allocate>(stmts[i])) {
          return Fail("tile " + b->name + " is also used outside the loop");
        }
      }
    }
    return Build(stmts, at);
  }

  const std::string& why_not() const { return why_not_; }
  const For* loop() const { return loop_; }

 private:
  Stmt Fail(const std::string& why) {
    why_not_ = why;
    return nullptr;
  }

  /// Why TMA cannot do copy `c` ("" when it can); *panelled: whether it writes wgmma panels.
  std::string TmaUnfit(const CopyOp* c, bool* panelled) {
    if (!operands_known_) {
      wgmma_operands_ = WgmmaOperands(f_->body);
      gemm_operands_ = cuda::GemmOperands(f_->body);
      operands_known_ = true;
    }
    const Buffer& dst = c->dst.buffer;
    *panelled = wgmma_operands_.count(dst.get()) > 0;
    if (!*panelled && cuda::Swizzled(dst, gemm_operands_, wgmma_operands_)) {
      return "tile " + dst->name + " is an ldmatrix-swizzled operand, which TMA does not write";
    }
    std::string why = cuda::TmaLoadUnfit(c, *panelled, f_->params, cuda::DynamicAlignment(ctx_));
    return why.empty() ? why : "T.copy into " + dst->name + " cannot use TMA: " + why;
  }

  /// Whether the copy's regions read one of `vars` (values the producer does not have).
  static bool RegionsUse(const CopyOp* c, const std::unordered_set<const Var*>& vars) {
    for (const Region* r : {&c->src, &c->dst}) {
      for (const Range& rg : r->ranges) {
        for (const Expr& e : {rg.min, rg.extent}) {
          if (UsesVar(e, [&](const Var* v) { return vars.count(v) > 0; })) return true;
        }
      }
    }
    return false;
  }

  /// `if c: T.copy(...); ...; T.gemm(...)` at the top of the loop body (block-sparse GEMMs):
  /// the copies from global into shared memory move before the `if` and are recorded with
  /// their guard, which the producer evaluates to skip their loads (arriving on the stage's
  /// full barrier without bytes, so phases stay those of the trip count); the rest stays
  /// under the `if` for the consumers. Only a guard the producer can evaluate: it reads no
  /// buffer the kernel writes, nothing but global tensors, and no value the loop body binds.
  const For* HoistGuardedCopies(const For* loop, const Stmt& kernel_body) {
    std::unordered_set<const BufferNode*> written;
    AddWrites(kernel_body, &written);
    struct LetCollector : IRVisitor {
      std::unordered_set<const Var*> vars;
      void Visit_(const LetStmt* op) override {
        vars.insert(op->var.get());
        IRVisitor::Visit_(op);
      }
    } lets;
    lets.Visit(loop->body);
    const std::unordered_set<const Var*>& bound_in_loop = lets.vars;
    std::vector<Stmt> body;
    bool changed = false;
    const std::vector<Stmt> top = cuda::Flatten(loop->body);
    for (const Stmt& st : top) {
      const auto* branch = As<IfThenElse>(st);
      if (!branch || branch->else_case || !Evaluable(branch->cond, written, bound_in_loop)) {
        body.push_back(st);
        continue;
      }
      std::vector<Stmt> rest, copies;
      for (const Stmt& inner : cuda::Flatten(branch->then_case)) {
        const auto* c = As<CopyOp>(inner);
        bool load = c && c->src.buffer->scope == Scope::kGlobal && c->dst.buffer->scope == Scope::kShared;
        (load ? copies : rest).push_back(inner);
      }
      // Only tiles the `if` alone uses: a statement outside it reading the tile in an
      // iteration the guard skips would see the previous load of the program, whereas the
      // stage it reads holds an older one.
      bool private_tiles = true;
      for (const Stmt& other : top) {
        if (other.get() == st.get()) continue;
        auto used = BuffersOf(other);
        for (const Stmt& c : copies) private_tiles = private_tiles && !used.count(As<CopyOp>(c)->dst.buffer.get());
      }
      if (copies.empty() || !private_tiles) {
        body.push_back(st);
        continue;
      }
      for (const Stmt& c : copies) guards_[As<CopyOp>(c)] = branch->cond;
      body.insert(body.end(), copies.begin(), copies.end());
      if (!rest.empty()) body.push_back(IfThenElse::Make(branch->cond, Seq::Make(rest, st->span), nullptr, st->span));
      changed = true;
    }
    if (!changed) return loop;
    rewritten_loop_ = For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(body, loop->body->span),
                                loop->annotations, loop->span);
    return As<For>(rewritten_loop_);
  }

  static bool Evaluable(const Expr& cond, const std::unordered_set<const BufferNode*>& written,
                        const std::unordered_set<const Var*>& bound_in_loop) {
    bool ok = !UsesVar(cond, [&](const Var* v) { return bound_in_loop.count(v) > 0; });
    ForEachExpr(cond, [&](const Expr& e) {
      if (const auto* load = As<BufferLoad>(e)) {
        ok &= load->buffer->scope == Scope::kGlobal && !written.count(load->buffer.get());
      }
      if (const auto* call = As<Call>(e)) {  // a value only: no thread index, vote, memory effect
        const IntrinsicInfo* info = LookupIntrinsic(call->op);
        constexpr uint32_t kNotAValue = kAddress | kThreadIndex | kRoleTest | kAtomicUpdate | kWritesArg0 |
                                        kAsyncWritesArg0 | kBlockLevel | kBarrier | kWarpCollective | kVote;
        ok &= info && !(info->effects & kNotAValue);
      }
    });
    return ok;
  }

  /// The guard shared by every copy of a group (null when some copy has none or another):
  /// the producer skips the group's loads when it is false.
  Expr GroupGuard(const std::vector<const CopyOp*>& copies, bool has_im2col) const {
    if (copies.empty() || has_im2col) return nullptr;
    auto first = guards_.find(copies[0]);
    if (first == guards_.end()) return nullptr;
    for (const CopyOp* c : copies) {
      auto it = guards_.find(c);
      if (it == guards_.end() || it->second.get() != first->second.get()) return nullptr;
    }
    return first->second;
  }

  /// T.im2col nests at the loop body's top level that TMA can load (tma_im2col.h) become
  /// producers too; the others stay consumer loops, with a remark saying why.
  void TakeIm2colNests() {
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

  static bool AddsWrite(const Stmt& s, const BufferNode* b) {
    std::unordered_set<const BufferNode*> w;
    AddWrites(s, &w);
    return w.count(b) > 0;
  }

  bool CheckProducers() {
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

  /// Whether a declaration before the loop can be shared by both roles: allocations,
  /// annotations, and lets whose value reads no buffer the kernel writes.
  bool Common(const Stmt& s, const std::unordered_set<const BufferNode*>& written) {
    if (As<Allocate>(s) || As<AttrStmt>(s)) return true;
    const auto* let = As<LetStmt>(s);
    if (!let) return false;
    bool reads_written = false;
    ForEachExpr(s, [&](const Expr& e) {
      if (const auto* load = As<BufferLoad>(e)) reads_written |= written.count(load->buffer.get()) > 0;
    });
    return !reads_written;
  }

  Stmt Build(const std::vector<Stmt>& stmts, size_t at) {
    const Span& span = loop_->span;
    std::unordered_set<const BufferNode*> written;
    for (const Stmt& s : stmts) AddWrites(s, &written);
    std::vector<Stmt> common, consumer_before, consumer_after;
    std::unordered_set<const Var*> consumer_lets;
    for (size_t i = 0; i < stmts.size(); ++i) {
      if (i == at) continue;
      const Stmt& s = stmts[i];
      if (As<Allocate>(s) || (i < at && Common(s, written))) {
        common.push_back(StageAllocation(s));
      } else {
        if (const auto* let = As<LetStmt>(s)) consumer_lets.insert(let->var.get());
        (i < at ? consumer_before : consumer_after).push_back(s);
      }
    }
    // The producer evaluates the copies' regions and the trip count: nothing it reads may
    // be defined in the consumer's part only.
    auto consumer_only = [&](const Var* v) { return consumer_lets.count(v) > 0; };
    bool needs_consumer_value = UsesVar(loop_->min, consumer_only) || UsesVar(loop_->extent, consumer_only);
    for (const CopyOp* c : producers_) needs_consumer_value = needs_consumer_value || RegionsUse(c, consumer_lets);
    for (const auto& [copy, guard] : guards_) needs_consumer_value = needs_consumer_value || UsesVar(guard, consumer_only);
    for (const cuda::Im2colNest& n : im2cols_) {
      needs_consumer_value = needs_consumer_value || UsesVar(n.nhw_step, consumer_only) || UsesVar(n.c_step, consumer_only);
    }
    if (needs_consumer_value) return Fail("the copies depend on values computed by the consumer threads");
    consumer_before = TakePrologueLoads(consumer_before, consumer_lets);

    FormGroups();
    if (stages_ == 1 && groups_.size() < 2) {
      return Fail("one stage, and every load feeds the same statements: nothing to overlap");
    }
    int64_t groups = static_cast<int64_t>(groups_.size());
    Buffer bars = BufferNode::Make("tl_ws_bars", DType::UInt(64),
                                   {MakeInt(2 * groups * stages_ + (prologue_.empty() ? 0 : 1))}, Scope::kShared);
    common.push_back(Allocate::Make(bars, nullptr, span));
    std::vector<Stmt> init;
    for (int64_t g = 0; g < groups; ++g) {
      for (int64_t s = 0; s < stages_; ++s) {
        init.push_back(CallStmt("mbarrier_init", {AddressOf(bars, {MakeInt(g * stages_ + s)}), MakeInt(1)}, span));
        init.push_back(CallStmt("mbarrier_init", {AddressOf(bars, {MakeInt((groups + g) * stages_ + s)}),
                                                  MakeInt(threads_)}, span));
      }
    }
    if (!prologue_.empty()) init.push_back(CallStmt("mbarrier_init", {PrologueBar(bars), MakeInt(1)}, span));
    init.push_back(CallStmt("mbarrier_init_fence", {}, span));
    common.push_back(IfThenElse::Make(EQ(tx_, MakeInt(0)), Seq::Make(init, span), nullptr, span));
    common.push_back(CallStmt("syncthreads", {}, span));

    int64_t consumer_regs = std::min<int64_t>(240, (kRegisterFile - kProducerThreads * kProducerRegisters) /
                                                       threads_ / 8 * 8);
    common.push_back(AttrStmt::Make(cuda::kWarpSpecializedAttr,
                                    {MakeInt(kProducerThreads), MakeInt(kProducerRegisters), MakeInt(consumer_regs)},
                                    span));
    int64_t bytes = 0;
    Stmt producer = Producer(bars, &bytes);
    std::vector<Stmt> consumer{CallStmt("warpgroup_reg_alloc", {MakeInt(consumer_regs)}, span)};
    consumer.insert(consumer.end(), consumer_before.begin(), consumer_before.end());
    // What the consumers stage in shared memory before the loop (a Q tile, say) is
    // synchronized once here, not at its first use inside every iteration.
    // The wgmmas in the loop skip their proxy fence (WithoutProxyFence): one fence here
    // orders the consumers' own shared-memory writes before the wgmmas read them.
    if (WritesShared(consumer_before)) {
      consumer.push_back(CallStmt("fence_proxy_async", {}, span));
      consumer.push_back(CallStmt("syncthreads", {}, span));
    }
    // The tiles the producer loads before its loop (a Q tile): one wait, before the loop.
    if (!prologue_.empty()) consumer.push_back(CallStmt("mbarrier_wait_parity", {PrologueBar(bars), MakeInt(0)}, span));
    consumer.push_back(ConsumerLoop(bars));
    consumer.insert(consumer.end(), consumer_after.begin(), consumer_after.end());
    common.push_back(IfThenElse::Make(Call::Make(DType::Bool(), "ws_is_producer", {MakeInt(threads_)}), producer,
                                      Seq::Make(consumer, span), span));
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": warp-specialized, " +
                           std::to_string(stages_) + " stages; a producer warpgroup loads " +
                           std::to_string(producers_.size()) + " copies" +
                           (im2cols_.empty() ? std::string()
                                             : " and " + std::to_string(im2cols_.size()) + " T.im2col tile(s)") +
                           " with TMA (" + std::to_string(bytes) +
                           " bytes per stage, " + std::to_string(groups) +
                           " mbarrier full/empty pair(s) per stage, each waited before the first use of its "
                           "tiles and released after the last), " + std::to_string(threads_) +
                           " consumer threads; registers " + std::to_string(kProducerRegisters) + "/" +
                           std::to_string(consumer_regs) +
                           (prologue_.empty() ? std::string()
                                              : "; it also loads " + std::to_string(prologue_.size()) +
                                                    " tile(s) before the loop with TMA (" + PrologueNames() + ")"));
    return Seq::Make(common, binding_span_);
  }

  /// Copies before the loop that the producer can issue with TMA instead of the consumers
  /// (upstream does the same for attention's Q tile and the backward's K and V): a global
  /// tile into a shared tile that no other statement before the loop touches, with regions
  /// the producer can evaluate. The consumers wait for them once, before the loop, so the
  /// loads overlap the first stages' and the consumers' own set-up. Returns the rest.
  std::vector<Stmt> TakePrologueLoads(const std::vector<Stmt>& before, const std::unordered_set<const Var*>& lets) {
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

  Expr PrologueBar(const Buffer& bars) {
    return AddressOf(bars, {MakeInt(2 * static_cast<int64_t>(groups_.size()) * stages_)});
  }

  std::string PrologueNames() const {
    std::string out;
    for (const CopyOp* c : prologue_) out += (out.empty() ? "" : ", ") + c->dst.buffer->name;
    return out;
  }

  /// Whether a statement writes a shared tile (which a wgmma may read after the loop starts).
  static bool WritesShared(const std::vector<Stmt>& stmts) {
    std::unordered_set<const BufferNode*> written;
    for (const Stmt& s : stmts) AddWrites(s, &written);
    for (const BufferNode* b : written) {
      if (b->scope == Scope::kShared) return true;
    }
    return false;
  }

  /// A produced tile's allocation gets its stage dimension.
  Stmt StageAllocation(const Stmt& s) {
    const auto* alloc = As<Allocate>(s);
    if (!alloc || !produced_.count(alloc->buffer.get())) return s;
    Buffer staged = cuda::StagedBuffer(alloc->buffer, stages_);
    staged_[alloc->buffer.get()] = staged;
    return Allocate::Make(staged, alloc->init, alloc->span);
  }

  Expr Stage(const VarRef& k) { return FloorMod(k, MakeInt(stages_)); }
  Expr Round(const VarRef& k) { return FloorDiv(k, MakeInt(stages_)); }

  /// Barrier groups. By default all copies share one full/empty pair per stage, waited
  /// before the first statement that uses any of their tiles and released after the last.
  /// With tl.ws_barrier_groups, copies whose tiles are first and last used at different
  /// statements get pairs of their own (attention's K released after Q*K^T, V awaited
  /// only before P*V); on the H200 that measured 10% slower for the flash-attention
  /// forward (2.43 against 2.20 ms at 8k), so it is opt-in.
  void FormGroups() {
    for (const Stmt& st : cuda::Flatten(loop_->body)) {
      bool produces = false;
      for (const CopyOp* c : producers_) produces |= st.get() == c;
      for (const cuda::Im2colNest& n : im2cols_) produces |= st.get() == n.loop;
      if (!produces) {
        consumers_.push_back(st);
        AddWrites(st, &written_in_loop_);
      }
    }
    // Every load, by its tile: the copies, then the im2col nests (index producers_.size() + j).
    std::vector<const BufferNode*> tiles;
    for (const CopyOp* c : producers_) tiles.push_back(c->dst.buffer.get());
    for (const cuda::Im2colNest& n : im2cols_) tiles.push_back(n.tile.get());
    for (size_t load = 0; load < tiles.size(); ++load) {
      size_t first = consumers_.size(), last = 0;
      for (size_t i = 0; i < consumers_.size(); ++i) {
        if (!BuffersOf(consumers_[i]).count(tiles[load])) continue;
        first = std::min(first, i);
        last = std::max(last, i);
      }
      if (first == consumers_.size()) {
        first = 0;
        last = consumers_.empty() ? 0 : consumers_.size() - 1;
      }
      auto same = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
        return !split_groups_ || (g.first == first && g.last == last);
      });
      if (same == groups_.end()) {
        groups_.push_back(Group{first, last, {}, {}});
        same = groups_.end() - 1;
      }
      if (load < producers_.size()) {
        same->copies.push_back(producers_[load]);
      } else {
        same->im2cols.push_back(load - producers_.size());
      }
      same->first = std::min(same->first, first);
      same->last = std::max(same->last, last);
    }
    // The producer issues in the order the consumers wait.
    std::stable_sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) { return a.first < b.first; });
  }

  Expr Full(const Buffer& bars, size_t g, const Expr& stage) {
    return AddressOf(bars, {MakeInt(static_cast<int64_t>(g) * stages_) + stage});
  }
  Expr Empty(const Buffer& bars, size_t g, const Expr& stage) {
    return AddressOf(bars, {MakeInt(static_cast<int64_t>(groups_.size() + g) * stages_) + stage});
  }

  /// `e` in iteration `k` of the producer's loop (the source loop's variable is min + k).
  Expr AtIteration(const Expr& e, const VarRef& k) const {
    return Substitute(e, [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + k : nullptr; });
  }

  /// The descriptor of the first TMA load in `issue`, prefetched once before the loop.
  void PrefetchDescriptor(const Stmt& issue, std::vector<Stmt>* prefetch) const {
    bool first = true;
    ForEachExpr(issue, [&](const Expr& e) {
      const auto* call = As<Call>(e);
      if (first && call && (call->op == "tma_load" || call->op == "tma_load_im2col")) {
        prefetch->push_back(CallStmt("tma_prefetch_descriptor", {call->args[0]}, loop_->span));
        first = false;
      }
    });
  }

  Stmt Producer(const Buffer& bars, int64_t* bytes) {
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

  /// The loop's only consumer when it is one wgmma GEMM from shared memory (a plain GEMM
  /// main loop), else null.
  const Call* LoneWgmma() {
    if (consumers_.size() != 1) return nullptr;
    const auto* ev = As<Evaluate>(consumers_[0]);
    const auto* call = ev ? As<Call>(ev->value) : nullptr;
    return call && call->op == "gemm_ss_wgmma" ? call : nullptr;
  }

  /// A GEMM main loop that keeps one k-tile's wgmmas in flight while it issues the next:
  ///   for k: wait full[k % S]; issue gemm(k); wait until gemm(k - 1) is done;
  ///          if k > 0: release stage (k - 1) % S
  ///   wait for gemm(n - 1)
  /// The accumulators stay untouched between issue and wait (nothing else is in the loop).
  Stmt InFlightGemmLoop(const Buffer& bars, const Call* gemm) {
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
    std::vector<Stmt> body{
        CallStmt("mbarrier_wait_parity", {Full(bars, 0, stage), FloorMod(Round(k), MakeInt(2))}, span),
        select.Mutate(issue), CallStmt("wgmma_wait_hold", {acc, MakeInt(1), regs}, span),
        IfThenElse::Make(LT(MakeInt(0), k),
                         Release(Empty(bars, 0, FloorMod(k - MakeInt(1), MakeInt(stages_)))), nullptr, span)};
    Stmt loop = For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, Seq::Make(body, span), {}, span);
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) +
                           ": the wgmmas of one k-tile stay in flight while the next is issued");
    return Seq::Make({loop, CallStmt("wgmma_wait_hold", {acc, MakeInt(0), regs}, span)}, span);
  }

  Stmt ConsumerLoop(const Buffer& bars) {
    if (const Call* gemm = groups_.size() == 1 ? LoneWgmma() : nullptr) return InFlightGemmLoop(bars, gemm);
    const Span& span = loop_->span;
    VarRef k = Var::Make(loop_->var->name, loop_->var->dtype);
    Expr stage = Stage(k);
    std::vector<Stmt> body;
    cuda::StageSelector select(staged_, stage);
    for (size_t i = 0; i < consumers_.size(); ++i) {
      for (size_t g = 0; g < groups_.size(); ++g) {
        if (groups_[g].first != i) continue;
        body.push_back(
            CallStmt("mbarrier_wait_parity", {Full(bars, g, stage), FloorMod(Round(k), MakeInt(2))}, span));
      }
      const Stmt& s = WithoutProxyFence(consumers_[i]);
      Stmt x = Substitute(s, [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + k : nullptr; });
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
        body.push_back(
            CallStmt("mbarrier_wait_parity", {Full(bars, g, stage), FloorMod(Round(k), MakeInt(2))}, span));
        body.push_back(Release(Empty(bars, g, stage)));
      }
    }
    return For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, Seq::Make(body, span), {}, span);
  }

  /// The consumers' arrival on an empty barrier: every consumer thread once. (One lane
  /// per warp after __syncwarp measured no faster on the H200.)
  Stmt Release(const Expr& empty) { return CallStmt("mbarrier_arrive", {empty}, loop_->span); }

  /// wgmma calls whose shared operands no loop statement writes through the generic proxy
  /// skip their proxy fence: TMA (async proxy) fills the staged tiles, and what the
  /// consumers stage before the loop is fenced once there.
  Stmt WithoutProxyFence(const Stmt& s) {
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

  struct Group {
    size_t first, last;  ///< consumer statements that first and last use the group's tiles
    std::vector<const CopyOp*> copies;
    std::vector<size_t> im2cols;  ///< indices into im2cols_
  };
  std::vector<Stmt> consumers_;
  std::vector<Group> groups_;

  /// Whether a consumer statement reads the group's tiles with ordinary loads (ldmatrix,
  /// element reads) rather than wgmma descriptors. The producer's next TMA into the stage
  /// writes through the async proxy, which the mbarrier's release and acquire do not order
  /// after those loads: without a proxy fence before the release, the TMA overwrote tiles an
  /// mma.sync GEMM was still reading (nondeterministic dK in upstream's example_gqa_bwd, 2
  /// stages, on the H200). wgmma reads through the async proxy itself and needs none.
  bool ReadThroughGenericProxy(const Group& group) {
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
  std::unordered_set<const BufferNode*> written_in_loop_;  ///< by the consumer statements

 public:
  VarRef tx_;
  Span binding_span_;

 private:
  const PrimFunc& f_;
  PassContext& ctx_;
  int64_t threads_ = 0, stages_ = 0;
  const For* loop_ = nullptr;
  std::vector<const CopyOp*> producers_;
  std::unordered_map<const CopyOp*, bool> panelled_;  ///< per TMA copy (loop and prologue): writes wgmma panels
  std::vector<const CopyOp*> prologue_;  ///< copies before the loop, issued by the producer
  std::unordered_map<const CopyOp*, Expr> guards_;  ///< copies hoisted out of `if guard:` (HoistGuardedCopies)
  Stmt rewritten_loop_;                              ///< owns loop_ when HoistGuardedCopies rewrote it
  std::vector<cuda::Im2colNest> im2cols_;  ///< T.im2col nests of the loop the producer loads
  std::vector<bool> im2col_panelled_;     ///< per nest: its tile is in wgmma panels
  std::unordered_set<const BufferNode*> wgmma_operands_, gemm_operands_;  ///< (TmaUnfit's, computed once)
  bool operands_known_ = false;
  std::unordered_set<const BufferNode*> produced_;
  std::unordered_map<const BufferNode*, Buffer> staged_;
  std::string why_not_;
  bool split_groups_;
};

class KernelRewriter : public IRMutator {
 public:
  KernelRewriter(const PrimFunc& f, PassContext& ctx, bool disabled) : f_(f), ctx_(ctx), disabled_(disabled) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    const auto* binding = As<For>(op->body);
    LoopCounter count;
    count.Visit(op->body);
    if (!binding || binding->for_kind != ForKind::kThreadBinding || count.pipelined == 0) return self;
    if (disabled_) {
      ctx_.remarks.push_back("warp specialization is off (tl.disable_warp_specialized / tl.disable_tma_lower)");
      return self;
    }
    Specializer sp(f_, ctx_);
    sp.tx_ = binding->var;
    sp.binding_span_ = binding->body->span;
    Stmt body = sp.Run(op, binding);
    if (!body) {
      int line = sp.loop() ? sp.loop()->span.line : op->span.line;
      ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(line) + ": not warp-specialized (" +
                             sp.why_not() + ")");
      return self;
    }
    Stmt b = For::Make(binding->var, binding->min, binding->extent, binding->for_kind, body, binding->annotations,
                       binding->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, b, op->span);
  }

 private:
  const PrimFunc& f_;
  PassContext& ctx_;
  bool disabled_;
};

}  // namespace

ir::PrimFunc CudaWarpSpecialize(const ir::PrimFunc& f, PassContext& ctx) {
  auto arch = ctx.config.find("tl.target_arch");
  if (arch == ctx.config.end() || arch->second != "sm_90a") return f;
  bool disabled = ConfigTrue(ctx, "tl.disable_warp_specialized") || ConfigTrue(ctx, "tl.disable_tma_lower");
  ir::Stmt body = KernelRewriter(f, ctx, disabled).Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-warp-specialize", CudaWarpSpecialize);

}  // namespace tl::transform
