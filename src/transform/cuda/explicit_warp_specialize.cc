// SPDX-License-Identifier: Apache-2.0
/// \file Kernels that program Hopper's barriers themselves (explicit_barriers.h): the
/// "cuda-explicit-warp-specialize" pass, before the threads are bound, and
/// "cuda-lower-explicit-tma", after the fragment layouts (which decide the TMA boxes).
///
/// A kernel with `with T.ws(i):` blocks on two warpgroups is brought into the shape the
/// automatic warp specialization produces, which every later pass and the code generator
/// already handle: the warpgroup whose T.ws blocks hold the tile work (GEMMs, fragments,
/// copies) becomes the kernel's 128 threads, and the other the producer warpgroup launched
/// above them, `if ws_is_producer(128): P else: C`. P and C are the kernel body projected
/// on each warpgroup: its own T.ws blocks inlined, the other's dropped, and the statements
/// outside T.ws kept in both (every thread runs them once, so both copies run exactly what
/// the source's threads ran), except T.Parallel loops, the block's collective work, which
/// the consumers' copy does whole (spread over the kernel's threads, the consumers'). The
/// projection is faithful because two warpgroups only communicate through memory and the
/// barriers, which the program orders itself (and PublishCommonWrites, below, where the
/// block's own statements meet them). Shared tiles and the barriers are allocated before the
/// split; one thread initializes each barrier with its arrive count, then a fence and a
/// block barrier publish them.
///
/// The compiler adds one ordering of its own here, the block barrier a tile program has after
/// shared-memory writes that other threads read: statements outside T.ws that write shared
/// memory are followed, before the next T.ws block, by a barrier over both warpgroups
/// (PublishCommonWrites), since each warpgroup's own barriers cannot order the other's
/// writes. T.Pipelined loops run serially (the automatic pipelining and warp specialization
/// stay off, said in a remark), and a T.tma_copy becomes, on one thread,
/// mbarrier_expect_tx of its bytes and its TMA box loads.
///
/// What this cannot compile correctly is refused at its line: tile ops outside T.ws, tile
/// work in both warpgroups, a producer's own tile ops other than T.tma_copy, more than two
/// warpgroups, and TMA off sm_90a. The thread index keeps its source value in both (the
/// producer's per-thread copies, T.ptx_cp_async, address by it).
#include <algorithm>
#include <set>

#include "../explicit_barriers.h"
#include "../region_util.h"
#include "copy_lowering.h"
#include "pass_helpers.h"
#include "register_budget.h"
#include "shared_plan.h"
#include "tma_copy.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/target/cuda_target.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kWarpgroup = 128;

bool IsTileOp(const Stmt& s) {
  return As<CopyOp>(s) || As<GemmOp>(s) || As<FillOp>(s) || As<ReduceOp>(s) || As<AtomicOp>(s);
}


/// What the kernel's T.ws blocks hold, per warpgroup.
struct WsSurvey : IRVisitor {
  std::map<int64_t, Span> tile_work, tma;  ///< warpgroup -> first line of its tile work / T.tma_copy
  Span outside_tile_op, multi_group;
  int64_t group = -1;

  void Visit(const Stmt& s) override {
    if (s && IsTileOp(s)) {
      if (group < 0 && !outside_tile_op.Defined()) outside_tile_op = s->span;
      if (group >= 0 && !tile_work.count(group) && !(As<CopyOp>(s) && pending_tma_)) tile_work[group] = s->span;
      if (group >= 0 && pending_tma_ && !tma.count(group)) tma[group] = s->span;
      pending_tma_ = false;
    }
    IRVisitor::Visit(s);
  }
  void Visit_(const AttrStmt* op) override { pending_tma_ = op->key == kTmaCopyAttr; }
  void Visit_(const For* op) override {
    if (op->for_kind == ForKind::kParallel && group >= 0 && !tile_work.count(group)) tile_work[group] = op->span;
    IRVisitor::Visit_(op);
  }
  void Visit_(const IfThenElse* op) override {
    const AttrStmt* m = WsMarker(op->then_case);
    if (!m) return IRVisitor::Visit_(op);
    if (m->values.size() != 1 && !multi_group.Defined()) multi_group = op->span;
    int64_t g = -1;
    AsConstInt(m->values[0], &g);
    int64_t prev = group;
    group = g;
    Visit(op->then_case);
    group = prev;
  }

