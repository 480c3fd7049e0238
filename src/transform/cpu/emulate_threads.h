// SPDX-License-Identifier: Apache-2.0
/// \file The CPU target's lockstep emulation of thread-level code (the
/// "cpu-emulate-threads" pass, emulate_threads.cc; its warp collectives and
/// votes in emulate_collectives.cc).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../region_util.h"
#include "../explicit_barriers.h"
#include "../fragment_uses.h"
#include "../per_thread_fragments.h"
#include "../thread_range.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/op/make.h"
#include "tl/support/error.h"
#include "tl/target/warp.h"

namespace tl::transform::cpu {

inline bool IsCollective(const std::string& op) { return ir::HasEffect(op, ir::kWarpCollective); }

using namespace ir;  // NOLINT: the emulator's implementation files share this
                     // header only

class ThreadEmulator {
 public:
  explicit ThreadEmulator(std::vector<int64_t> dims) : dims_(std::move(dims)) {
    for (int64_t d : dims_) threads_ *= d;
  }

  Stmt Run(const Stmt& body) {
    body_ = body;
    if (dims_.size() == 1) {
      fragment_uses_ = FragmentUseRanges(body, [&](const Expr& e) { return IsThreadIndex(e); }, threads_);
    }
    std::vector<Stmt> out;
    Emit(body, nullptr, &out);
    return Seq::Make(out, body->span);
  }

 private:
  // ---- what depends on the thread

  bool Varying(const Expr& e) const {
    if (!e) return false;
    bool found = false;
    ForEachExpr(Evaluate::Make(e), [&](const Expr& x) {
      if (const auto* c = As<Call>(x)) found |= HasEffect(c, kThreadIndex) || IsCollective(c->op);
      if (const auto* l = As<BufferLoad>(x))
        found |= per_thread_.count(l->buffer.get()) || arrays_.count(l->buffer.get());
      if (const auto* v = As<Var>(x)) found |= v == t_.get() || varying_vars_.count(v);
    });
    return found;
  }

  /// Whether a tile op reads or writes a register fragment (T.alloc_fragment).
  static bool TouchesFragment(const Stmt& s) {
    struct Finder : IRVisitor {
      bool found = false;
      void VisitRegion(const Region& r) override {
        found |= r.buffer && r.buffer->scope == Scope::kFragment;
        IRVisitor::VisitRegion(r);
      }
    } f;
    f.Visit(s);
    return f.found;
  }

  /// The thread index call itself (any axis): T.get_thread_binding(k).
  static bool IsThreadIndexExpr(const Expr& e) { return HasEffect(As<Call>(e), kThreadIndex); }

  /// The (1-D) thread index itself: T.get_thread_binding(0) or a let bound to
  /// it.
  bool IsThreadIndex(const Expr& e) const {
    if (const auto* v = As<Var>(e)) return index_aliases_.count(v) > 0;
    const auto* c = As<Call>(e);
    int64_t dim = -1;
    return c && HasEffect(c, kThreadIndex) && !c->args.empty() && AsConstInt(c->args[0], &dim) && dim == 0;
  }

  /// Whether `e` reads the thread index itself (a T.get_thread_binding call or a let bound to
  /// it): then it differs between threads for certain, not only possibly.
  bool ReadsThreadIndex(const Expr& e) const {
    bool found = false;
    ForEachExpr(Evaluate::Make(e), [&](const Expr& x) {
      found |= HasEffect(As<Call>(x), kThreadIndex);
      if (const auto* v = As<Var>(x)) found |= v == t_.get() || index_aliases_.count(v) > 0;
    });
    return found;
  }

  bool VaryingStmt(const Stmt& s) const {
    bool found = false;
    ForEachExpr(s, [&](const Expr& x) { found |= Varying(x); });
    struct Stores : IRVisitor {
      const ThreadEmulator* self;
      bool found = false;
      void Visit_(const BufferStore* op) override {
        found |= self->per_thread_.count(op->buffer.get()) > 0;
        IRVisitor::Visit_(op);
      }
      void VisitRegion(const Region& r) override {
        found |= self->per_thread_.count(r.buffer.get()) > 0;
        IRVisitor::VisitRegion(r);
      }
    } stores;
    stores.self = this;
    stores.Visit(s);
    return found || stores.found;
  }

  // ---- rewriting a statement as seen by thread t_

  class AtThread : public IRMutator {
   public:
    explicit AtThread(const ThreadEmulator& em) : em_(em) {}

