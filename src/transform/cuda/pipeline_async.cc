// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-pipeline": T.Pipelined(n, num_stages=s) as an s-stage cp.async pipeline.
///
/// The copies global -> shared that open the loop body are the producers; the rest of
/// the body consumes. Each produced shared buffer gets a leading stage dimension of size s.
///
///   for p in [0, s-1):  if p < n: produce(p) into stage p;  commit
///   for k in [0, n):
///     wait until at most s-2 groups are pending; __syncthreads
///     if k + s - 1 < n: produce(k + s - 1) into stage (k + s - 1) % s
///     commit                      (an empty group when nothing was issued keeps counts uniform)
///     consume(k) from stage k % s
///   wait for all groups
///
/// The barrier at the top of iteration k orders every thread's reads of stage (k-1) % s
/// (consumed in k-1) before it is refilled, and makes the copies of stage k visible.
/// Correct for any n, including n < s and n = 0. Loops that do not fit this shape run in
/// order, and the reason is recorded.
///
/// "tl.pipeline_refill_first" (off; 1: on) refills before the wait, as upstream's code does,
/// at the cost of a second barrier:
///
///   for k in [0, n):
///     __syncthreads                (every thread is done with stage (k-1) % s)
///     if k + s - 1 < n: produce(k + s - 1) into stage (k + s - 1) % s;  commit
///     wait until at most s-1 groups are pending; __syncthreads
///     consume(k) from stage k % s
///
/// so the next stage's loads are in flight while the step waits for its own. Measured on the
/// H100 with upstream's emitter GEMM (4096^3, two stages of mma.sync, two blocks an SM): 0.4271
/// and 0.4285 ms against 0.4087 with the wait first; hence off.
///
/// When the stages are read only by the first r consumer statements (register copies:
/// cuda::StageReadersPrefix; "tl.pipeline_early_refill", on), or the loop gathers rows and its
/// last reader of the stages is statement r (cuda::StageReadersThrough; r may be the last
/// statement), s loads are kept in flight:
///
///   for p in [0, s):  if p < n: produce(p) into stage p;  commit
///   for k in [0, n):
///     wait until at most s-1 groups are pending; __syncthreads
///     consume_1..r(k) from stage k % s;  __syncthreads
///     if k + s < n: produce(k + s) into stage k % s
///     commit
///     consume_r+1..(k)
///
/// When the copies' tiles are read last by different statements (cuda::PerCopyRefillGroups;
/// "tl.pipeline_refill_per_copy", off: no gain on the H100), each group of copies gets its own refill point after
/// its last reader and its own wait before its first reader (PerCopyPipeline).
///
/// num_stages=1 ("tl.pipeline_single_stage", on) keeps the tiles single and loads the next
/// iteration into each right after its last reader, as upstream does: one load in flight,
/// overlapping the statements after that reader (fused MoE: the up-projection's weights
/// load under the gate GEMM and the next gate weights under the up GEMM). The readers may be
/// GEMMs that finish their operands before returning (cuda::StageReadersThrough).
#include <algorithm>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "copy_lowering.h"
#include "gather_copy.h"
#include "pass_helpers.h"
#include "pipeline_schedule.h"
#include "thread_binding.h"
#include "thread_share.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using cuda::CallStmt;

/// Finds the pipelined loops and decides which shared buffers get stages.
struct Planner : IRVisitor {
  /// "tl.enable_gather_pipeline" (on): element copies into shared tiles (gather_copy.h) are
  /// prefetched too. Checked on the H200 (gathers fuzz, upstream's sparse MLA forward: 2.7x).
  bool gathers_on = true;
  /// "tl.pipeline_single_stage" (on): num_stages=1 loads the next iteration after the last reader.
  bool single_stage_on = true;
  std::unordered_map<const BufferNode*, int64_t> stages;  // buffer -> number of stages
  std::unordered_map<const For*, std::vector<cuda::GatherCopy>> gathers;
  std::unordered_map<const For*, std::vector<std::string>> gathers_refused;
  void Visit_(const For* op) override {
    if (op->for_kind == ForKind::kPipelined && cuda::NumStages(op) >= 2) {
      std::string why;
      auto ps = cuda::PipelineProducers(op, &why);
      for (const CopyOp* c : ps) stages[c->dst.buffer.get()] = cuda::NumStages(op);
      std::vector<std::string> refused;
      auto found = cuda::PipelineGathers(op, ps, &refused);
      if (gathers_on) {
        for (const auto& g : found) stages[g.store->buffer.get()] = cuda::NumStages(op);
        gathers[op] = found;
        gathers_refused[op] = refused;
      } else if (!found.empty()) {
        gathers_refused[op].push_back(std::to_string(found.size()) + " element copy(ies) into shared tiles could be "
                                      "prefetched, but tl.enable_gather_pipeline is off");
      }
    }
    IRVisitor::Visit_(op);
  }
};

