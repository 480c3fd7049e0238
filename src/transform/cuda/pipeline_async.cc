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
/// "tl.pipeline_refill_per_copy", off until checked on a GPU), each group of copies gets its own refill point after
/// its last reader and its own wait before its first reader (PerCopyPipeline).
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
  Pipeliner(const Planner& plan, const VarRef& tx, int64_t threads, PassContext& ctx)
      : plan_(plan), ctx_(ctx), threads_(threads) {
    share_.Bind(tx, threads);
  }

 protected:
  /// T.wgmma_gemm's wgmmas read their shared operands until a T.wait_wgmma. The loads this
  /// loop prefetches go into the stage the previous iteration read, so a T.wgmma_gemm on a
  /// staged tile must be waited for with T.wait_wgmma(0) later in the same iteration;
  /// otherwise the next loads would overwrite operands its wgmmas may still read.
  void CheckWgmmaWaited(const For* loop) {
    bool pending = false;
    ForEachExpr(loop->body, [&](const Expr& e) {
      const auto* call = As<Call>(e);
      int64_t n = -1;
      if (HasEffect(call, kWgmmaInFlight)) {
        for (int k = 0; k < 2; ++k) {
          const auto* addr = As<Call>(call->args[k]);
          const auto* load = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
          pending |= load && plan_.stages.count(load->buffer.get()) > 0;
        }
      } else if (HasEffect(call, kWgmmaWait) && AsConstInt(call->args[0], &n) && n == 0) {
        pending = false;
      }
    });
    if (pending) {
      TL_USER_ERROR(loop->span) << "T.Pipelined: a T.wgmma_gemm on a tile this loop stages is not waited for with "
                                   "T.wait_wgmma(0) later in the same iteration; the next iteration's loads into "
                                   "its stage would overwrite operands its wgmmas may still read";
    }
  }

  /// This loop's stages are cp.async groups whose waits count them: a group the program
  /// commits itself in the body (T.ptx_commit_group), or a wait of its own, would shift
  /// the count, and a stage could be read before it landed. Refused at the user's line.
  static void CheckNoProgramGroups(const For* loop) {
    struct Finder : IRVisitor {
      void Visit_(const Evaluate* ev) override {
        const auto* call = As<Call>(ev->value);
        if (call && (call->op == "ptx_commit_group" || HasEffect(call, kProgramGroupWait))) {
          TL_USER_ERROR(ev->span) << "T." << call->op << " inside a T.Pipelined loop that this compiler stages with "
                                  << "cp.async groups of its own (its waits count them): commit and wait for "
                                  << "T.ptx_cp_async copies outside the loop, or give it num_stages=0";
        }
      }
    } finder;
    finder.Visit(loop->body);
  }

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
    const int sm = cuda::TargetSm(ctx_);  // (cp.async is sm_80's; 0: the arch is not known)
    if (in_pipeline_ || !plan_.gathers_on || (sm != 0 && sm < 80) || share_.Unranged() ||
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

  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kParallel) {
      if (auto lowered = GatherInPlace(op, self)) return *lowered;
    }
    if (op->for_kind != ForKind::kPipelined) return IRMutator::Mutate_(op, self);
    int64_t s = cuda::NumStages(op);
    std::string why = "its body has no copy from global to shared memory that can be prefetched";
    std::vector<const CopyOp*> producers;
    std::vector<cuda::GatherCopy> gathers;
    if (s >= 2) {
      producers = cuda::PipelineProducers(op, &why);
      if (auto it = plan_.gathers.find(op); it != plan_.gathers.end()) gathers = it->second;
      if (auto it = plan_.gathers_refused.find(op); it != plan_.gathers_refused.end()) {
        for (const std::string& r : it->second) {
          ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(op->span.line) + ": " + r);
        }
      }
    }
    if (!producers.empty() || !gathers.empty()) {
      CheckWgmmaWaited(op);
      CheckNoProgramGroups(op);
    }
    if (producers.empty() && gathers.empty()) {
      if (s >= 2) ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(op->span.line) + ": runs in order (" + why + ")");
      Stmt body = Mutate(op->body);
      return For::Make(op->var, op->min, op->extent, ForKind::kSerial, body, {}, op->span);
    }
    auto stmts = cuda::Flatten(op->body);
    std::vector<Stmt> consumers, gather_stmts;
    for (const Stmt& st : stmts) {
      bool is_producer = false, is_gather = false;
      for (const CopyOp* c : producers) is_producer |= st.get() == c;
      for (const auto& g : gathers) is_gather |= st.get() == static_cast<const StmtNode*>(g.nest);
      if (is_gather) gather_stmts.push_back(st);
      if (!is_producer && !is_gather) consumers.push_back(st);
    }
    const Span& span = op->span;
    Expr n = op->extent;
    // produce(iter, stage[, only]): the loads of iteration `iter` into `stage` (of the copies
    // `only` lists, and then no gathers)
    auto produce = [&](const Expr& iter, const Expr& stage, const std::vector<size_t>* only = nullptr) {
      std::vector<Stmt> out;
      for (size_t ci = 0; ci < producers.size(); ++ci) {
        if (only && std::find(only->begin(), only->end(), ci) == only->end()) continue;
        const CopyOp* c = producers[ci];
        Region src = cuda::SubstituteRegion(c->src, op->var.get(), op->min + iter);
        Region dst = cuda::SubstituteRegion(c->dst, op->var.get(), op->min + iter);
        cuda::StageSelector sel(staged_, stage);
        Stmt copy = CopyOp::Make(sel.MutateRegion(src), sel.MutateRegion(dst), c->span);
        if (share_.Unranged()) {
          TL_USER_ERROR(c->span) << "T.copy in a T.Pipelined loop under a condition on the thread index that does "
                                    "not select a range of threads (tx < c, tx >= c, and their conjunctions): "
                                    "test a range, or move the loop out";
        }
        Stmt lowered = cuda::LowerCopyPartitioned(As<CopyOp>(copy), share_.Spread(), share_.SpreadThreads(), true, ctx_);
        out.push_back(lowered ? lowered : copy);
      }
      for (const Stmt& g : only ? std::vector<Stmt>{} : gather_stmts) {
        // the iteration's element copy as 16-byte cp.async groups, into the stage's tile
        Stmt at = Substitute(g, [&](const Var* v) -> Expr { return v == op->var.get() ? op->min + iter : nullptr; });
        cuda::StageSelector sel(staged_, stage);
        out.push_back(sel.Mutate(cuda::LowerGatherCopy(at, share_.Spread(), share_.SpreadThreads())));
      }
      return Seq::Make(out, span);
    };
    // The consumers that read the stages, when they come first (cuda::StageReadersPrefix):
    // a stage is refilled as soon as they are done, so s loads are in flight, not s - 1.
    // A loop that gathers rows: refilled once its last reader is done (the end of the body,
    // often), which keeps s gathers in flight too (cuda::StageReadersThrough).
    size_t readers = 0;
    if (cuda::ConfigOn(ctx_, "tl.pipeline_early_refill", /*default_on=*/true)) {
      std::unordered_set<const BufferNode*> stage_tiles;
      for (const CopyOp* c : producers) stage_tiles.insert(c->dst.buffer.get());
      for (const auto& g : gathers) stage_tiles.insert(g.store->buffer.get());
      readers = gathers.empty() ? cuda::StageReadersPrefix(consumers, stage_tiles)
                                : cuda::StageReadersThrough(consumers, stage_tiles);
    }
    // Copies whose tiles different statements read last: each refilled after its own last
    // reader, each waited for before its first (PerCopyRefillGroups). Not when the leading
    // statements read every stage (`readers`): one refill point after them frees all stages
    // as early, with one barrier fewer (mHC post's register copies).
    std::vector<cuda::RefillGroup> groups;
    if (!readers && gathers.empty() && cuda::ConfigOn(ctx_, "tl.pipeline_early_refill", /*default_on=*/true) &&
        // (off until a GPU run has checked the schedule's wait counts: written after the last
        // device call of the session that wrote it)
        cuda::ConfigOn(ctx_, "tl.pipeline_refill_per_copy", /*default_on=*/false)) {
      std::vector<const BufferNode*> tiles;
      for (const CopyOp* c : producers) tiles.push_back(c->dst.buffer.get());
      groups = cuda::PerCopyRefillGroups(consumers, tiles);
    }
    if (!groups.empty()) return PerCopyPipeline(op, groups, producers, consumers, produce, s);
    int64_t ahead = readers ? s : s - 1;  // loads issued before the one a step consumes
    std::vector<Stmt> result;
    for (int64_t p = 0; p < ahead; ++p) {
      result.push_back(IfThenElse::Make(LT(MakeInt(p), n), produce(MakeInt(p), MakeInt(p)), nullptr, span));
      result.push_back(CallStmt("cp_async_commit", {}, span));
    }
    VarRef k = Var::Make(op->var->name, op->var->dtype);
    Expr next = k + MakeInt(ahead);
    Stmt refill = IfThenElse::Make(LT(next, n), produce(next, FloorMod(next, MakeInt(s))), nullptr, span);
    std::vector<Stmt> body;
    body.push_back(CallStmt("cp_async_wait", {MakeInt(ahead - 1)}, span));
    body.push_back(CallStmt("syncthreads", {}, span));
    if (!readers) {
      body.push_back(refill);
      body.push_back(CallStmt("cp_async_commit", {}, span));
    }
    cuda::StageSelector consume(staged_, FloorMod(k, MakeInt(s)));
    for (size_t i = 0; i <= consumers.size(); ++i) {
      if (readers && i == readers) {
        // Every thread is done reading stage k % s before any refills it.
        body.push_back(CallStmt("syncthreads", {}, span));
        body.push_back(refill);
        body.push_back(CallStmt("cp_async_commit", {}, span));
      }
      if (i == consumers.size()) break;
      const bool outer = in_pipeline_;
      in_pipeline_ = true;  // (a gather the pipeline left among its consumers stays as it is)
      Stmt mutated = Mutate(consumers[i]);
      in_pipeline_ = outer;
      Stmt x = Substitute(mutated, [&](const Var* v) -> Expr { return v == op->var.get() ? op->min + k : nullptr; });
      body.push_back(consume.Mutate(x));
    }
    result.push_back(For::Make(k, MakeInt(0), n, ForKind::kSerial, Seq::Make(body, span), {}, span));
    result.push_back(CallStmt("cp_async_wait", {MakeInt(0)}, span));
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": " + std::to_string(s) +
                           "-stage cp.async pipeline over " + std::to_string(producers.size()) + " copies" +
                           (gathers.empty() ? "" : " and " + std::to_string(gathers.size()) +
                                                       " element copies (16-byte groups of gathered rows)") +
                           (!readers ? ""
                            : readers == consumers.size()
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
  template <typename Produce>
  Stmt PerCopyPipeline(const For* op, const std::vector<cuda::RefillGroup>& groups,
                       const std::vector<const CopyOp*>& producers, const std::vector<Stmt>& consumers,
                       Produce& produce, int64_t s) {
    const Span& span = op->span;
    const Expr n = op->extent;
    const int64_t g_count = static_cast<int64_t>(groups.size());
    std::vector<Stmt> result;
    for (int64_t p = 0; p < s; ++p) {
      for (const cuda::RefillGroup& g : groups) {
        result.push_back(IfThenElse::Make(LT(MakeInt(p), n), produce(MakeInt(p), MakeInt(p), &g.copies), nullptr, span));
        result.push_back(CallStmt("cp_async_commit", {}, span));
      }
    }
    VarRef k = Var::Make(op->var->name, op->var->dtype);
    Expr next = k + MakeInt(s);
    cuda::StageSelector consume(staged_, FloorMod(k, MakeInt(s)));
    std::vector<Stmt> body;
    int64_t covered = -1;  // the newest group this step has waited for
    for (size_t i = 0; i < consumers.size(); ++i) {
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
      const bool outer = in_pipeline_;
      in_pipeline_ = true;
      Stmt mutated = Mutate(consumers[i]);
      in_pipeline_ = outer;
      Stmt x = Substitute(mutated, [&](const Var* v) -> Expr { return v == op->var.get() ? op->min + k : nullptr; });
      body.push_back(consume.Mutate(x));
      for (const cuda::RefillGroup& g : groups) {
        if (g.last_reader != i) continue;
        // Every thread is done reading this group's stage k % s before any refills it.
        body.push_back(CallStmt("syncthreads", {}, span));
        body.push_back(
            IfThenElse::Make(LT(next, n), produce(next, FloorMod(next, MakeInt(s)), &g.copies), nullptr, span));
        body.push_back(CallStmt("cp_async_commit", {}, span));
      }
    }
    result.push_back(For::Make(k, MakeInt(0), n, ForKind::kSerial, Seq::Make(body, span), {}, span));
    result.push_back(CallStmt("cp_async_wait", {MakeInt(0)}, span));
    std::string points;
    for (const cuda::RefillGroup& g : groups) {
      std::string names;
      for (size_t c : g.copies) names += (names.empty() ? "" : ", ") + producers[c]->dst.buffer->name;
      points += (points.empty() ? "" : "; ") + names + " after line " + std::to_string(consumers[g.last_reader]->span.line);
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
};

}  // namespace

ir::PrimFunc CudaPipeline(const ir::PrimFunc& f, PassContext& ctx) {
  cuda::ThreadBinding tb = cuda::GetThreadBinding(f->body, "cuda-pipeline");
  ir::Stmt body = cuda::InlinePipelineIndexLets(f->body);
  Planner plan;
  plan.gathers_on = cuda::ConfigOn(ctx, "tl.enable_gather_pipeline", /*default_on=*/true);
  plan.Visit(body);
  Pipeliner p(plan, tb.tx, tb.threads, ctx);
  return ir::PrimFuncNode::Make(f->name, f->params, p.Mutate(body), f->span);
}

TL_REGISTER_PASS("cuda-pipeline", CudaPipeline);

}  // namespace tl::transform
