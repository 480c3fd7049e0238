// SPDX-License-Identifier: Apache-2.0
/// \file "stage-ws-pipelines": a `T.Pipelined(n, num_stages=s)` loop (s >= 2) in a kernel
/// with T.ws blocks, whose producer loads single tiles and hands them over through single
/// barriers, gets s copies of each: upstream TileLang's meaning of num_stages there (its
/// examples/warp_specialize softpipe and copy_1_gemm_0 kernels), so that the producer
/// runs up to s tiles ahead of the consumers instead of waiting for each GEMM.
///
///   for k in T.Pipelined(n, num_stages=s):            for k in T.Pipelined(n, num_stages=s):
///     with T.ws(1):                                      with T.ws(1):
///       T.barrier_wait(done, (k + 1) % 2)                  T.barrier_wait(done'[v], (k/s + 1) % 2)
///       T.tma_copy(A[..k..], A_s, barrier=ready)    =>     T.tma_copy(A[..k..], A_s'[v], barrier=ready'[v])
///       T.barrier_arrive(ready)                            T.barrier_arrive(ready'[v])
///     with T.ws(0):                                      with T.ws(0): ... on A_s'[v], ready'[v], done'[v]
///
/// with v = (k - min) % s. Tiles the loop fills from global memory get a leading stage
/// dimension; each barrier b of a tile of m becomes s barriers, b + v m; and a wait's parity
/// is the source's with k replaced by min + (k - min) / s: barrier v completes one phase
/// every s iterations, so its phase count at k is what the source's single barrier's was at
/// that quotient. The source's parity expression is read as a function of the phase count,
/// which is what a single barrier waited on once per iteration makes it.
///
/// Only the shape this describes is rewritten; anything else runs as written, with a remark
/// saying why: barriers named with a constant index and used only in this loop, outside
/// any inner loop, each wait's parity depending on k; staged tiles used only in this loop
/// and not through addresses. Both targets run the rewritten loop (the CPU's roles, CUDA's
/// warpgroups), so they agree.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "explicit_barriers.h"
#include "stage_buffers.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

/// The load `b[i]` of `address_of(b[i])` when b is one of the kernel's barrier tiles, or null.
const BufferLoad* BarrierRef(const Expr& e, const std::set<const BufferNode*>& barriers) {
  const auto* call = As<Call>(e);
  if (!IsIntrinsic(call, TL_INTRINSIC_NAME("address_of")) || call->args.size() != 1) return nullptr;
  const auto* load = As<BufferLoad>(call->args[0]);
  return load && barriers.count(load->buffer.get()) ? load : nullptr;
}

/// What one pipelined loop's body holds: the tiles it fills from global memory, the barriers
/// it names, the buffers whose addresses it takes, and the first reason not to stage it.
struct LoopSurvey : IRVisitor {
  LoopSurvey(const std::set<const BufferNode*>& barriers, const Var* loop_var)
      : barriers_(barriers), loop_var_(loop_var) {}

  std::string why_not;                       ///< the first reason the loop stays as written
  std::vector<const BufferNode*> used_barriers;  ///< in the order of first use
  std::vector<Buffer> staged;                ///< shared tiles filled from global memory
  std::set<const BufferNode*> addressed;     ///< buffers whose addresses a call takes

  void Note(const std::string& why) {
    if (why_not.empty()) why_not = why;
  }

  void Visit_(const For* op) override {
    ++depth_;
    IRVisitor::Visit_(op);
    --depth_;
  }
  void Visit_(const CopyOp* op) override {
    if (op->src.buffer->scope == Scope::kGlobal && op->dst.buffer->scope == Scope::kShared) {
      bool seen = false;
      for (const Buffer& b : staged) seen |= b.get() == op->dst.buffer.get();
      if (!seen) staged.push_back(op->dst.buffer);
    }
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("mbarrier_wait_parity")) && op->args.size() == 2 &&
        BarrierRef(op->args[0], barriers_) && !UsesVar(op->args[1], loop_var_)) {
      Note("a barrier wait's parity does not depend on the loop variable");
    }
    if (IsIntrinsic(op, TL_INTRINSIC_NAME("address_of")) && op->args.size() == 1) {
      if (const auto* load = As<BufferLoad>(op->args[0])) {
        if (barriers_.count(load->buffer.get())) {
          int64_t i = 0;
          if (!AsConstInt(load->indices[0], &i)) Note("a barrier is named by a computed index (staged by hand)");
          if (depth_ > 0) Note("a barrier is used in an inner loop");
          if (std::find(used_barriers.begin(), used_barriers.end(), load->buffer.get()) == used_barriers.end()) {
            used_barriers.push_back(load->buffer.get());
          }
        } else {
          addressed.insert(load->buffer.get());
        }
      }
    }
    IRVisitor::Visit_(op);
  }


 private:
  const std::set<const BufferNode*>& barriers_;
  const Var* loop_var_;
  int depth_ = 0;
};