 private:
  bool pending_tma_ = false;
};

/// The kernel body as one warpgroup's threads run it (see the file comment).
class Projector : public IRMutator {
 public:
  Projector(int64_t group, bool producer, int64_t tx_offset) : group_(group), producer_(producer), offset_(tx_offset) {}

 protected:
  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    const AttrStmt* m = WsMarker(op->then_case);
    if (!m) return IRMutator::Mutate_(op, self);
    int64_t g = -1;
    AsConstInt(m->values[0], &g);
    if (g != group_) return Seq::Make({}, op->span);
    const bool outer = in_ws_;
    in_ws_ = true;
    Stmt kept = Mutate(op->then_case);
    in_ws_ = outer;
    return kept;
  }
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == kWsAttr || op->key == kBarrierInitAttr) return Seq::Make({}, op->span);
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    // Shared tiles are allocated before the split; the producer holds no fragments.
    if (op->buffer->scope == Scope::kShared) return Seq::Make({}, op->span);
    if (producer_ && op->buffer->scope == Scope::kFragment) return Seq::Make({}, op->span);
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const For* op, const Stmt& self) override {
    // A T.Parallel outside the T.ws blocks is the block's collective work: its iterations are
    // spread over the kernel's threads, which are the consumer warpgroup's after the split,
    // so the consumers' copy does all of it; a copy in the producer (spread as if its
    // threads were the kernel's) would repeat it at shifted indices, past its tiles' ends.
    if (producer_ && !in_ws_ && op->for_kind == ForKind::kParallel) {
      dropped_parallel_lines.push_back(op->span.line);
      return Seq::Make({}, op->span);
    }
    Stmt body = Mutate(op->body);
    ForKind kind = op->for_kind == ForKind::kPipelined ? ForKind::kSerial : op->for_kind;
    auto annotations = op->for_kind == ForKind::kPipelined ? std::map<std::string, Expr>{} : op->annotations;
    return For::Make(op->var, Mutate(op->min), Mutate(op->extent), kind, body, annotations, op->span);
  }
  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    span_ = op->span;
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    span_ = op->span;
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    span_ = op->span;
    return IRMutator::Mutate_(op, self);
  }
  /// In the producer, a let of the thread index that nothing left in its scope reads (its
  /// uses were in the other warpgroup's blocks: `tid = T.get_thread_binding()`, then
  /// `if tid >= 128:`) is dropped rather than refused.
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    if (!producer_) return IRMutator::Mutate_(op, self);
    const size_t n = op->stmts.size();
    std::vector<Stmt> out(n);
    for (size_t k = n; k-- > 0;) {
      const auto* let = As<LetStmt>(op->stmts[k]);
      if (let && HasEffect(As<Call>(let->value), kThreadIndex)) {
        bool used = false;
        for (size_t m = k + 1; m < n && !used; ++m) {
          if (!out[m]) continue;
          ForEachExpr(out[m], [&](const Expr& e) {
            used = used || UsesVar(e, [&](const Var* v) { return v == let->var.get(); });
          });
        }
        if (!used) continue;
      }
      out[k] = Mutate(op->stmts[k]);
    }
    std::vector<Stmt> kept;
    for (Stmt& st : out) {
      if (st) kept.push_back(std::move(st));
    }
    return Seq::Make(std::move(kept), op->span);
  }
  Expr Mutate_(const Call* op, const Expr& self) override {
    if (!HasEffect(op, kThreadIndex)) return IRMutator::Mutate_(op, self);
    return offset_ ? self + MakeInt(offset_) : self;
  }

 private:
  int64_t group_;
  bool producer_;
  int64_t offset_;
  bool in_ws_ = false;  ///< inside one of this warpgroup's T.ws blocks
  Span span_;

 public:
  /// The lines of the T.Parallel loops outside T.ws left to the consumers (producer only).
  std::vector<int> dropped_parallel_lines;
};

