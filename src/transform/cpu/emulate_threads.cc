// SPDX-License-Identifier: Apache-2.0
/// \file "cpu-emulate-threads": thread-level code (T.get_thread_binding, per-thread
/// T.alloc_local / T.alloc_var, T.warp_reduce_*, T.shfl_*) on the CPU target.
///
/// A CPU block is one sequence. A kernel that reads its thread index runs its statements
/// in lockstep instead: each statement that depends on the thread becomes a loop over the
/// block's threads `t`, one statement after the other, which is one of the orders SIMT
/// hardware may run a race-free program in. So:
/// - per-thread storage (locals, vars, thread-dependent lets) gets a leading dimension
///   of the thread count, indexed by `t`;
/// - a thread-dependent branch stores its condition per thread and masks the statements
///   under it;
/// - a warp collective evaluates its operand for every thread first, then combines the
///   values of each thread's warp (lanes t - t % width ...), as the shuffles would;
/// - T.sync_threads has nothing left to do;
/// - copies and fills of per-thread storage (or with thread-dependent regions) run once
///   per thread, on that thread's slice;
/// - statements that do not depend on the thread run once, atomics included (as the CUDA
///   target gives them to one thread), and so does block-level work (tile ops, T.Parallel
///   over tiles).
/// What lockstep cannot express is a CompileError at its line: loop bounds or while
/// conditions that depend on the thread, break/continue or block-level work under a
/// thread-dependent branch, reductions, GEMMs and atomics on per-thread storage.
#include <unordered_map>
#include <unordered_set>

#include "../region_util.h"
#include "../thread_range.h"

#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/op/make.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

bool IsCollective(const std::string& op) { return HasEffect(op, kWarpCollective); }

bool IsThreadLevel(const Stmt& body) {
  bool found = false;
  ForEachExpr(body, [&](const Expr& e) {
    if (const auto* c = As<Call>(e)) found |= HasEffect(c, kThreadIndex) || IsCollective(c->op);
  });
  return found;
}

class ThreadEmulator {
 public:
  explicit ThreadEmulator(std::vector<int64_t> dims) : dims_(std::move(dims)) {
    for (int64_t d : dims_) threads_ *= d;
  }