   protected:
    Expr Mutate_(const Call* op, const Expr& self) override {
      if (!HasEffect(op, kThreadIndex)) return IRMutator::Mutate_(op, self);
      int64_t dim = 0;
      AsConstInt(op->args[0], &dim);
      TL_ICHECK(dim < static_cast<int64_t>(em_.dims_.size())) << "thread dimension " << dim;
      Expr index = em_.t_;
      int64_t below = 1;
      for (int64_t d = 0; d < dim; ++d) below *= em_.dims_[d];
      if (below > 1) index = FloorDiv(index, MakeInt(below));
      if (dim + 1 < static_cast<int64_t>(em_.dims_.size())) index = FloorMod(index, MakeInt(em_.dims_[dim]));
      return index;
    }
    Expr Mutate_(const Var* op, const Expr& self) override {
      auto it = em_.varying_vars_.find(op);
      return it == em_.varying_vars_.end() ? self : BufferLoad::Make(it->second, {em_.t_});
    }
    Expr Mutate_(const BufferLoad* op, const Expr& self) override {
      auto it = em_.per_thread_.find(op->buffer.get());
      if (it == em_.per_thread_.end()) return IRMutator::Mutate_(op, self);
      std::vector<Expr> idx = {em_.t_};
      for (const Expr& i : op->indices) idx.push_back(Mutate(i));
      return BufferLoad::Make(it->second, idx);
    }
    Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
      auto it = em_.per_thread_.find(op->buffer.get());
      if (it == em_.per_thread_.end()) return IRMutator::Mutate_(op, self);
      std::vector<Expr> idx = {em_.t_};
      for (const Expr& i : op->indices) idx.push_back(Mutate(i));
      return BufferStore::Make(it->second, idx, Mutate(op->value), op->span);
    }

   private:
    const ThreadEmulator& em_;
  };

  Expr At(const Expr& e) const { return AtThread(*this).Mutate(e); }
  Stmt At(const Stmt& s) const { return AtThread(*this).Mutate(s); }

  /// for t in [0, threads): if (mask) body
  Stmt ThreadLoop(const Stmt& body, const Expr& mask, const Span& span) const {
    Stmt b = mask ? IfThenElse::Make(mask, body, nullptr, span) : body;
    return For::Make(t_, MakeInt(0), MakeInt(threads_), ForKind::kSerial, b, {}, span);
  }

  /// A fresh block-level scalar of `t` holding `init`, declared in `out`.
  static Buffer NewScalar(const std::string& name, DType t, const Expr& init, const Span& span,
                          std::vector<Stmt>* out) {
    Buffer b = BufferNode::Make(name, t, {MakeInt(1)}, Scope::kVar);
    out->push_back(Allocate::Make(b, init, span));
    return b;
  }
  /// The call failing the kernel at `span`'s line when the block's threads disagree there
  /// (tl_cpu.h's divergent-threads status).
  static Stmt DivergentThreads(const Span& span) {
    return Evaluate::Make(Call::Make(DType::Void(), "cpu_divergent_threads", {MakeInt(span.line)}));
  }

  /// A fresh per-thread array of `t`, declared in `out`.
  Buffer NewArray(const std::string& name, DType t, const Span& span, std::vector<Stmt>* out) {
    Buffer b = BufferNode::Make(name, t, {MakeInt(threads_)}, Scope::kLocal);
    arrays_.insert(b.get());
    out->push_back(Allocate::Make(b, nullptr, span));
    return b;
  }

  // ---- warp collectives

  /// Replaces each warp collective in `e` (innermost first) by a load of its
  /// per-thread result, computed in `out` for every thread the mask lets
  /// through.
  Expr ExtractCollectives(const Expr& e, const Expr& mask, const Span& span, std::vector<Stmt>* out);

  Expr Collective(const Call* call, const Expr& mask, const Span& span, std::vector<Stmt>* out);

  /// Warp votes (T.any_sync, T.ballot_sync, T.activemask, T.match_any_sync,
  /// ...) and block votes (T.syncthreads_count/and/or): each thread's operand
  /// and whether it reached the vote are recorded, then every participating
  /// thread folds its group's lanes (its warp's 32, or the whole block) that
  /// are active and, for warp votes, in the lane mask.
  Expr Vote(const Call* call, const Expr& mask, const Span& span, std::vector<Stmt>* out);

  /// A copy, fill or element atomic as thread t_ does it: per-thread buffers
  /// get their thread's slice (a leading range [t, t + 1)), and region corners
  /// are evaluated for thread t_.
  Stmt PerThreadTileOp(const Stmt& s) const {
    auto region = [&](const Region& r) {
      if (!r.buffer) return r;
      Region out{r.buffer, {}};
      auto it = per_thread_.find(r.buffer.get());
      if (it != per_thread_.end()) {
        out.buffer = it->second;
        out.ranges.push_back({t_, MakeInt(1)});
      }
      for (const Range& rg : r.ranges) out.ranges.push_back({At(rg.min), At(rg.extent)});
      return out;
    };
    if (const auto* copy = As<CopyOp>(s)) return CopyOp::Make(region(copy->src), region(copy->dst), s->span, copy->disable_tma);
    if (const auto* atomic = As<AtomicOp>(s)) {
      return AtomicOp::Make(atomic->atomic_kind, region(atomic->dst), Region{}, At(atomic->value), s->span);
    }
    const auto* fill = As<FillOp>(s);
    return FillOp::Make(region(fill->dst), At(fill->value), s->span);
  }