/// Collects the shared allocations (hoisted before the split) and barrier initializations.
struct Hoister : IRVisitor {
  std::vector<Stmt> allocs;
  std::vector<const AttrStmt*> inits;
  void Visit_(const Allocate* op) override {
    if (op->buffer->scope == Scope::kShared) {
      int64_t n = 0;
      if (!AsConstInt(op->buffer->NumElements(), &n)) {
        TL_USER_ERROR(op->span) << "shared tile " << op->buffer->name << " needs a static shape in a kernel with "
                                << "T.ws blocks (its tiles are allocated once, before the warpgroups split)";
      }
      allocs.push_back(Allocate::Make(op->buffer, nullptr, op->span));
    }
  }
  void Visit_(const AttrStmt* op) override {
    if (op->key == kBarrierInitAttr) inits.push_back(op);
  }
};

Expr ThreadIndex() { return Call::Make(DType::Int(32), "thread_binding", {MakeInt(0)}); }

/// One thread initializes every barrier, then the fence and a block barrier publish them.
std::vector<Stmt> BarrierInit(const std::vector<const AttrStmt*>& inits, const Span& span) {
  if (inits.empty()) return {};
  std::vector<Stmt> init;
  for (const AttrStmt* a : inits) {
    const auto* first = As<BufferLoad>(a->values[0]);
    for (size_t i = 1; i < a->values.size(); ++i) {
      init.push_back(cuda::CallStmt(
          "mbarrier_init", {AddressOf(first->buffer, {MakeInt(static_cast<int64_t>(i - 1))}), a->values[i]},
          a->span));
    }
  }
  init.push_back(cuda::CallStmt("mbarrier_init_fence", {}, span));
  return {IfThenElse::Make(EQ(ThreadIndex(), MakeInt(0)), Seq::Make(init, span), nullptr, span),
          cuda::CallStmt("syncthreads", {}, span)};
}

/// The named barrier the two warpgroups meet at after statements outside T.ws blocks that
/// write shared memory (PublishCommonWrites): the highest id the program does not use.
int64_t CommonWritesBarrierId(const Stmt& body) {
  const std::set<int64_t> used = cuda::ProgramNamedBarrierIds(body);
  int64_t id = 15;
  while (id > 1 && used.count(id)) --id;
  return id;
}

/// Statements outside the T.ws blocks are the whole block's (a T.Parallel there runs on the
/// consumers, the rest on both warpgroups), and what they write to shared memory one
/// warpgroup's T.ws blocks may read where the other's threads wrote it (minference's index
/// lists, written by all 256 threads, read by the producer's TMA addresses and the
/// consumers alike); the other way round, such a statement after the T.ws blocks may read
/// what either warpgroup wrote there, and a next round's writes must wait for the last
/// round's readers. Each warpgroup's barriers cover its own threads only, so between
/// shared-memory accesses on one side of that boundary and the first statement on the other
/// side that accesses shared memory, both projections get a barrier over all 256 threads,
/// at the same place in each (upstream puts a __syncthreads before its role split there).
/// A loop that holds both kinds of statement is scanned the same way inside, each iteration
/// starting from what the previous one may have left pending (both warpgroups run its
/// iterations alike, so they meet at the same barriers).
class CommonWritesPublisher {
 public:
  /// `body`: the kernel's, whose mbarriers (ordered by the program) do not count as shared
  /// memory here.
  CommonWritesPublisher(int64_t id, const Stmt& body) : id_(id) {
    struct Barriers : IRVisitor {
      std::unordered_set<const BufferNode*>* out;
      void Visit_(const AttrStmt* op) override {
        if (op->key == kBarrierInitAttr && !op->values.empty()) {
          if (const auto* load = As<BufferLoad>(op->values[0])) out->insert(load->buffer.get());
        }
        IRVisitor::Visit_(op);
      }
    } find;
    find.out = &barriers_;
    find.Visit(body);
  }
  bool published = false;

  /// Shared memory touched since the last barrier, outside the T.ws blocks and in them.
  struct Pending {
    bool common = false, ws = false;
    Pending operator|(const Pending& o) const { return {common || o.common, ws || o.ws}; }
  };

