// SPDX-License-Identifier: Apache-2.0
/// \file "cpu-emulate-threads": thread-level code (T.get_thread_binding,
/// per-thread T.alloc_local / T.alloc_var, T.warp_reduce_*, T.shfl_*) on the
/// CPU target.
///
/// A CPU block is one sequence. A kernel that reads its thread index runs its
/// statements in lockstep instead: each statement that depends on the thread
/// becomes a loop over the block's threads `t`, one statement after the other,
/// which is one of the orders SIMT hardware may run a race-free program in. So:
/// - per-thread storage (locals, vars, thread-dependent lets) gets a leading
/// dimension
///   of the thread count, indexed by `t`;
/// - a thread-dependent branch stores its condition per thread and masks the
/// statements
///   under it;
/// - a warp collective evaluates its operand for every thread first, then
/// combines the
///   values of each thread's warp (lanes t - t % width ...), as the shuffles
///   would;
/// - T.sync_threads has nothing left to do;
/// - copies and fills of per-thread storage (or with thread-dependent regions)
/// run once
///   per thread, on that thread's slice;
/// - statements that do not depend on the thread run once, atomics included (as
/// the CUDA
///   target gives them to one thread), and so does block-level work (tile ops,
///   T.Parallel over tiles).
/// - a loop whose bounds depend on the thread runs once per thread when its body is that
///   thread's own work (ThreadOwnWork).
/// What lockstep cannot express is a CompileError at its line: other loops whose bounds or
/// while conditions depend on the thread index (bounds read from per-thread storage must
/// agree between the threads at run time), break/continue or block-level
/// work under a thread-dependent branch, reductions, GEMMs and atomics on
/// per-thread storage.
#include "emulate_threads.h"
#include "../atomic_updates.h"

#include "tl/transform/passes.h"