/// Counts references to each buffer (loads, stores, regions; not allocations or barrier
/// initializations).
struct BufferUses : IRVisitor {
  std::map<const BufferNode*, int> count;
  void Visit_(const AttrStmt* op) override {
    if (op->key != kBarrierInitAttr) IRVisitor::Visit_(op);
  }
  void Visit_(const BufferLoad* op) override {
    ++count[op->buffer.get()];
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    ++count[op->buffer.get()];
    IRVisitor::Visit_(op);
  }
  void VisitRegion(const Region& r) override {
    ++count[r.buffer.get()];
    IRVisitor::VisitRegion(r);
  }
};

/// One loop's rewrite, as in the file comment: the staged tiles' accesses select the stage
/// (StageSelector), each barrier names its stage's copy, and each wait's parity is taken on
/// that copy's phases.
class StageRewriter : public StageSelector {
 public:
  StageRewriter(const std::unordered_map<const BufferNode*, Buffer>& tiles,
                const std::map<const BufferNode*, std::pair<Buffer, int64_t>>& barriers, Expr stage, const Var* k,
                Expr phase)
      : StageSelector(tiles, std::move(stage)), barriers_(barriers), k_(k), phase_(std::move(phase)) {}

 protected:
  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    auto b = barriers_.find(op->buffer.get());
    if (b == barriers_.end()) return StageSelector::Mutate_(op, self);
    return BufferLoad::Make(b->second.first, {stage() * MakeInt(b->second.second) + Mutate(op->indices[0])});
  }
  Expr Mutate_(const Call* op, const Expr& self) override {
    Expr out = IRMutator::Mutate_(op, self);
    const auto* call = As<Call>(out);
    if (!IsIntrinsic(call, TL_INTRINSIC_NAME("mbarrier_wait_parity")) || call->args.size() != 2) return out;
    Expr parity = Substitute(call->args[1], [&](const Var* v) -> Expr { return v == k_ ? phase_ : nullptr; });
    return Call::Make(call->dtype, call->op, {call->args[0], parity});
  }

 private:
  const std::map<const BufferNode*, std::pair<Buffer, int64_t>>& barriers_;
  const Var* k_;
  Expr phase_;
};