  /// `body` with the barriers, `*state` carried through it (`emit` false: only the state).
  Stmt Scan(const Stmt& body, Pending* state, bool emit) {
    std::vector<Stmt> out;
    for (const Stmt& st : FlattenSeq(body)) {
      const auto* loop = As<For>(st);
      if (loop && HasWs(loop->body) && HasCommon(loop->body)) {
        // A loop holding both: its body scanned where each iteration may start from what the
        // previous one left pending (a dry pass finds that), and what it leaves after.
        Pending dry = *state;
        Scan(loop->body, &dry, false);
        Pending entry = *state | dry;
        Stmt body2 = Scan(loop->body, &entry, emit);
        *state = entry | *state;  // (the loop may not run)
        out.push_back(For::Make(loop->var, loop->min, loop->extent, loop->for_kind, body2, loop->annotations,
                                loop->span));
        continue;
      }
      const bool ws = HasWs(st), shared = TouchesShared(st);
      if (shared && (ws ? state->common : state->ws)) {
        if (emit) {
          out.push_back(cuda::CallStmt("named_barrier_sync", {MakeInt(id_), MakeInt(2 * kWarpgroup)}, st->span));
          published = true;
        }
        *state = {};
      }
      if (shared) (ws ? state->ws : state->common) = true;
      out.push_back(st);
    }
    return Seq::Make(out, body->span);
  }

 private:
  static bool HasWs(const Stmt& s) {
    struct Finder : IRVisitor {
      bool found = false;
      void Visit_(const AttrStmt* op) override {
        found |= op->key == kWsAttr;
        IRVisitor::Visit_(op);
      }
    } f;
    f.Visit(s);
    return f.found;
  }
  /// Whether a statement list holds statements outside T.ws blocks (other than lets and
  /// allocations).
  static bool HasCommon(const Stmt& body) {
    for (const Stmt& st : FlattenSeq(body)) {
      if (!HasWs(st) && !As<Allocate>(st) && !As<LetStmt>(st)) return true;
    }
    return false;
  }
  bool TouchesShared(const Stmt& st) const {
    if (As<Allocate>(st)) return false;
    for (const BufferNode* b : cuda::BuffersOf(st)) {
      if (b->scope == Scope::kShared && !barriers_.count(b)) return true;
    }
    return false;
  }

  int64_t id_;
  std::unordered_set<const BufferNode*> barriers_;
};

Stmt PublishCommonWrites(const Stmt& body, bool* published) {
  CommonWritesPublisher publisher(CommonWritesBarrierId(body), body);
  CommonWritesPublisher::Pending state;
  Stmt out = publisher.Scan(body, &state, true);
  *published = publisher.published;
  return out;
}

/// A kernel with barriers but no T.ws: its barriers initialized where they are allocated
/// (those allocated one after another, with nothing else between, together: one thread's
/// inits, one fence and one block barrier, as upstream does, instead of a block barrier
/// each), its pipelined loops serial.
class InPlace : public IRMutator {
 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key != kBarrierInitAttr) return self;
    return Seq::Make(BarrierInit({op}, op->span), op->span);
  }
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < op->stmts.size();) {
      // a run of allocations and barrier inits: the allocations, then every init at once
      size_t end = i;
      std::vector<const AttrStmt*> inits;
      std::vector<Stmt> allocs;
      while (end < op->stmts.size()) {
        const Stmt& s = op->stmts[end];
        const auto* attr = As<AttrStmt>(s);
        if (attr && attr->key == kBarrierInitAttr) {
          inits.push_back(attr);
        } else if (As<Allocate>(s)) {
          allocs.push_back(s);
        } else {
          break;
        }
        ++end;
      }
      if (inits.size() > 1) {
        out.insert(out.end(), allocs.begin(), allocs.end());
        for (const Stmt& s : BarrierInit(inits, inits.front()->span)) out.push_back(s);
        changed = true;
        i = end;
        continue;
      }
      Stmt m = Mutate(op->stmts[i]);
      changed |= m != op->stmts[i];
      out.push_back(m);
      ++i;
    }
    return changed ? Seq::Make(out, op->span) : self;
  }
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kPipelined) return IRMutator::Mutate_(op, self);
    return For::Make(op->var, op->min, op->extent, ForKind::kSerial, Mutate(op->body), {}, op->span);
  }
};