  Stmt Run(const Stmt& body) {
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
      if (const auto* l = As<BufferLoad>(x)) found |= per_thread_.count(l->buffer.get()) || arrays_.count(l->buffer.get());
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

  /// The (1-D) thread index itself: T.get_thread_binding(0) or a let bound to it.
  bool IsThreadIndex(const Expr& e) const {
    if (const auto* v = As<Var>(e)) return index_aliases_.count(v) > 0;
    const auto* c = As<Call>(e);
    int64_t dim = -1;
    return c && HasEffect(c, kThreadIndex) && !c->args.empty() && AsConstInt(c->args[0], &dim) && dim == 0;
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

  /// A fresh per-thread array of `t`, declared in `out`.
  Buffer NewArray(const std::string& name, DType t, const Span& span, std::vector<Stmt>* out) {
    Buffer b = BufferNode::Make(name, t, {MakeInt(threads_)}, Scope::kLocal);
    arrays_.insert(b.get());
    out->push_back(Allocate::Make(b, nullptr, span));
    return b;
  }

  // ---- warp collectives

  /// Replaces each warp collective in `e` (innermost first) by a load of its per-thread
  /// result, computed in `out` for every thread the mask lets through.
  Expr ExtractCollectives(const Expr& e, const Expr& mask, const Span& span, std::vector<Stmt>* out) {
    if (!e) return e;
    struct Extractor : IRMutator {
      ThreadEmulator* em;
      Expr mask;
      Span span;
      std::vector<Stmt>* out;
      Expr Mutate_(const Call* op, const Expr& self) override {
        Expr inner = IRMutator::Mutate_(op, self);
        const auto* call = As<Call>(inner);
        if (!IsCollective(call->op)) return inner;
        return em->Collective(call, mask, span, out);
      }
    } ex;
    ex.em = this;
    ex.mask = mask;
    ex.span = span;
    ex.out = out;
    return ex.Mutate(e);
  }

  Expr Collective(const Call* call, const Expr& mask, const Span& span, std::vector<Stmt>* out) {
    if (HasEffect(call, kVote)) return Vote(call, mask, span, out);
    DType t = call->dtype;
    Buffer operand = NewArray("lanes", t, span, out);
    out->push_back(ThreadLoop(BufferStore::Make(operand, {t_}, At(call->args[0]), span), mask, span));
    Buffer result = NewArray(call->op.substr(0, 4) == "shfl" ? "shuffled" : "reduced", t, span, out);
    Expr tt = t_;
    Stmt compute;
    if (call->op.rfind("warp_reduce_", 0) == 0) {
      int64_t width = 32;
      AsConstInt(call->args[1], &width);
      // Lanes base .. base + width - 1 of this thread's group; the first always exists.
      Expr base = tt - FloorMod(tt, MakeInt(width));
      Buffer acc = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
      VarRef l = Var::Make("lane");
      Expr lane = base + l, x = BufferLoad::Make(operand, {lane}), a = BufferLoad::Make(acc, {MakeInt(0)});
      std::string kind = call->op.substr(std::string("warp_reduce_").size());
      Expr combined = kind == "sum"      ? op::MakeBinary(BinOp::kAdd, a, x)
                      : kind == "max"    ? Max(a, x)
                      : kind == "min"    ? Min(a, x)
                      : kind == "bitand" ? Binary::Make(BinOp::kBitAnd, a, x)
                                         : Binary::Make(BinOp::kBitOr, a, x);
      Stmt fold = IfThenElse::Make(LT(lane, MakeInt(threads_)), BufferStore::Make(acc, {MakeInt(0)}, combined, span),
                                   nullptr, span);
      compute = Seq::Make({Allocate::Make(acc, BufferLoad::Make(operand, {base}), span),
                           For::Make(l, MakeInt(1), MakeInt(width - 1), ForKind::kSerial, fold, {}, span),
                           BufferStore::Make(result, {tt}, a, span)},
                          span);
    } else {
      Expr arg = At(call->args[1]), width = At(call->args[2]);
      Expr lane = FloorMod(tt, width), base = tt - lane;
      Expr src, valid;
      if (call->op == "shfl_xor") {
        Expr other = Binary::Make(BinOp::kBitXor, lane, arg);
        src = base + other;
        valid = LT(other, width);
      } else if (call->op == "shfl_down") {
        src = tt + arg;
        valid = LT(lane + arg, width);
      } else if (call->op == "shfl_up") {
        src = tt - arg;
        valid = GE(lane - arg, MakeInt(0));
      } else {
        src = base + FloorMod(arg, width);
        valid = MakeBool(true);
      }
      // Out of the group or past the block: the lane keeps its own value, as on the GPU.
      valid = And(valid, LT(src, MakeInt(threads_)));
      compute = BufferStore::Make(
          result, {tt}, Select::Make(valid, BufferLoad::Make(operand, {src}), BufferLoad::Make(operand, {tt})), span);
    }
    out->push_back(ThreadLoop(compute, mask, span));
    return BufferLoad::Make(result, {t_});
  }

  /// Warp votes (T.any_sync, T.ballot_sync, T.activemask, T.match_any_sync, ...) and block
  /// votes (T.syncthreads_count/and/or): each thread's operand and whether it reached the
  /// vote are recorded, then every participating thread folds its group's lanes (its warp's
  /// 32, or the whole block) that are active and, for warp votes, in the lane mask.
  Expr Vote(const Call* call, const Expr& mask, const Span& span, std::vector<Stmt>* out) {
    const std::string& op = call->op;
    bool block = op.rfind("syncthreads_", 0) == 0;
    bool has_lane_mask = !block && op != "vote_activemask";
    DType i32 = DType::Int(32), u64 = DType::UInt(64);
    Buffer active = NewArray("active", i32, span, out);
    out->push_back(ThreadLoop(BufferStore::Make(active, {t_}, MakeInt(0, i32), span), nullptr, span));
    out->push_back(ThreadLoop(BufferStore::Make(active, {t_}, MakeInt(1, i32), span), mask, span));
    Expr operand_expr = op == "vote_activemask" ? MakeInt(1, i32) : call->args[has_lane_mask ? 1 : 0];
    DType ot = operand_expr->dtype;
    Buffer operand = NewArray("lanes", ot, span, out);
    out->push_back(ThreadLoop(BufferStore::Make(operand, {t_}, At(operand_expr), span), mask, span));
    Buffer result = NewArray("voted", call->dtype, span, out);
    Expr tt = t_;
    int64_t width = block ? threads_ : 32;
    Expr base = block ? MakeInt(0) : tt - FloorMod(tt, MakeInt(32));
    VarRef l = Var::Make("lane");
    Expr lane = base + l;
    Expr lane_mask = has_lane_mask ? Cast::Make(u64, At(call->args[0])) : MakeInt(0xFFFFFFFFll, u64);
    Expr bit = Binary::Make(BinOp::kShl, MakeInt(1, u64), Cast::Make(u64, Expr(l)));
    Expr in_mask = Binary::Make(BinOp::kNE, Binary::Make(BinOp::kBitAnd, lane_mask, bit), MakeInt(0, u64));
    Expr takes_part = And(And(LT(lane, MakeInt(threads_)), EQ(BufferLoad::Make(active, {lane}), MakeInt(1, i32))),
                          block ? Expr() : in_mask);
    Expr x = BufferLoad::Make(operand, {lane});
    Expr set = Binary::Make(BinOp::kNE, x, ot.IsFloat() ? MakeFloat(0, ot) : MakeInt(0, ot));
    Expr same = EQ(x, BufferLoad::Make(operand, {tt}));
    DType at = call->dtype;
    Buffer acc = BufferNode::Make("acc", at, {MakeInt(1)}, Scope::kVar);
    Expr a = BufferLoad::Make(acc, {MakeInt(0)});
    Expr init = MakeInt(0, at), step;
    auto as = [&](const Expr& e) { return Cast::Make(at, e); };
    if (op == "vote_any_sync" || op == "syncthreads_or") {
      step = Binary::Make(BinOp::kBitOr, a, as(set));
    } else if (op == "vote_all_sync" || op == "syncthreads_and") {
      init = MakeInt(1, at);
      step = Binary::Make(BinOp::kBitAnd, a, as(set));
    } else if (op == "syncthreads_count") {
      step = a + as(set);
    } else if (op == "vote_ballot_sync" || op == "vote_activemask") {
      step = Binary::Make(BinOp::kBitOr, a, Select::Make(set, as(bit), MakeInt(0, at)));
    } else if (op == "vote_match_any_sync") {
      step = Binary::Make(BinOp::kBitOr, a, Select::Make(same, as(bit), MakeInt(0, at)));
    } else {  // vote_match_all_sync: the lane mask when every lane in it agrees, else 0
      init = as(lane_mask);
      step = Select::Make(same, a, MakeInt(0, at));
    }
    Stmt fold = IfThenElse::Make(takes_part, BufferStore::Make(acc, {MakeInt(0)}, step, span), nullptr, span);
    Stmt compute = Seq::Make({Allocate::Make(acc, init, span),
                              For::Make(l, MakeInt(0), MakeInt(width), ForKind::kSerial, fold, {}, span),
                              BufferStore::Make(result, {tt}, a, span)},
                             span);
    out->push_back(ThreadLoop(compute, mask, span));
    return BufferLoad::Make(result, {t_});
  }

  /// A copy, fill or element atomic as thread t_ does it: per-thread buffers get their thread's slice
  /// (a leading range [t, t + 1)), and region corners are evaluated for thread t_.
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
    if (const auto* copy = As<CopyOp>(s)) return CopyOp::Make(region(copy->src), region(copy->dst), s->span);
    if (const auto* atomic = As<AtomicOp>(s)) {
      return AtomicOp::Make(atomic->atomic_kind, region(atomic->dst), Region{}, At(atomic->value), s->span);
    }
    const auto* fill = As<FillOp>(s);
    return FillOp::Make(region(fill->dst), At(fill->value), s->span);
  }

  // ---- statements

  [[noreturn]] static void Unsupported(const Span& span, const std::string& what) {
    TL_USER_ERROR(span) << what << " in thread-level code is not emulated on the CPU target (it runs a block's "
                                   "threads in lockstep); run this kernel on CUDA";
  }

  void Emit(const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
    if (!s) return;
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) Emit(c, mask, out);
      return;
    }
    if (const auto* let = As<LetStmt>(s)) {
      if (IsThreadIndex(let->value)) index_aliases_.insert(let->var.get());  // tx = T.get_thread_binding()
      Expr value = ExtractCollectives(let->value, mask, s->span, out);
      if (!Varying(value)) {
        out->push_back(value == let->value ? s : LetStmt::Make(let->var, value, s->span));
        return;
      }
      Buffer arr = NewArray(let->var->name, let->var->dtype, s->span, out);
      out->push_back(ThreadLoop(BufferStore::Make(arr, {t_}, At(value), s->span), mask, s->span));
      varying_vars_[let->var.get()] = arr;
      return;
    }
    if (const auto* alloc = As<Allocate>(s)) {
      const Buffer& b = alloc->buffer;
      if (b->scope != Scope::kLocal && b->scope != Scope::kVar) {
        out->push_back(s);
        return;
      }
      if (Varying(alloc->init)) Unsupported(s->span, "an initial value that depends on the thread");
      std::vector<Expr> shape = {MakeInt(threads_)};
      shape.insert(shape.end(), b->shape.begin(), b->shape.end());
      Buffer per = BufferNode::Make(b->name, b->dtype, shape, Scope::kLocal);
      per_thread_[b.get()] = per;
      out->push_back(Allocate::Make(per, alloc->init, s->span));
      return;
    }
    if (As<BufferStore>(s) || As<Evaluate>(s)) {
      if (const auto* ev = As<Evaluate>(s)) {
        const auto* call = As<Call>(ev->value);
        if (HasEffect(call, kBarrier)) return;  // lockstep: every thread is already there
      }
      std::vector<Stmt> pre;
      Stmt st = s;
      if (const auto* store = As<BufferStore>(s)) {
        std::vector<Expr> idx;
        for (const Expr& i : store->indices) idx.push_back(ExtractCollectives(i, mask, s->span, out));
        st = BufferStore::Make(store->buffer, idx, ExtractCollectives(store->value, mask, s->span, out), s->span);
      } else {
        st = Evaluate::Make(ExtractCollectives(As<Evaluate>(s)->value, mask, s->span, out), s->span);
      }
      // Statements that do not depend on the thread run once, atomics included (the CUDA
      // target gives those to one thread too); the rest once per thread that reaches them.
      if (mask || VaryingStmt(st)) {
        out->push_back(ThreadLoop(At(st), mask, s->span));
      } else {
        out->push_back(st);
      }
      return;
    }
    if (const auto* br = As<IfThenElse>(s)) {
      Expr cond = ExtractCollectives(br->cond, mask, s->span, out);
      if (!Varying(cond)) {
        std::vector<Stmt> then_out, else_out;
        Emit(br->then_case, mask, &then_out);
        Emit(br->else_case, mask, &else_out);
        out->push_back(IfThenElse::Make(cond, Seq::Make(then_out, s->span),
                                        br->else_case ? Seq::Make(else_out, s->span) : nullptr, s->span));
        return;
      }
      Buffer taken = NewArray("taken", DType::Bool(), s->span, out);
      out->push_back(ThreadLoop(BufferStore::Make(taken, {t_}, At(cond), s->span), mask, s->span));
      Expr on = BufferLoad::Make(taken, {t_});
      // A first condition that selects a range of threads: block-level work under it is
      // done once by those threads together (thread_range.h), as on CUDA.
      std::optional<ThreadRange> range, other;
      if (!mask && dims_.size() == 1) {
        range = ThreadRangeOf(cond, [&](const Expr& e) { return IsThreadIndex(e); }, threads_);
        if (range) other = ComplementRange(*range, threads_);
      }
      std::optional<ThreadRange> prev = range_;
      range_ = range;
      Emit(br->then_case, And(mask, on), out);
      range_ = other;
      Emit(br->else_case, And(mask, Not::Make(on)), out);
      range_ = prev;
      return;
    }
    if (const auto* loop = As<For>(s)) {
      if (Varying(loop->min) || Varying(loop->extent)) Unsupported(s->span, "a loop whose bounds depend on the thread");
      if (loop->for_kind == ForKind::kParallel) {
        if (!VaryingStmt(s)) {
          if (mask && !range_) {
            Unsupported(s->span, "T.Parallel under a thread-dependent condition that is not a range of threads");
          }
          if (!mask || !range_->Empty()) out->push_back(s);  // once, by the range's threads together
          return;
        }
        bool collective = false;
        ForEachExpr(s, [&](const Expr& e) {
          if (const auto* c = As<Call>(e)) collective |= IsCollective(c->op);
        });
        if (collective) Unsupported(s->span, "a warp collective inside T.Parallel");
        out->push_back(ThreadLoop(At(s), mask, s->span));  // each thread walks its own elements
        return;
      }
      std::vector<Stmt> body;
      Emit(loop->body, mask, &body);
      out->push_back(For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(body, s->span),
                               loop->annotations, s->span));
      return;
    }
    if (const auto* w = As<While>(s)) {
      if (Varying(w->cond)) Unsupported(s->span, "a while loop whose condition depends on the thread");
      std::vector<Stmt> body;
      Emit(w->body, mask, &body);
      out->push_back(While::Make(w->cond, Seq::Make(body, s->span), s->span));
      return;
    }
    if (As<Break>(s) || As<Continue>(s)) {
      if (mask) Unsupported(s->span, "break/continue under a thread-dependent condition");
      out->push_back(s);
      return;
    }
    const auto* atomic = As<AtomicOp>(s);
    if (As<CopyOp>(s) || As<FillOp>(s) || (atomic && !atomic->src.buffer)) {
      // On per-thread storage (or thread-dependent regions) each thread does its own.
      if (VaryingStmt(s)) {
        out->push_back(ThreadLoop(PerThreadTileOp(s), mask, s->span));
        return;
      }
      // An element atomic under a thread-dependent branch: once per thread that takes it
      // (as on CUDA). Block-level work there (a copy, a fill, a region atomic): once, by a
      // range of threads together; under another condition only part of it would run on CUDA.
      bool element_atomic = false;
      if (atomic) {
        element_atomic = true;
        for (const Range& r : atomic->dst.ranges) element_atomic = element_atomic && IsOne(r.extent);
      }
      if (mask && element_atomic) {
        out->push_back(ThreadLoop(PerThreadTileOp(s), mask, s->span));
        return;
      }
      if (mask && TouchesFragment(s)) {
        // As on CUDA: a fragment is spread over all the block's threads.
        Unsupported(s->span, "a tile operation on a register fragment under a thread-dependent condition");
      }
      if (mask && !range_) {
        Unsupported(s->span, "a tile copy, fill or region atomic under a thread-dependent condition that is not a "
                             "range of threads");
      }
      if (!mask || !range_->Empty()) out->push_back(s);
      return;
    }
    if (As<ReduceOp>(s) || As<GemmOp>(s) || As<AtomicOp>(s)) {
      if (VaryingStmt(s)) Unsupported(s->span, "a tile operation on per-thread storage or thread-dependent regions");
      // Under a range, a reduction or region atomic of shared tiles runs once (CUDA spreads
      // it over the range); GEMMs and fragments are spread over the whole block on CUDA.
      if (mask && (!range_ || As<GemmOp>(s) || TouchesFragment(s))) {
        Unsupported(s->span, "a tile operation under a thread-dependent condition");
      }
      if (!mask || !range_->Empty()) out->push_back(s);
      return;
    }
    if (const auto* attr = As<AttrStmt>(s)) {
      // T.print of a thread-dependent value (or under a thread-dependent branch): once per
      // thread that reaches it, like the other leaves.
      if (attr->key.rfind("tl.print", 0) == 0 && (mask || VaryingStmt(s))) {
        out->push_back(ThreadLoop(At(s), mask, s->span));
        return;
      }
    }
    out->push_back(s);  // attributes and the like
  }

  std::vector<int64_t> dims_;
  int64_t threads_ = 1;
  VarRef t_ = Var::Make("t");
  std::unordered_map<const BufferNode*, Buffer> per_thread_;  ///< locals and vars -> [threads, ...]
  std::unordered_map<const Var*, Buffer> varying_vars_;        ///< thread-dependent lets -> [threads]
  std::unordered_set<const Var*> index_aliases_;               ///< lets bound to exactly the thread index
  std::optional<ThreadRange> range_;  ///< the threads taking the branch being emitted, when a range
  std::unordered_set<const BufferNode*> arrays_;                ///< arrays indexed by t
};

class KernelVisitor : public IRMutator {
 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    if (!IsThreadLevel(op->body)) return self;
    Stmt body = ThreadEmulator(op->threads).Run(op->body);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, body, op->span);
  }
};

}  // namespace

ir::PrimFunc CpuEmulateThreads(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = KernelVisitor().Mutate(f->body);
  if (body != f->body) ctx.remarks.push_back("thread-level code runs its threads in lockstep on the CPU");
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cpu-emulate-threads", CpuEmulateThreads);

}  // namespace tl::transform