class Pipeliner : public cuda::ThreadShareMutator {
 public:
  Pipeliner(const Planner& plan, const VarRef& tx, int64_t threads, bool program_waits, PassContext& ctx)
      : plan_(plan), ctx_(ctx), threads_(threads), program_waits_(program_waits) {
    share_.Bind(tx, threads);
  }

 protected:
  // (ThreadShareMutator: in a branch on a range of threads, `if tx < 32: ... else:
  // <pipelined loop>`, the staged copies are spread over the range's threads.)

  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    auto it = plan_.stages.find(op->buffer.get());
    if (it == plan_.stages.end()) return self;
    Buffer staged = cuda::StagedBuffer(op->buffer, it->second);
    staged_[op->buffer.get()] = staged;
    return Allocate::Make(staged, op->init, op->span);
  }

  /// An element copy of gathered rows outside a pipeline (`T.Pipelined(n, num_stages=0)`,
  /// a plain loop; cuda::MatchGatherCopy) is done 16 bytes at a time too: cp.async groups of
  /// the whole block, then waited for. Element stores would move 2 bytes each. The barrier
  /// before them orders earlier reads of the tile (the barrier pass leaves cp.async writes
  /// to their issuer); the one after, before the tile's readers, comes from that pass.
  std::optional<Stmt> GatherInPlace(const For* op, const Stmt& self) {
    std::string why;
    const target::CudaTarget& arch = ctx_.Cuda();  // (an unknown arch: cp.async assumed)
    if (in_pipeline_ || !plan_.gathers_on || (arch.Known() && !arch.HasCpAsync()) || share_.Unranged() ||
        share_.SpreadThreads() != threads_) {
      return std::nullopt;
    }
    auto gather = cuda::MatchGatherCopy(self, &why);
    if (!gather) return std::nullopt;
    ctx_.remarks.push_back("element copy into " + gather->store->buffer->name + " at line " +
                           std::to_string(op->span.line) +
                           ": 16-byte cp.async groups of gathered rows, waited for in place");
    return Seq::Make({CallStmt("syncthreads", {}, op->span), cuda::LowerGatherCopy(self, share_.Spread(), threads_),
                      CallStmt("cp_async_commit", {}, op->span), CallStmt("cp_async_wait", {MakeInt(0)}, op->span)},
                     op->span);
  }

  /// T.Parallel(prefer_async=True) (the loop annotation tl.prefer_async; 2: the program
  /// commits and waits itself, upstream's "parallel_async_without_async_commit_wait"): an
  /// element copy into a shared tile (cuda::MatchGatherCopy, a leading stage index allowed)
  /// as the program's own cp.async, 16 bytes per group over the threads at this point. They
  /// are T.ptx_cp_async copies for cuda-insert-barriers: a write of the tile where issued,
  /// landed at each T.ptx_wait_group. Nullopt where that cannot be done (a remark says why;
  /// GatherInPlace may still take the copy, or it stays synchronous).
  /// "tl.prefer_async_copies" (on by default; 0: such copies are lowered as other T.Parallel copies).
  std::optional<Stmt> PreferAsync(const For* op, const Stmt& self) {
    auto ann = op->annotations.find("tl.prefer_async");
    int64_t mode = 0;
    if (ann == op->annotations.end() || !AsConstInt(ann->second, &mode) || mode == 0) return std::nullopt;
    const std::string where = "T.Parallel(prefer_async=True) at line " + std::to_string(op->span.line);
    auto refuse = [&](const std::string& why) -> std::optional<Stmt> {
      ctx_.remarks.push_back(where + ": not issued as the program's cp.async (" + why + ")");
      return std::nullopt;
    };
    if (ctx_.Cuda().Known() && !ctx_.Cuda().HasCpAsync()) return refuse("cp.async is sm_80's");
    if (!cuda::ConfigOn(ctx_, "tl.prefer_async_copies", /*default_on=*/true)) {
      return refuse("tl.prefer_async_copies=0");
    }
    if (in_pipeline_) return refuse("it is inside a T.Pipelined loop staged with cp.async groups of the compiler's");
    if (share_.Unranged()) return refuse("it is under a branch on the thread index that is not a range of threads");
    std::string why;
    cuda::GatherIssue issue;
    issue.forms.leading_indices = issue.forms.nested_guards = true;
    auto gather = cuda::MatchGatherCopy(self, &why, issue.forms);
    if (!gather) return refuse("not an element copy from a global tensor into a shared tile: " + why);
    if (mode == 2 && !program_waits_) return refuse("the kernel has no T.ptx_wait_group to wait for it");
    issue.intrinsic = "ptx_cp_async";
    issue.guard_source = true;
    std::vector<Stmt> out = {cuda::LowerGatherCopy(self, share_.Spread(), share_.SpreadThreads(), issue)};
    if (mode != 2) {
      out.push_back(CallStmt("ptx_commit_group", {}, op->span));
      out.push_back(CallStmt("ptx_wait_group", {MakeInt(0)}, op->span));
    }
    ctx_.remarks.push_back(
        where + ": cp.async of 16 bytes per group into " + gather->store->buffer->name +
        (mode == 2 ? ", committed and waited for by the program" : ", then committed and waited for"));
    return Seq::Make(out, op->span);
  }

  /// A T.Pipelined loop with copies to prefetch, taken apart.
  struct LoopParts {
    const For* loop = nullptr;
    int64_t stages = 0;
    std::vector<const CopyOp*> producers;  ///< the copies global -> shared that open the body
    std::vector<cuda::GatherCopy> gathers;  ///< element copies of gathered rows into shared tiles
    std::vector<Stmt> gather_stmts;         ///< their statements
    std::vector<Stmt> consumers;            ///< the body's other statements, in order
  };

  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kParallel) {
      if (auto lowered = PreferAsync(op, self)) return *lowered;
      if (auto lowered = GatherInPlace(op, self)) return *lowered;
    }
    if (op->for_kind != ForKind::kPipelined) return IRMutator::Mutate_(op, self);
    LoopParts parts{op, cuda::NumStages(op)};
    std::string why = "its body has no copy from global to shared memory that can be prefetched";
    if (parts.stages == 1 && plan_.single_stage_on) {
      parts.producers = cuda::PipelineProducers(op, &why);
    } else if (parts.stages >= 2) {
      parts.producers = cuda::PipelineProducers(op, &why);
      if (auto it = plan_.gathers.find(op); it != plan_.gathers.end()) parts.gathers = it->second;
      if (auto it = plan_.gathers_refused.find(op); it != plan_.gathers_refused.end()) {
        for (const std::string& r : it->second) {
          ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(op->span.line) + ": " + r);
        }
      }
    }
    if (parts.producers.empty() && parts.gathers.empty()) {
      if (parts.stages >= 2) {
        ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(op->span.line) + ": runs in order (" + why +
                               ")");
      }
      return For::Make(op->var, op->min, op->extent, ForKind::kSerial, Mutate(op->body), {}, op->span);
    }
    for (const Stmt& st : cuda::Flatten(op->body)) {
      bool is_producer = false, is_gather = false;
      for (const CopyOp* c : parts.producers) is_producer |= st.get() == c;
      for (const auto& g : parts.gathers) is_gather |= st.get() == static_cast<const StmtNode*>(g.nest);
      if (is_gather) parts.gather_stmts.push_back(st);
      if (!is_producer && !is_gather) parts.consumers.push_back(st);
    }
    if (parts.stages == 1) return SingleStagePipeline(parts);
    cuda::CheckWgmmaWaited(op, [&](const BufferNode* b) { return plan_.stages.count(b) > 0; });
    cuda::CheckNoProgramGroups(op);
    const size_t readers = LeadingStageReaders(parts);
    std::vector<cuda::RefillGroup> groups = RefillGroups(parts, readers);
    return groups.empty() ? UniformPipeline(parts, readers) : PerCopyPipeline(parts, groups);
  }

  /// The loads of iteration `iter` into `stage` (of the copies `only` lists, and then no
  /// gathers).
  Stmt Produce(const LoopParts& parts, const Expr& iter, const Expr& stage,
               const std::vector<size_t>* only = nullptr) {
    const For* op = parts.loop;
    std::vector<Stmt> out;
    for (size_t ci = 0; ci < parts.producers.size(); ++ci) {
      if (only && std::find(only->begin(), only->end(), ci) == only->end()) continue;
      const CopyOp* c = parts.producers[ci];
      Region src = cuda::SubstituteRegion(c->src, op->var.get(), op->min + iter);
      Region dst = cuda::SubstituteRegion(c->dst, op->var.get(), op->min + iter);
      cuda::StageSelector sel(staged_, stage);
      Stmt copy = CopyOp::Make(sel.MutateRegion(src), sel.MutateRegion(dst), c->span, c->disable_tma);
      if (share_.Unranged()) {
        TL_USER_ERROR(c->span) << "T.copy in a T.Pipelined loop under a condition on the thread index that does "
                                  "not select a range of threads (tx < c, tx >= c, and their conjunctions): "
                                  "test a range, or move the loop out";
      }
      Stmt lowered = cuda::LowerCopyPartitioned(As<CopyOp>(copy), share_.Spread(), share_.SpreadThreads(), true, ctx_);
      out.push_back(lowered ? lowered : copy);
    }
    for (const Stmt& g : only ? std::vector<Stmt>{} : parts.gather_stmts) {
      // the iteration's element copy as 16-byte cp.async groups, into the stage's tile
      Stmt at = Substitute(g, [&](const Var* v) -> Expr { return v == op->var.get() ? op->min + iter : nullptr; });
      cuda::StageSelector sel(staged_, stage);
      out.push_back(sel.Mutate(cuda::LowerGatherCopy(at, share_.Spread(), share_.SpreadThreads())));
    }
    return Seq::Make(out, op->span);
  }

  /// `if iter < n: Produce(iter, iter % s)`, then a commit: one group of loads.
  std::vector<Stmt> ProduceGroup(const LoopParts& parts, const Expr& iter, const Expr& stage,
                                 const std::vector<size_t>* only = nullptr) {
    const Span& span = parts.loop->span;
    return {IfThenElse::Make(LT(iter, parts.loop->extent), Produce(parts, iter, stage, only), nullptr, span),
            CallStmt("cp_async_commit", {}, span)};
  }

  /// Consumer statement i of step k, reading stage k % s (`consume`).
  Stmt Consume(const LoopParts& parts, size_t i, const VarRef& k, cuda::StageSelector& consume) {
    const bool outer = in_pipeline_;
    in_pipeline_ = true;  // (a gather the pipeline left among its consumers stays as it is)
    Stmt mutated = Mutate(parts.consumers[i]);
    in_pipeline_ = outer;
    const For* op = parts.loop;
    Stmt x = Substitute(mutated, [&](const Var* v) -> Expr { return v == op->var.get() ? op->min + k : nullptr; });
    return consume.Mutate(x);
  }

  /// The consumers that read the stages, when they come first (cuda::StageReadersPrefix):
  /// a stage is refilled as soon as they are done, so s loads are in flight, not s - 1.
  /// A loop that gathers rows: refilled once its last reader is done (the end of the body,
  /// often), which keeps s gathers in flight too (cuda::StageReadersThrough). 0: neither.
  size_t LeadingStageReaders(const LoopParts& parts) {
    if (!cuda::ConfigOn(ctx_, "tl.pipeline_early_refill", /*default_on=*/true)) return 0;
    std::unordered_set<const BufferNode*> stage_tiles;
    for (const CopyOp* c : parts.producers) stage_tiles.insert(c->dst.buffer.get());
    for (const auto& g : parts.gathers) stage_tiles.insert(g.store->buffer.get());
    return parts.gathers.empty() ? cuda::StageReadersPrefix(parts.consumers, stage_tiles)
                                 : cuda::StageReadersThrough(parts.consumers, stage_tiles);
  }

  /// Copies whose tiles different statements read last: each refilled after its own last
  /// reader, each waited for before its first (PerCopyRefillGroups). Not when the leading
  /// statements read every stage (`readers`): one refill point after them frees all stages
  /// as early, with one barrier fewer (mHC post's register copies). Empty: one refill point.
  std::vector<cuda::RefillGroup> RefillGroups(const LoopParts& parts, size_t readers) {
    if (readers || !parts.gathers.empty() || !cuda::ConfigOn(ctx_, "tl.pipeline_early_refill", /*default_on=*/true) ||
        // (off: no gain on the H100 for the bf16 x fp4 dequantizing GEMM, 0.2707-0.2730 ms
        // against 0.2711-0.2737; loops that gather rows, as the sparse MLA ones, never take it)
        !cuda::ConfigOn(ctx_, "tl.pipeline_refill_per_copy", /*default_on=*/false)) {
      return {};
    }
    std::vector<const BufferNode*> tiles;
    for (const CopyOp* c : parts.producers) tiles.push_back(c->dst.buffer.get());
    return cuda::PerCopyRefillGroups(parts.consumers, tiles);
  }

  /// num_stages=1: each tile refilled with the next iteration's load after its last reader
  /// (per group of copies with their own last reader, else after the last reader of all),
  /// when every statement reading the tiles is done with them when it returns.
  Stmt SingleStagePipeline(const LoopParts& parts) {
    const For* op = parts.loop;
    std::unordered_set<const BufferNode*> stage_tiles;
    std::vector<const BufferNode*> tiles;
    for (const CopyOp* c : parts.producers) {
      stage_tiles.insert(c->dst.buffer.get());
      tiles.push_back(c->dst.buffer.get());
    }
    // (A loop with cp.async groups of the program's own keeps its order: ours would shift
    // the counts its waits assume.)
    const bool program_groups = cuda::HasProgramGroups(op);
    const size_t through = program_groups ? 0 : cuda::StageReadersThrough(parts.consumers, stage_tiles);
    if (!through) {
      ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(op->span.line) +
                             ": one stage, loads in order (" +
                             (program_groups ? std::string("the loop commits or waits for cp.async groups itself")
                                             : std::string("a statement reading the loaded tiles may still read them "
                                                           "after it returns, or none reads them")) +
                             ")");
      return For::Make(op->var, op->min, op->extent, ForKind::kSerial, Mutate(op->body), {}, op->span);
    }
    std::vector<cuda::RefillGroup> groups = cuda::PerCopyRefillGroups(parts.consumers, tiles);
    if (groups.empty()) {
      // One group: every copy waited for before the first reader of any (statements before
      // it, a load into registers say, run under the wait) and refilled after the last.
      cuda::RefillGroup all{{}, 0, through - 1};
      for (size_t c = 0; c < parts.producers.size(); ++c) all.copies.push_back(c);
      while (all.first_reader < through - 1) {
        bool reads = false;
        for (const BufferNode* b : cuda::BuffersOf(parts.consumers[all.first_reader]))
          reads |= stage_tiles.count(b) > 0;
        if (reads) break;
        ++all.first_reader;
      }
      groups.push_back(all);
    }
    return PerCopyPipeline(parts, groups);
  }

  /// Whether the pipeline refills before its wait (tl.pipeline_refill_first: the file's
  /// comment).
  bool RefillFirst() const { return cuda::ConfigTrue(ctx_, "tl.pipeline_refill_first"); }

  /// The pipeline with one refill point (the file's comment): after the wait at the top of
  /// the step (before it: RefillFirst), or after the first `readers` consumers.
  Stmt UniformPipeline(const LoopParts& parts, size_t readers) {
    const For* op = parts.loop;
    const Span& span = op->span;
    const int64_t s = parts.stages;
    const int64_t ahead = readers ? s : s - 1;  // loads issued before the one a step consumes
    std::vector<Stmt> result;
    for (int64_t p = 0; p < ahead; ++p) {
      for (Stmt& st : ProduceGroup(parts, MakeInt(p), MakeInt(p))) result.push_back(st);
    }
    VarRef k = Var::Make(op->var->name, op->var->dtype);
    Expr next = k + MakeInt(ahead);
    std::vector<Stmt> refill = ProduceGroup(parts, next, FloorMod(next, MakeInt(s)));
    std::vector<Stmt> body;
    const bool refill_first = !readers && RefillFirst();
    if (refill_first) {
      body.push_back(CallStmt("syncthreads", {}, span));
      body.insert(body.end(), refill.begin(), refill.end());
      body.push_back(CallStmt("cp_async_wait", {MakeInt(ahead)}, span));
      body.push_back(CallStmt("syncthreads", {}, span));
    } else {
      body = {CallStmt("cp_async_wait", {MakeInt(ahead - 1)}, span), CallStmt("syncthreads", {}, span)};
      if (!readers) body.insert(body.end(), refill.begin(), refill.end());
    }
    cuda::StageSelector consume(staged_, FloorMod(k, MakeInt(s)));
    for (size_t i = 0; i <= parts.consumers.size(); ++i) {
      if (readers && i == readers) {
        // Every thread is done reading stage k % s before any refills it.
        body.push_back(CallStmt("syncthreads", {}, span));
        body.insert(body.end(), refill.begin(), refill.end());
      }
      if (i < parts.consumers.size()) body.push_back(Consume(parts, i, k, consume));
    }
    result.push_back(For::Make(k, MakeInt(0), op->extent, ForKind::kSerial, Seq::Make(body, span), {}, span));
    result.push_back(CallStmt("cp_async_wait", {MakeInt(0)}, span));
    const size_t n_consumers = parts.consumers.size();
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": " + std::to_string(s) +
                           "-stage cp.async pipeline over " + std::to_string(parts.producers.size()) + " copies" +
                           (parts.gathers.empty() ? "" : " and " + std::to_string(parts.gathers.size()) +
                                                             " element copies (16-byte groups of gathered rows)") +
                           (!readers ? (refill_first ? "; each stage refilled before the wait for the one a step "
                                                       "reads (" + std::to_string(s) + " loads in flight, "
                                                       "tl.pipeline_refill_first)"
                                                     : "")
                            : readers == n_consumers
                                ? "; each stage refilled at the end of the step that read it (" + std::to_string(s) +
                                      " loads in flight)"
                                : "; each stage refilled once the first " + std::to_string(readers) +
                                      " statement(s) have read it (" + std::to_string(s) + " loads in flight)"));
    return Seq::Make(result, span);
  }

  /// The s-stage pipeline with a refill point per group of copies (cuda::RefillGroup, G
  /// groups ordered by their last reader):
  ///
  ///   for p in [0, s): for g in groups: if p < n: produce_g(p) into stage p;  commit
  ///   for k in [0, n):
  ///     for each consumer statement i:
  ///       if i first reads group g (the newest such): wait until at most
  ///           (G - 1 - g) + (s - 1) G + (groups refilled earlier in this step) are pending;
  ///           __syncthreads
  ///       consume_i(k) from stage k % s
  ///       if i last reads group g: __syncthreads; if k + s < n: produce_g(k + s) into
  ///           stage k % s;  commit (an empty group too: the counts stay uniform)
  ///   wait for all groups
  ///
  /// Groups are committed in the order (iteration, group), so the groups newer than (k, g)
  /// when statement i runs are those of g's later groups in step k, all of steps k + 1 ..
  /// k + s - 1, and the refills this step has issued so far.
  Stmt PerCopyPipeline(const LoopParts& parts, const std::vector<cuda::RefillGroup>& groups) {
    const For* op = parts.loop;
    const Span& span = op->span;
    const int64_t s = parts.stages;
    const int64_t g_count = static_cast<int64_t>(groups.size());
    std::vector<Stmt> result;
    for (int64_t p = 0; p < s; ++p) {
      for (const cuda::RefillGroup& g : groups) {
        for (Stmt& st : ProduceGroup(parts, MakeInt(p), MakeInt(p), &g.copies)) result.push_back(st);
      }
    }
    VarRef k = Var::Make(op->var->name, op->var->dtype);
    Expr next = k + MakeInt(s);
    cuda::StageSelector consume(staged_, FloorMod(k, MakeInt(s)));
    std::vector<Stmt> body;
    int64_t covered = -1;  // the newest group this step has waited for
    for (size_t i = 0; i < parts.consumers.size(); ++i) {
      int64_t wait_for = -1, refilled = 0;
      for (int64_t g = 0; g < g_count; ++g) {
        if (groups[g].first_reader == i) wait_for = std::max(wait_for, g);
        if (groups[g].last_reader < i) ++refilled;
      }
      if (wait_for > covered) {
        const int64_t pending = (g_count - 1 - wait_for) + (s - 1) * g_count + refilled;
        body.push_back(CallStmt("cp_async_wait", {MakeInt(pending)}, span));
        body.push_back(CallStmt("syncthreads", {}, span));
        covered = wait_for;
      }
      body.push_back(Consume(parts, i, k, consume));
      for (const cuda::RefillGroup& g : groups) {
        if (g.last_reader != i) continue;
        // Every thread is done reading this group's stage k % s before any refills it.
        body.push_back(CallStmt("syncthreads", {}, span));
        for (Stmt& st : ProduceGroup(parts, next, FloorMod(next, MakeInt(s)), &g.copies)) body.push_back(st);
      }
    }
    result.push_back(For::Make(k, MakeInt(0), op->extent, ForKind::kSerial, Seq::Make(body, span), {}, span));
    result.push_back(CallStmt("cp_async_wait", {MakeInt(0)}, span));
    std::string points;
    for (const cuda::RefillGroup& g : groups) {
      std::string names;
      for (size_t c : g.copies) names += (names.empty() ? "" : ", ") + parts.producers[c]->dst.buffer->name;
      points += (points.empty() ? "" : "; ") + names + " after line " +
                std::to_string(parts.consumers[g.last_reader]->span.line);
    }
    if (s == 1) {
      ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) +
                             ": one stage; the next iteration's loads issued as cp.async after the tiles' last "
                             "reader (" +
                             points + "), each waited for before its first reader (tl.pipeline_single_stage)");
      return Seq::Make(result, span);
    }
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": " + std::to_string(s) +
                           "-stage cp.async pipeline, each copy's stage refilled after its own last reader (" +
                           points + "), each waited for before its first reader: " + std::to_string(s) +
                           " loads of each in flight (tl.pipeline_refill_per_copy)");
    return Seq::Make(result, span);
  }

 private:
  const Planner& plan_;
  PassContext& ctx_;
  int64_t threads_;
  bool in_pipeline_ = false;  ///< mutating a pipelined loop's consumers
  std::unordered_map<const BufferNode*, Buffer> staged_;
  const bool program_waits_;  ///< the kernel has a T.ptx_wait_group
};

}  // namespace

ir::PrimFunc CudaPipeline(const ir::PrimFunc& f, PassContext& ctx) {
  cuda::ThreadBinding tb = cuda::GetThreadBinding(f->body, "cuda-pipeline");
  ir::Stmt body = cuda::InlinePipelineIndexLets(f->body);
  Planner plan;
  plan.gathers_on = cuda::ConfigOn(ctx, "tl.enable_gather_pipeline", /*default_on=*/true);
  plan.single_stage_on = cuda::ConfigOn(ctx, "tl.pipeline_single_stage", /*default_on=*/true);
  plan.Visit(body);
  bool program_waits = false;
  ForEachExpr(body, [&](const Expr& e) { program_waits |= HasEffect(As<Call>(e), kProgramGroupWait); });
  Pipeliner p(plan, tb.tx, tb.threads, program_waits, ctx);
  return ir::PrimFuncNode::Make(f->name, f->params, p.Mutate(body), f->span);
}

TL_REGISTER_PASS("cuda-pipeline", CudaPipeline);

}  // namespace tl::transform