class KernelRewriter : public IRMutator {
 public:
  KernelRewriter(PassContext& ctx, bool hopper) : ctx_(ctx), hopper_(hopper) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    int64_t threads = 1;
    for (int64_t t : op->threads) threads *= t;
    if (!ProgramsBarriers(op->body)) {
      Stmt body = cuda::ApplyRegisterBudget(op->body, threads,
                                      "the kernel does not program its own barriers (the compiler's warp "
                                      "specialization sets the register budgets)", ctx_);
      return body == op->body ? self : KernelLaunch::Make(op->grid, op->block_vars, op->threads, body, op->span);
    }
    // Such kernels stage their own tiles and GEMM on a stage `A_s[k % 2, :, :]`, which TMA
    // fills: wgmma reads those stages in the panels TMA writes (mma.sync's ldmatrix layout is
    // not one TMA can write). Elsewhere that path stays off until a GPU run has checked it
    // (WgmmaOptions::stages); a setting given by the user wins. (Per lowering: a function's
    // later kernels see it too.)
    ctx_.config.emplace("tl.enable_wgmma_stages", "1");
    WsSurvey survey;
    survey.Visit(op->body);
    if (!hopper_ && !survey.tma.empty()) {
      TL_USER_ERROR(survey.tma.begin()->second) << "T.tma_copy needs TMA (sm_90a); this kernel is compiled for "
                                                << "another architecture";
    }
    std::string where = "kernel at line " + std::to_string(op->span.line);
    bool has_ws = false;
    struct HasWs : IRVisitor {
      bool* found;
      void Visit_(const AttrStmt* a) override { *found |= a->key == kWsAttr; }
    } hw;
    hw.found = &has_ws;
    hw.Visit(op->body);
    if (!has_ws) {
      ctx_.remarks.push_back(where + " programs its own mbarriers: automatic pipelining and warp specialization "
                             "are off, its loops run as written");
      // Its own register budgets per warpgroup (T.set_max_nreg) apply as written.
      Stmt body = cuda::ApplyRegisterBudget(op->body, threads, hopper_ ? "" : "setmaxnreg needs sm_90a", ctx_);
      return KernelLaunch::Make(op->grid, op->block_vars, op->threads, InPlace().Mutate(body), op->span);
    }
    if (survey.multi_group.Defined()) {
      TL_USER_ERROR(survey.multi_group) << "T.ws over several warpgroups is not supported by this compiler yet";
    }
    if (survey.outside_tile_op.Defined()) {
      TL_USER_ERROR(survey.outside_tile_op) << "in a kernel with T.ws blocks, tile operations go inside one: "
                                               "this one would run on every warpgroup";
    }
    if (op->threads.size() != 1 || threads != 2 * kWarpgroup) {
      TL_USER_ERROR(op->span) << "T.ws blocks are supported on blocks of exactly two warpgroups (threads=256) by "
                                 "this compiler; this block has "
                              << threads << " threads";
    }
    if (survey.tile_work.size() > 1) {
      TL_USER_ERROR(survey.tile_work.rbegin()->second)
          << "tile work (GEMMs, fragments, copies other than T.tma_copy) in the T.ws blocks of both warpgroups "
             "is not supported by this compiler: one warpgroup does the tile work, the other only T.tma_copy and "
             "barrier operations";
    }
    int64_t consumer = 0;
    if (!survey.tile_work.empty()) {
      consumer = survey.tile_work.begin()->first;
    } else if (survey.tma.size() == 1) {
      consumer = 1 - survey.tma.begin()->first;
    }
    int64_t producer = 1 - consumer;
    Stmt ws_body = cuda::ApplyRegisterBudget(op->body, threads,
                                       "a kernel with T.ws blocks runs them on the compiler's warpgroup split",
                                       ctx_);
    const Span& span = op->body->span;
    bool published = false;
    ws_body = PublishCommonWrites(ws_body, &published);
    if (published) {
      ctx_.remarks.push_back(where + ": shared memory accessed outside the T.ws blocks and in them is "
                             "published to both warpgroups by a barrier over all 256 threads between the two");
    }
    Hoister hoist;
    hoist.Visit(ws_body);
    // The producer's threads are launched at 128..255: source thread producer * 128 + i is
    // thread 128 + i there.
    Projector project_producer(producer, true, (producer - 1) * kWarpgroup);
    Stmt p = project_producer.Mutate(ws_body);
    if (!project_producer.dropped_parallel_lines.empty()) {
      std::vector<int>& dropped = project_producer.dropped_parallel_lines;
      std::sort(dropped.begin(), dropped.end());
      std::string lines;
      for (int l : dropped) lines += (lines.empty() ? "" : ", ") + std::to_string(l);
      ctx_.remarks.push_back(where + ": T.Parallel outside the T.ws blocks (line(s) " + lines +
                             ") runs on the consumer warpgroup's threads, which do all of its iterations");
    }
    Stmt c = Projector(consumer, false, consumer * kWarpgroup).Mutate(ws_body);
    std::vector<Stmt> body = hoist.allocs;
    for (const Stmt& s : BarrierInit(hoist.inits, span)) body.push_back(s);
    // No register reallocation (a T.set_max_nreg here was dropped, with a remark).
    body.push_back(AttrStmt::Make(cuda::kWarpSpecializedAttr, {MakeInt(kWarpgroup), MakeInt(0), MakeInt(0)}, span));
    body.push_back(
        IfThenElse::Make(Call::Make(DType::Bool(), "ws_is_producer", {MakeInt(kWarpgroup)}), p, c, span));
    ctx_.remarks.push_back(where + " programs its barriers (T.ws): automatic pipelining and warp specialization "
                           "are off, its loops run as written; warpgroup " + std::to_string(consumer) +
                           "'s T.ws blocks run on the kernel's 128 threads, warpgroup " + std::to_string(producer) +
                           "'s on the producer warpgroup above them");
    return KernelLaunch::Make(op->grid, op->block_vars, {kWarpgroup}, Seq::Make(body, span), op->span);
  }

 private:
  PassContext& ctx_;
  bool hopper_;
};