namespace tl::transform {
namespace cpu {

void ThreadEmulator::Emit(const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  if (!s) return;
  if (const auto* seq = As<Seq>(s)) return EmitSeq(seq, mask, out);
  if (const auto* let = As<LetStmt>(s)) return EmitLet(let, s, mask, out);
  if (const auto* alloc = As<Allocate>(s)) return EmitAllocate(alloc, s, mask, out);
  if (As<BufferStore>(s) || As<Evaluate>(s)) return EmitLeaf(s, mask, out);
  if (const auto* br = As<IfThenElse>(s)) return EmitBranch(br, s, mask, out);
  if (const auto* loop = As<For>(s)) return EmitLoop(loop, s, mask, out);
  if (const auto* w = As<While>(s)) {
    if (Varying(w->cond)) Unsupported(s->span, "a while loop whose condition depends on the thread");
    std::vector<Stmt> body;
    loop_masks_.push_back(mask);
    Emit(w->body, mask, &body);
    loop_masks_.pop_back();
    out->push_back(While::Make(w->cond, Seq::Make(body, s->span), s->span));
    return;
  }
  if (As<Break>(s) || As<Continue>(s)) {
    if (mask) return EmitUniformJump(s, mask, out);
    out->push_back(s);
    return;
  }
  if (As<CopyOp>(s) || As<FillOp>(s) || As<AtomicOp>(s) || As<ReduceOp>(s) || As<GemmOp>(s)) {
    return EmitTileOp(s, mask, out);
  }
  if (const auto* attr = As<AttrStmt>(s)) {
    if (attr->key == kBarrierInitAttr) return EmitBarrierInit(attr, out);
    if (attr->key == kTmaCopyAttr) return;  // the copy that follows completes at once: nothing to count
    // T.print of a thread-dependent value (or under a thread-dependent branch):
    // once per thread that reaches it, like the other leaves.
    if (attr->key.rfind("tl.print", 0) == 0 && (mask || VaryingStmt(s))) {
      out->push_back(ThreadLoop(At(s), mask, s->span));
      return;
    }
  }
  out->push_back(s);  // attributes and the like
}

void ThreadEmulator::EmitSeq(const Seq* seq, const Expr& mask, std::vector<Stmt>* out) {
  for (size_t i = 0; i < seq->stmts.size(); ++i) {
    // Sibling branches on disjoint thread ranges that wait on each other (`with T.ws(0):`
    // then `with T.ws(1):`): roles that run at the same time (emulate_roles.cc).
    const size_t run = mask ? 0 : RoleRun(seq->stmts, i);
    if (run < 2) {
      Emit(seq->stmts[i], mask, out);
      continue;
    }
    for (size_t k = i; k < i + run; ++k) {
      in_role_chain_ = true;
      EmitBranch(As<IfThenElse>(seq->stmts[k]), seq->stmts[k], mask, out);
    }
    EmitRoles(out, seq->stmts[i]->span);
    i += run - 1;
  }
}

/// break/continue under a thread-dependent condition (`if l_new_topk <= 0: break`, a value
/// every thread computes alike from shared memory): the lockstep threads can leave or skip
/// the loop only together. The threads that reach it are counted against those running the
/// loop: all of them, the block jumps; none, nothing happens; some, the call fails naming
/// the line (cpu_divergent_threads, the kernel's status) rather than give a wrong answer.
void ThreadEmulator::EmitUniformJump(const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  TL_ICHECK(!loop_masks_.empty()) << "break/continue outside a loop";
  const Span& span = s->span;
  auto count = [&](const char* name, const Expr& where) {
    Buffer n = NewScalar(name, DType::Int(32), MakeInt(0), span, out);
    Expr value = BufferLoad::Make(n, {MakeInt(0)});
    out->push_back(ThreadLoop(BufferStore::Make(n, {MakeInt(0)}, value + MakeInt(1), span), where, span));
    return value;
  };
  Expr taking = count("taking", mask), running = count("running", loop_masks_.back());
  Expr some = LT(MakeInt(0), taking);
  out->push_back(IfThenElse::Make(And(some, LT(taking, running)), DivergentThreads(span), nullptr, span));
  out->push_back(IfThenElse::Make(some, s, nullptr, span));
}

/// A serial loop whose bounds come from per-thread values (`for s in T.serial(ceildiv(n, B))`,
/// n a T.alloc_var every thread loads from shared memory): the lockstep threads run one loop,
/// with the bounds the first thread running it computed; a thread that computed others fails
/// the call naming the line (cpu_divergent_threads) rather than run the wrong iterations.
void ThreadEmulator::EmitAgreedBoundsLoop(const For* loop, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  const Span& span = s->span;
  auto scalar = [&](const char* name, DType t, const Expr& init) { return NewScalar(name, t, init, span, out); };
  auto load = [](const Buffer& b) { return BufferLoad::Make(b, {MakeInt(0)}); };
  Buffer first = scalar("first", DType::Int(32), MakeInt(-1));
  out->push_back(ThreadLoop(
      IfThenElse::Make(LT(load(first), MakeInt(0)), BufferStore::Make(first, {MakeInt(0)}, t_, span), nullptr, span),
      mask, span));
  const DType it = loop->var->dtype;
  Buffer lo = scalar("lo", it, MakeInt(0, it)), n = scalar("n", it, MakeInt(0, it));
  auto at_first = [&](const Expr& e) {
    return Substitute(At(e), [&](const Var* v) -> Expr { return v == t_.get() ? load(first) : nullptr; });
  };
  out->push_back(IfThenElse::Make(
      GE(load(first), MakeInt(0)),
      Seq::Make({BufferStore::Make(lo, {MakeInt(0)}, at_first(loop->min), span),
                 BufferStore::Make(n, {MakeInt(0)}, at_first(loop->extent), span)},
                span),
      nullptr, span));
  Expr differs = Binary::Make(BinOp::kOr, Binary::Make(BinOp::kNE, At(loop->min), load(lo)),
                              Binary::Make(BinOp::kNE, At(loop->extent), load(n)));
  out->push_back(ThreadLoop(IfThenElse::Make(differs, DivergentThreads(span), nullptr, span), mask, span));
  out->push_back(For::Make(loop->var, load(lo), load(n), loop->for_kind, EmitSerialBody(loop, mask),
                           loop->annotations, span));
}

/// Whether `body` is one thread's own work: stores, lets, branches and loops over them, and
/// calls that neither synchronize, nor take other threads' part, nor update atomically (the
/// lockstep order would run such an update once for the block), nor act for the block.
bool ThreadEmulator::ThreadOwnWork(const Stmt& body) {
  struct Walk : IRVisitor {
    bool own = true;
    void Visit_(const For* op) override {
      own &= op->for_kind != ForKind::kParallel;
      IRVisitor::Visit_(op);
    }
    void Visit_(const While*) override { own = false; }
    void Visit_(const Allocate*) override { own = false; }
    void Visit_(const AttrStmt*) override { own = false; }
    void Visit_(const KernelLaunch*) override { own = false; }
    void Visit_(const CopyOp*) override { own = false; }
    void Visit_(const GemmOp*) override { own = false; }
    void Visit_(const FillOp*) override { own = false; }
    void Visit_(const ReduceOp*) override { own = false; }
    void Visit_(const AtomicOp*) override { own = false; }
  } walk;
  walk.Visit(body);
  const uint32_t others = kAtomicUpdate | kBlockLevel | kBarrier | kWarpCollective | kVote | kPerThread |
                          kProgramGroupCopy | kProgramGroupWait | kProgramGroupCommit | kGemm;
  ForEachExpr(body, [&](const Expr& e) {
    const auto* c = As<Call>(e);
    if (!c || IsPureCall(c)) return;
    const IntrinsicInfo* info = LookupIntrinsic(c->op);
    walk.own &= info && !(info->effects & others);  // (an undeclared call may do anything)
  });
  return walk.own;
}

Stmt ThreadEmulator::EmitSerialBody(const For* loop, const Expr& mask) {
  std::vector<Stmt> body;
  ++loop_depth_;
  loop_masks_.push_back(mask);
  Emit(loop->body, mask, &body);
  loop_masks_.pop_back();
  --loop_depth_;
  return Seq::Make(body, loop->span);
}

/// A let of a thread-dependent value becomes a per-thread array. So does the old value of an
/// atomic update under a thread-dependent branch: each thread that takes the branch updates
/// once and gets its own (atomic_updates.h; one for the block is refused, as on CUDA).
void ThreadEmulator::EmitLet(const LetStmt* let, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  if (IsThreadIndex(let->value)) index_aliases_.insert(let->var.get());  // tx = T.get_thread_binding()
  Expr value = ExtractCollectives(let->value, mask, s->span, out);
  const bool atomic = HasAtomicUpdate(value);
  if (atomic && !mask && !Varying(value)) RefuseBlockLevelAtomicLet(s->span);
  if (!Varying(value) && !atomic) {
    out->push_back(value == let->value ? s : LetStmt::Make(let->var, value, s->span));
    return;
  }
  Buffer arr = NewArray(let->var->name, let->var->dtype, s->span, out);
  out->push_back(ThreadLoop(BufferStore::Make(arr, {t_}, At(value), s->span), mask, s->span));
  varying_vars_[let->var.get()] = arr;
}

/// Local storage (and fragments used per thread) gets a copy per thread.
void ThreadEmulator::EmitAllocate(const Allocate* alloc, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  const Buffer& b = alloc->buffer;
  // A fragment used as per-thread storage (per_thread_fragments.h): a copy per thread, as
  // the CUDA target keeps it in each thread's registers.
  const bool per_thread_fragment =
      b->scope == Scope::kFragment && !alloc->init &&
      HeldPerThread(b, body_, [&](const Expr& e) { return IsThreadIndexExpr(e); });
  if (b->scope != Scope::kLocal && b->scope != Scope::kVar && !per_thread_fragment) {
    out->push_back(s);
    return;
  }
  int64_t elements = 0;
  const bool varying_init = Varying(alloc->init);
  if (varying_init && !(AsConstInt(b->NumElements(), &elements) && elements == 1)) {
    Unsupported(s->span, "an initial value that depends on the thread, for storage of several elements");
  }
  std::vector<Expr> shape = {MakeInt(threads_)};
  shape.insert(shape.end(), b->shape.begin(), b->shape.end());
  Buffer per = BufferNode::Make(b->name, b->dtype, shape, Scope::kLocal);
  per_thread_[b.get()] = per;
  out->push_back(Allocate::Make(per, varying_init ? nullptr : alloc->init, s->span));
  // T.alloc_var(dtype, init) with an init of the thread (upstream's radix top-k: its first
  // element): each thread's own value, stored as an assignment would be
  if (varying_init) {
    Emit(BufferStore::Make(b, std::vector<Expr>(b->shape.size(), MakeInt(0)), alloc->init, s->span), mask, out);
  }
}

/// A store or an evaluated call: once, or once per thread that reaches it.
void ThreadEmulator::EmitLeaf(const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  if (const auto* ev = As<Evaluate>(s)) {
    const auto* call = As<Call>(ev->value);
    if (HasEffect(call, kBarrier)) {
      // A named barrier that threads of this branch and threads outside it meet at (a
      // producer's T.sync_threads(1) in one branch, the consumers' in the other) orders the
      // two branches: between roles that run at the same time it is a barrier of theirs;
      // elsewhere lockstep would run the branches one after the other in program order, so it
      // is refused, not run in an order that may be the wrong one.
      const std::optional<int64_t> n = mask ? NamedBarrierThreads(s, threads_) : std::nullopt;
      if (n && (!range_ || *n != range_->hi - range_->lo)) {
        if (in_role_ && *n > 0) return EmitRoleNamedBarrier(call, *n, true, s, mask, out);
        Unsupported(s->span, "a named barrier that this branch on the thread index meets with threads outside it");
      }
      return;  // lockstep: every thread is already there
    }
    if (IsIntrinsic(call, TL_INTRINSIC_NAME("named_barrier_arrive"))) {
      int64_t n = 0;
      if (in_role_ && AsConstInt(call->args[1], &n) && n > 0) return EmitRoleNamedBarrier(call, n, false, s, mask, out);
      Unsupported(s->span, "T.named_barrier_arrive outside warpgroup roles that wait on each other (a top-level "
                           "`if` on the thread index whose branches meet at named barriers or mbarriers)");
    }
    if (HasEffect(call, kPerThread)) return EmitMbarrierOp(call, s, mask, out);
    if (IsIntrinsic(call, TL_INTRINSIC_NAME("mma_fragment"))) return EmitWarpMma(call, s, mask, out);
  }
  Stmt st = s;
  if (const auto* store = As<BufferStore>(s)) {
    std::vector<Expr> idx;
    for (const Expr& i : store->indices) idx.push_back(ExtractCollectives(i, mask, s->span, out));
    st = BufferStore::Make(store->buffer, idx, ExtractCollectives(store->value, mask, s->span, out), s->span);
  } else {
    st = Evaluate::Make(ExtractCollectives(As<Evaluate>(s)->value, mask, s->span, out), s->span);
  }
  // Statements that do not depend on the thread run once, atomics included
  // (the CUDA target gives those to one thread too); the rest once per thread
  // that reaches them.
  if (mask || VaryingStmt(st)) {
    out->push_back(ThreadLoop(At(st), mask, s->span));
  } else {
    out->push_back(st);
  }
}

/// A branch: on a thread-independent condition, both sides as they are; else the condition
/// is stored per thread and masks the statements under it.
void ThreadEmulator::EmitBranch(const IfThenElse* br, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
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
  // A condition that selects a range of threads (at the top, or inside another such
  // range: `elif tx < 256:`): block-level work under it is done once by those threads
  // together (thread_range.h), as on CUDA.
  std::optional<ThreadRange> range, other;
  if ((!mask || range_) && dims_.size() == 1) {
    const ThreadRange outer = mask ? *range_ : ThreadRange{0, threads_};
    range = ThreadRangeOf(
        cond, [&](const Expr& e) { return IsThreadIndex(e); }, threads_);
    if (range) {
      range = ThreadRange{std::max(range->lo, outer.lo), std::min(range->hi, outer.hi)};
      other = ComplementWithin(*range, outer);
    }
  }
  std::optional<ThreadRange> prev = range_;
  bool prev_ws = ws_scope_;
  // Branches that wait on each other's mbarriers run as concurrent roles (emulate_roles.cc):
  // each branch's statements go to a role of their own, an `elif` continuing the chain.
  const bool chain = in_role_chain_;
  const bool roles = chain || RoleSplit(br, mask, range, other);
  in_role_chain_ = false;
  range_ = range;
  ws_scope_ = range && IsWarpgroupScope(br->then_case);
  std::vector<Stmt> role;
  const bool prev_in_role = in_role_;
  in_role_ = in_role_ || roles;
  Emit(br->then_case, And(mask, on), roles ? &role : out);
  if (roles) roles_.push_back(std::move(role));
  range_ = other;
  ws_scope_ = false;
  const auto* elif = br->else_case ? As<IfThenElse>(br->else_case) : nullptr;
  if (roles && elif && Varying(elif->cond) && other) {
    in_role_chain_ = true;
    EmitBranch(elif, br->else_case, And(mask, Not::Make(on)), out);
  } else if (roles) {
    std::vector<Stmt> last;
    Emit(br->else_case, And(mask, Not::Make(on)), &last);
    if (!last.empty()) roles_.push_back(std::move(last));
  } else {
    Emit(br->else_case, And(mask, Not::Make(on)), out);
  }
  range_ = prev;
  ws_scope_ = prev_ws;
  in_role_ = prev_in_role;
  if (roles && !chain) EmitRoles(out, s->span);
  return;
}

/// A loop: a T.Parallel nest over tiles runs once (by a range of threads together under a
/// range condition); one over per-thread storage once per thread; other loops as they are.
void ThreadEmulator::EmitLoop(const For* loop, const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  if (Varying(loop->min) || Varying(loop->extent)) {
    // A loop of the thread's own work (`for i in T.unroll(tx % 32): acc += ...`) runs once
    // per thread, each thread with its own bounds: nothing in it waits for or hands work to
    // another thread.
    if (ThreadOwnWork(loop->body)) {
      out->push_back(ThreadLoop(At(s), mask, s->span));
      return;
    }
    // (bounds read from per-thread storage may agree at run time; the thread index never does)
    if (loop->for_kind == ForKind::kParallel || ReadsThreadIndex(loop->min) || ReadsThreadIndex(loop->extent)) {
      Unsupported(s->span,
                  "a loop whose bounds depend on the thread, with a barrier, a warp collective, an atomic, "
                  "an allocation or block-level work inside");
    }
    return EmitAgreedBoundsLoop(loop, s, mask, out);
  }
  if (loop->for_kind == ForKind::kParallel) {
    if (!VaryingStmt(s)) {
      if (mask && !range_) {
        Unsupported(s->span,
                    "T.Parallel under a thread-dependent condition "
                    "that is not a range of threads");
      }
      if (!mask || !range_->Empty()) out->push_back(s);  // once, by the range's threads together
      return;
    }
    bool collective = false;
    ForEachExpr(s, [&](const Expr& e) {
      if (const auto* c = As<Call>(e)) collective |= IsCollective(c->op);
    });
    if (collective) Unsupported(s->span, "a warp collective inside T.Parallel");
    out->push_back(ThreadLoop(At(s), mask,
                              s->span));  // each thread walks its own elements
    return;
  }
  out->push_back(For::Make(loop->var, loop->min, loop->extent, loop->for_kind, EmitSerialBody(loop, mask),
                           loop->annotations, s->span));
}

/// A tile op: on per-thread storage, each thread does its own; element atomics once per
/// taking thread; block-level work once, refused under conditions CUDA cannot honour.
void ThreadEmulator::EmitTileOp(const Stmt& s, const Expr& mask, std::vector<Stmt>* out) {
  const auto* atomic = As<AtomicOp>(s);
  if (As<CopyOp>(s) || As<FillOp>(s) || (atomic && !atomic->src.buffer)) {
    // On per-thread storage (or thread-dependent regions) each thread does its
    // own.
    if (VaryingStmt(s)) {
      out->push_back(ThreadLoop(PerThreadTileOp(s), mask, s->span));
      return;
    }
    // An element atomic under a thread-dependent branch: once per thread that
    // takes it (as on CUDA). Block-level work there (a copy, a fill, a region
    // atomic): once, by a range of threads together; under another condition
    // only part of it would run on CUDA.
    bool element_atomic = false;
    if (atomic) {
      element_atomic = true;
      for (const Range& r : atomic->dst.ranges) element_atomic = element_atomic && IsOne(r.extent);
    }
    if (mask && element_atomic) {
      out->push_back(ThreadLoop(PerThreadTileOp(s), mask, s->span));
      return;
    }
    if (mask && TouchesFragment(s) && !FragmentsInRange(s)) {
      // As on CUDA: a fragment is spread over all the block's threads (in a T.ws block,
      // over that warpgroup's; under a range of whole warps, over those).
      Unsupported(s->span,
                  "a tile operation on a register fragment under a "
                  "thread-dependent condition");
    }
    if (mask && !range_) {
      Unsupported(s->span,
                  "a tile copy, fill or region atomic under a "
                  "thread-dependent condition that is not a "
                  "range of threads");
    }
    if (!mask || !range_->Empty()) out->push_back(s);
    return;
  }
  if (As<ReduceOp>(s) || As<GemmOp>(s) || As<AtomicOp>(s)) {
    if (VaryingStmt(s)) Unsupported(s->span, "a tile operation on per-thread storage or thread-dependent regions");
    // Under a range, a reduction or region atomic of shared tiles runs once
    // (CUDA spreads it over the range); GEMMs and fragments need a range CUDA can lay
    // them over (whole warps).
    if (mask && (!range_ || ((As<GemmOp>(s) || TouchesFragment(s)) && !FragmentsInRange(s)))) {
      Unsupported(s->span, "a tile operation under a thread-dependent condition");
    }
    if (!mask || !range_->Empty()) out->push_back(s);
    return;
  }
  TL_ICHECK(false) << "unhandled tile op";
}

}  // namespace cpu

namespace {

using namespace ir;  // NOLINT: implementation file

bool IsThreadLevel(const Stmt& body) {
  bool found = false;
  ForEachExpr(body, [&](const Expr& e) {
    if (const auto* c = As<Call>(e)) {
      found |= HasEffect(c, kThreadIndex) || cpu::IsCollective(c->op) || HasEffect(c, kPerThread);
    }
  });
  return found;
}

/// In a kernel with no thread-level code, an atomic's old value bound outside T.Parallel is
/// the block's (CUDA refuses it: each thread would update); refused here alike.
void RefuseAtomicLets(const Stmt& body) {
  struct Finder : IRVisitor {
    int parallel = 0;
    void Visit_(const For* op) override {
      parallel += op->for_kind == ForKind::kParallel;
      IRVisitor::Visit_(op);
      parallel -= op->for_kind == ForKind::kParallel;
    }
    void Visit_(const LetStmt* op) override {
      if (parallel == 0 && HasAtomicUpdate(op->value)) RefuseBlockLevelAtomicLet(op->span);
      IRVisitor::Visit_(op);
    }
  } finder;
  finder.Visit(body);
}

class KernelVisitor : public IRMutator {
 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    if (!IsThreadLevel(op->body)) {
      RefuseAtomicLets(op->body);
      return self;
    }
    Stmt body = cpu::ThreadEmulator(op->threads).Run(op->body);
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