  // ---- statements

  [[noreturn]] static void Unsupported(const Span& span, const std::string& what) {
    TL_USER_ERROR(span) << what
                        << " in thread-level code is not emulated on the CPU "
                           "target (it runs a block's "
                           "threads in lockstep); run this kernel on CUDA";
  }

  void Emit(const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  void EmitSeq(const Seq* seq, const Expr& mask, std::vector<Stmt>* out);
  void EmitLet(const LetStmt* let, const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  void EmitAllocate(const Allocate* alloc, const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  void EmitLeaf(const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  /// mma_fragment: one warp's MMA, lane by lane (emulate_warp_mma.cc).
  void EmitWarpMma(const Call* call, const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  // mbarriers (emulate_mbarriers.cc)
  static bool IsWarpgroupScope(const Stmt& then_case);
  /// Whether the fragment tile op or GEMM `s` may run here under a thread-dependent
  /// condition: in a T.ws block, or under a range of whole warps that every fragment it
  /// touches is used under only (CUDA lays those fragments over its threads; fragment_uses.h).
  bool FragmentsInRange(const Stmt& s) const {
    if (ws_scope_) return true;
    constexpr int64_t warp = target::kWarpSize;
    if (!range_ || range_->Empty() || range_->lo % warp || (range_->hi - range_->lo) % warp) return false;
    bool own = true;
    struct Regions : IRVisitor {
      std::vector<const BufferNode*> fragments;
      void VisitRegion(const Region& r) override {
        if (r.buffer && r.buffer->scope == Scope::kFragment) fragments.push_back(r.buffer.get());
        IRVisitor::VisitRegion(r);
      }
    } regions;
    regions.Visit(s);
    for (const BufferNode* b : regions.fragments) {
      auto it = fragment_uses_.find(b);
      own = own && it != fragment_uses_.end() && it->second.OnlyIn(*range_);
    }
    return own;
  }
  void EmitBarrierInit(const AttrStmt* attr, std::vector<Stmt>* out) const;
  void EmitMbarrierOp(const Call* call, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) const;
  void EmitBranch(const IfThenElse* br, const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  void EmitLoop(const For* loop, const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  void EmitUniformJump(const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  void EmitAgreedBoundsLoop(const For* loop, const Stmt& s, const Expr& mask, std::vector<Stmt>* out);
  /// A serial loop's body, emitted with the loop's thread mask recorded (for break/continue).
  static bool ThreadOwnWork(const Stmt& body);
  Stmt EmitSerialBody(const For* loop, const Expr& mask);
  void EmitTileOp(const Stmt& s, const Expr& mask, std::vector<Stmt>* out);

  std::vector<int64_t> dims_;
  int64_t threads_ = 1;
  VarRef t_ = Var::Make("t");
  std::unordered_map<const BufferNode*, Buffer> per_thread_;  ///< locals and vars -> [threads, ...]
  std::unordered_map<const Var*, Buffer> varying_vars_;       ///< thread-dependent lets -> [threads]
  std::unordered_set<const Var*> index_aliases_;              ///< lets bound to exactly the thread index
  std::optional<ThreadRange> range_;              ///< the threads taking the branch being emitted, when a range
  std::unordered_map<const BufferNode*, FragmentUses> fragment_uses_;  ///< the threads each fragment is used on
  std::unordered_set<const BufferNode*> arrays_;  ///< arrays indexed by t
  bool ws_scope_ = false;  ///< emitting a `with T.ws(i):` body: its tile ops are the warpgroup's, run once
  int loop_depth_ = 0;     ///< serial loops around the statement being emitted
  std::vector<Expr> loop_masks_;  ///< the thread masks of the loops around it (null: every thread), innermost last
  Stmt body_;              ///< the kernel body being emulated
  /// Warpgroup roles (emulate_roles.cc): the statements of each branch of the top-level
  /// `if tx < 128: ... elif ...: ... else: ...` being emitted, when the branches wait on
  /// each other's mbarriers and so must run at the same time.
  std::vector<std::vector<Stmt>> roles_;
  bool in_role_chain_ = false;
  bool in_role_ = false;  ///< emitting the statements of a role (they may meet other roles at named barriers)
  void EmitRoleNamedBarrier(const Call* call, int64_t count, bool wait, const Stmt& s, const Expr& mask,
                            std::vector<Stmt>* out);
  bool RoleSplit(const IfThenElse* br, const Expr& mask, const std::optional<ThreadRange>& range,
                 const std::optional<ThreadRange>& other) const;
  /// How many statements from stmts[i] are sibling branches on disjoint thread ranges, one
  /// of which waits on an mbarrier (0 when fewer than two).
  size_t RoleRun(const std::vector<Stmt>& stmts, size_t i) const;
  void EmitRoles(std::vector<Stmt>* out, const Span& span);
};

}  // namespace tl::transform::cpu