bool IsHopper(const PassContext& ctx) { return ctx.Cuda().HasWgmma(); }

// ---- cuda-lower-explicit-tma

/// Each `tl.tma_copy(bar)` marker and its copy become, on one thread, the barrier's
/// expected bytes and the TMA box loads into the tile (whose layout is known now).
class TmaLowerer : public IRMutator {
 public:
  TmaLowerer(const PrimFunc& f, PassContext& ctx) : f_(f), ctx_(ctx) {
    wgmma_operands_ = cuda::WgmmaOperands(f->body);
    gemm_operands_ = cuda::GemmOperands(f->body);
  }

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kThreadBinding) {
      tx_ = op->var;
      split_ = false;
      threads_ = 0;
      AsConstInt(op->extent, &threads_);
    }
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    if (!cuda::IsWarpSpecializedSplit(self)) {
      bool on_thread = tx_ && UsesVar(op->cond, [&](const Var* v) { return v == tx_.get(); });
      thread_branch_ += on_thread;
      Stmt out = IRMutator::Mutate_(op, self);
      thread_branch_ -= on_thread;
      return out;
    }
    split_ = true;
    bool prev = in_producer_;
    in_producer_ = true;
    Stmt then_case = Mutate(op->then_case);
    in_producer_ = false;
    Stmt else_case = Mutate(op->else_case);
    in_producer_ = prev;
    return IfThenElse::Make(op->cond, then_case, else_case, op->span);
  }
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    for (size_t i = 0; i < op->stmts.size(); ++i) {
      const auto* marker = As<AttrStmt>(op->stmts[i]);
      if (marker && marker->key == kTmaCopyAttr) {
        const CopyOp* copy = i + 1 < op->stmts.size() ? As<CopyOp>(op->stmts[i + 1]) : nullptr;
        TL_ICHECK(copy) << "a tl.tma_copy marker precedes its copy";
        int64_t scope = 0;
        if (marker->values.size() > 1) AsConstInt(marker->values[1], &scope);
        out.push_back(Lower(copy, marker->values[0], scope));
        ++i;
        changed = true;
        continue;
      }
      Stmt s = Mutate(op->stmts[i]);
      changed |= s != op->stmts[i];
      out.push_back(s);
    }
    return changed ? Seq::Make(out, op->span) : self;
  }

 private:
  /// `scope`: leader_scope_threads (0: one thread of the block, or of the producer).
  Stmt Lower(const CopyOp* copy, const Expr& bar, int64_t scope) {
    const Buffer& dst = copy->dst.buffer;
    if (scope > 0 && (threads_ % scope != 0 || scope > threads_)) {
      TL_USER_ERROR(copy->span) << "T.tma_copy: leader_scope_threads=" << scope << " does not divide the block's "
                                << threads_ << " threads";
    }
    bool panelled = wgmma_operands_.count(dst.get()) > 0;
    if (!panelled && cuda::Swizzled(dst, gemm_operands_, wgmma_operands_)) {
      TL_USER_ERROR(copy->span) << "T.tma_copy into " << dst->name << ": the tile is an ldmatrix-swizzled GEMM "
                                << "operand (its GEMM does not use wgmma), which TMA does not write";
    }
    // (a run of whole rows of the tile will do: the program orders its own barriers)
    std::string why = cuda::TmaLoadUnfit(As<CopyOp>(OneStage(copy)), panelled, f_->params,
                                         cuda::DynamicAlignment(ctx_), /*row_range=*/true);
    if (!why.empty()) TL_USER_ERROR(copy->span) << "T.tma_copy into " << dst->name << " cannot use TMA: " << why;
    int64_t bytes = 0;
    Stmt loads = cuda::LowerTmaLoad(copy, panelled, bar, &bytes);
    Stmt issue = Seq::Make({cuda::CallStmt("mbarrier_expect_tx", {bar, MakeInt(bytes)}, copy->span), loads},
                           copy->span);
    Expr leader = scope > 0      ? EQ(FloorMod(Expr(tx_), MakeInt(scope)), MakeInt(0))
                  : in_producer_ ? Call::Make(DType::Bool(), "ws_is_producer_leader", {MakeInt(threads_)})
                                 : EQ(Expr(tx_), MakeInt(0));
    // Without T.ws every thread of the block may still read the tile (an earlier GEMM) when
    // the leader issues the load: all of them get past their reads first, and the fence
    // orders generic-proxy reads before the TMA's async-proxy writes. (Under a condition on
    // the thread not all threads arrive here: the program orders those itself.)
    bool sync = !split_ && thread_branch_ == 0;
    ctx_.remarks.push_back("T.tma_copy at line " + std::to_string(copy->span.line) + ": " + std::to_string(bytes) +
                           " bytes by TMA" + (panelled ? " in wgmma panels" : "") +
                           (scope > 0 ? ", issued by the first thread of each " + std::to_string(scope) +
                                            " (its group's copy), expected on its barrier"
                                      : std::string(", issued by one thread, expected on its barrier")) +
                           (sync ? "; the block synchronizes first (its threads may still read the tile)" : ""));
    Stmt lowered = IfThenElse::Make(leader, issue, nullptr, copy->span);
    if (!sync) return lowered;
    return Seq::Make({cuda::CallStmt("fence_proxy_async", {}, copy->span),
                      cuda::CallStmt("syncthreads", {}, copy->span), lowered},
                     copy->span);
  }

  /// A copy into one stage of a tile the program stages itself (`A_s[k % 2, :, :]`: leading
  /// indices of extent 1) as a copy into a whole tile of one stage's shape, for the
  /// fitness check (LowerTmaLoad itself addresses the stage).
  static Stmt OneStage(const CopyOp* copy) {
    const Region& d = copy->dst;
    size_t lead = 0;
    while (lead + 2 < d.ranges.size() && IsOne(d.ranges[lead].extent)) ++lead;
    if (lead == 0) return CopyOp::Make(copy->src, copy->dst, copy->span, copy->disable_tma);
    std::vector<Expr> shape(d.buffer->shape.begin() + lead, d.buffer->shape.end());
    Region stage{BufferNode::Make(d.buffer->name, d.buffer->dtype, shape, d.buffer->scope), {}};
    stage.ranges.assign(d.ranges.begin() + lead, d.ranges.end());
    return CopyOp::Make(copy->src, stage, copy->span, copy->disable_tma);
  }

  const PrimFunc& f_;
  PassContext& ctx_;
  std::unordered_set<const BufferNode*> wgmma_operands_, gemm_operands_;
  VarRef tx_;
  int64_t threads_ = 0;
  bool in_producer_ = false;
  bool split_ = false;      ///< the kernel has T.ws blocks (split into producer and consumers)
  int thread_branch_ = 0;   ///< depth of branches on the thread index around the statement
};

}  // namespace

ir::PrimFunc CudaExplicitWarpSpecialize(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = KernelRewriter(ctx, IsHopper(ctx)).Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

ir::PrimFunc CudaLowerExplicitTma(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = TmaLowerer(f, ctx).Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-explicit-warp-specialize", CudaExplicitWarpSpecialize);
TL_REGISTER_PASS("cuda-lower-explicit-tma", CudaLowerExplicitTma);

}  // namespace tl::transform