/// Replaces the staged buffers' allocations and barrier initializations, and rewrites the
/// loops chosen for staging.
class KernelStager : public IRMutator {
 public:
  KernelStager(PassContext& ctx, const Stmt& kernel_body, std::set<const BufferNode*> barriers)
      : ctx_(ctx), body_(kernel_body), barriers_(std::move(barriers)) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    int64_t stages = 0;
    auto ns = op->annotations.find("num_stages");
    if (op->for_kind != ForKind::kPipelined || ns == op->annotations.end() || !AsConstInt(ns->second, &stages) ||
        stages < 2) {
      return IRMutator::Mutate_(op, self);
    }
    std::string where = "T.Pipelined at line " + std::to_string(op->span.line) + " (num_stages=" +
                        std::to_string(stages) + ") in a kernel with T.ws blocks";
    LoopSurvey survey(barriers_, op->var.get());
    survey.Visit(op->body);
    // Every use of a staged tile or barrier must be in this loop: a later reader would not
    // know which stage to read.
    BufferUses inside, all;
    inside.Visit(op->body);
    all.Visit(body_);
    for (const BufferNode* b : survey.used_barriers) {
      if (all.count[b] != inside.count[b]) survey.Note("a barrier it uses is also used outside it");
    }
    for (const Buffer& t : survey.staged) {
      if (all.count[t.get()] != inside.count[t.get()]) survey.Note("tile " + t->name + " is also used outside it");
      if (survey.addressed.count(t.get())) survey.Note("tile " + t->name + " is used through its address");
    }
    if (survey.why_not.empty() && (survey.staged.empty() || survey.used_barriers.empty())) {
      survey.Note("it loads no tile from global memory or hands none over through a barrier");
    }
    if (!survey.why_not.empty()) {
      ctx_.remarks.push_back(where + ": runs as written, one tile and one barrier phase at a time (" +
                             survey.why_not + ")");
      return IRMutator::Mutate_(op, self);
    }
    std::unordered_map<const BufferNode*, Buffer> tiles;
    std::map<const BufferNode*, std::pair<Buffer, int64_t>> bars;
    std::string names;
    for (const Buffer& t : survey.staged) {
      tiles[t.get()] = StagedBuffer(t, stages);
      names += (names.empty() ? "" : ", ") + t->name;
    }
    for (const BufferNode* b : survey.used_barriers) {
      int64_t m = 0;
      AsConstInt(b->shape[0], &m);
      bars[b] = {BufferNode::Make(b->name, b->dtype, {MakeInt(m * stages)}, b->scope), m};
      names += ", " + b->name;
    }
    Expr k = op->var, rel = k - op->min;
    StageRewriter rewrite(tiles, bars, FloorMod(rel, MakeInt(stages)), op->var.get(),
                          op->min + FloorDiv(rel, MakeInt(stages)));
    for (auto& [old, nb] : tiles) replaced_tiles_[old] = nb;
    for (auto& [old, nb] : bars) replaced_barriers_[old] = nb;
    ctx_.remarks.push_back(where + ": " + names + " in " + std::to_string(stages) +
                           " stages, each barrier's waits on the phases of its own stage, as upstream does");
    return For::Make(op->var, op->min, op->extent, op->for_kind, rewrite.Mutate(op->body), op->annotations, op->span);
  }

 public:
  /// The allocations and barrier initializations of what the loops staged.
  Stmt Reallocate(const Stmt& body) {
    struct Realloc : IRMutator {
      KernelStager* self;
      Stmt Mutate_(const Allocate* op, const Stmt& s) override {
        if (auto t = self->replaced_tiles_.find(op->buffer.get()); t != self->replaced_tiles_.end()) {
          return Allocate::Make(t->second, op->init, op->span);
        }
        if (auto b = self->replaced_barriers_.find(op->buffer.get()); b != self->replaced_barriers_.end()) {
          return Allocate::Make(b->second.first, op->init, op->span);
        }
        return s;
      }
      Stmt Mutate_(const AttrStmt* op, const Stmt& s) override {
        if (op->key != kBarrierInitAttr) return s;
        const auto* first = As<BufferLoad>(op->values[0]);
        auto b = first ? self->replaced_barriers_.find(first->buffer.get()) : self->replaced_barriers_.end();
        if (b == self->replaced_barriers_.end()) return s;
        const int64_t m = b->second.second, stages = [&] {
          int64_t total = 0;
          AsConstInt(b->second.first->shape[0], &total);
          return total / m;
        }();
        std::vector<Expr> values = {BufferLoad::Make(b->second.first, {MakeInt(0)})};
        for (int64_t v = 0; v < stages; ++v) values.insert(values.end(), op->values.begin() + 1, op->values.end());
        return AttrStmt::Make(op->key, values, op->span);
      }
    } r;
    r.self = this;
    return r.Mutate(body);
  }
  bool Staged() const { return !replaced_tiles_.empty(); }

 private:
  PassContext& ctx_;
  const Stmt& body_;
  std::set<const BufferNode*> barriers_;
  std::map<const BufferNode*, Buffer> replaced_tiles_;
  std::map<const BufferNode*, std::pair<Buffer, int64_t>> replaced_barriers_;
};

class KernelVisitor : public IRMutator {
 public:
  explicit KernelVisitor(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    bool has_ws = false;
    std::set<const BufferNode*> barriers;
    struct Find : IRVisitor {
      bool* ws;
      std::set<const BufferNode*>* barriers;
      void Visit_(const AttrStmt* a) override {
        *ws |= a->key == kWsAttr;
        if (a->key == kBarrierInitAttr && !a->values.empty()) {
          if (const auto* load = As<BufferLoad>(a->values[0])) barriers->insert(load->buffer.get());
        }
      }
    } find;
    find.ws = &has_ws;
    find.barriers = &barriers;
    find.Visit(op->body);
    if (!has_ws || barriers.empty()) return self;
    KernelStager stager(ctx_, op->body, barriers);
    Stmt body = stager.Mutate(op->body);
    if (!stager.Staged()) return self;
    body = stager.Reallocate(body);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, body, op->span);
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc StageWsPipelines(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = KernelVisitor(ctx).Mutate(f->body);
  if (body == f->body) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("stage-ws-pipelines", StageWsPipelines);

}  // namespace tl::transform
