// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-insert-barriers": __syncthreads exactly where shared memory needs one.
///
/// Walks the kernel's statement sequences tracking the shared buffers read and written
/// since the last barrier. A statement that reads what is pending as written, or writes
/// what is pending as read or written, gets a barrier in front of it (read-after-write,
/// write-after-read, write-after-write between threads). Loops carry what their body
/// leaves pending around the back edge. Work spread over threads (anything that mentions
/// the thread index) is one unit: barriers go around it, never inside, so no barrier is
/// ever under a thread-dependent branch (see cuda::BarriersGoInside).
///
/// Buffers are compared as memory: two buffers whose ranges in the arena overlap (as
/// cuda-plan-shared-memory placed them) are the same memory, so the first write of a
/// buffer that reuses dead bytes waits for the last reads of their previous owner.
///
/// cp.async copies into a buffer are ordered by the pipeline's own wait and barrier, so
/// they are checked only against other buffers sharing their bytes. They stay pending
/// as in flight until a cp_async_wait(0) (a barrier does not make them land); then they
/// are ordinary pending writes. The planner keeps every buffer off bytes with copies in
/// flight, which is checked here.
///
/// The program's own cp.async copies (T.ptx_cp_async) are ordered by the program: through
/// mbarriers (no write declared), or, in a kernel with a T.ptx_wait_group, by its own groups:
/// then each copy is a write of its tile where it is issued and every wait is a write of all
/// those tiles (they land there), so readers in other threads get a barrier after the wait.
///
/// In a warp-specialized kernel (cuda-warp-specialize) the producer branch gets no
/// barriers (mbarriers order its TMA writes) and the consumers synchronize among
/// themselves with a named barrier: __syncthreads would wait for the producer threads.
#include <set>
#include <unordered_set>

#include "barrier_accesses.h"
#include "barrier_slots.h"
#include "pass_helpers.h"
#include "shared_plan.h"
#include "../thread_range.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/target/warp.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using target::kWarpSize;

using cuda::barriers::AccessCollector;
using cuda::barriers::BufferSet;
using cuda::barriers::SharedTileAt;
using cuda::barriers::Memory;
using cuda::barriers::State;

bool IsBarrier(const Stmt& s) {
  const auto* ev = As<Evaluate>(s);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  return HasEffect(call, kBarrier);
}

/// The named barrier the consumers of a warp-specialized kernel share (0 is __syncthreads').
constexpr int64_t kConsumerBarrierId = 1;
/// Named barriers 2..15 go to branches over ranges of whole warps (ThreadRangeBranches).
constexpr int64_t kFirstRangeBarrierId = 2, kLastBarrierId = 15;

/// What the whole kernel's barrier insertion shares: the block's thread count and the
/// next free named barrier.
struct KernelBarriers {
  int64_t threads = 0;  ///< 0: unknown (no range branches get barriers of their own)
  int64_t next_id = kFirstRangeBarrierId;
  /// Named barrier ids the program uses itself (T.sync_threads(id, ...),
  /// T.named_barrier_arrive(id, ...)): the compiler's own barriers take other ids.
  std::set<int64_t> user_ids;
  int64_t consumer_id = kConsumerBarrierId;
  /// The next id for a range branch's barrier (not the program's, not the consumers').
  int64_t NextFree() {
    while (user_ids.count(next_id) || next_id == consumer_id) ++next_id;
    return next_id;
  }
  int64_t Take() {
    NextFree();
    return next_id++;
  }
  /// A warp-specialized kernel launches its producer threads above `threads`: outside the
  /// role split a condition like `tx >= 128` also holds for them, so its range is unknown.
  bool producers_above = false;
  /// The tiles T.ptx_cp_async writes, in a kernel that waits for them with T.ptx_wait_group
  /// (AccessCollector::program_copies); empty otherwise.
  BufferSet program_copies;
};

bool IsProgramGroupWait(const Stmt& s) {
  const auto* ev = As<Evaluate>(s);
  return HasEffect(ev ? As<Call>(ev->value) : nullptr, kProgramGroupWait);
}

/// The shared tiles the program's T.ptx_cp_async copies write, if it waits for them with
/// T.ptx_wait_group (and not only through mbarriers).
BufferSet ProgramGroupCopies(const Stmt& body) {
  BufferSet tiles;
  bool waits = false;
  ForEachExpr(body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    waits |= HasEffect(call, kProgramGroupWait);
    if (!HasEffect(call, kProgramGroupCopy)) return;
    if (const BufferNode* tile = SharedTileAt(call->args[0])) tiles.insert(tile);
  });
  return waits ? tiles : BufferSet{};
}

/// `body` with the variables bound to the thread index itself (`tx = T.get_thread_binding()`
/// gives `let tx_1 = tx`) replaced by it: a condition on such a variable is a condition on
/// the thread, which decides where barriers may go (a __syncthreads inside `if tx_1 < 32:`
/// would wait for threads that never come).
Stmt WithoutThreadAliases(const Stmt& body, const VarRef& tx) {
  struct Aliases : IRVisitor {
    std::unordered_set<const Var*> found;
    const Var* tx = nullptr;
    void Visit_(const LetStmt* op) override {
      const auto* v = As<Var>(op->value);
      if (v && (v == tx || found.count(v))) found.insert(op->var.get());
      IRVisitor::Visit_(op);
    }
  } aliases;
  aliases.tx = tx.get();
  aliases.Visit(body);
  if (aliases.found.empty()) return body;
  return Substitute(body, [&](const Var* v) -> Expr { return aliases.found.count(v) ? Expr(tx) : nullptr; });
}

class BarrierInserter {
 public:
  /// `named_threads` > 0: the statements run on that many threads only (the consumers of
  /// a warp-specialized kernel, or a branch over a range of warps), which synchronize with
  /// named barrier `barrier_id`.
  /// `range`: the threads they are, when a branch on the thread index selected them (its
  /// own branches then select from them).
  BarrierInserter(const Var* tx, const Memory& memory, KernelBarriers* kernel, int64_t named_threads = 0,
                  int64_t barrier_id = kConsumerBarrierId, std::optional<ThreadRange> range = std::nullopt)
      : tx_(tx), memory_(memory), kernel_(kernel), named_threads_(named_threads), barrier_id_(barrier_id),
        range_(range), slots_(tx, range.value_or(ThreadRange{0, named_threads ? named_threads : kernel->threads})) {}

  /// Rewrites `s` starting from `state`; leaves in `state` what is pending afterwards.
  Stmt Run(const Stmt& s, State* state) {
    if (!s) return s;
    if (IsBarrier(s)) {
      state->Barrier();
      // A named barrier the program wrote for more threads than these (the consumers'
      // side of a producer's T.named_barrier_arrive) is its own protocol: kept as written.
      return named_threads_ && !AcrossRegion(s) ? Barrier(s->span) : s;
    }
    if (cuda::IsWarpSpecializedSplit(s)) return SplitRoles(As<IfThenElse>(s), state);
    if (cuda::IsWaitAll(s)) {
      state->LandInFlight();
      return s;
    }
    if (IsProgramGroupWait(s)) {
      state->Land(kernel_->program_copies);
      return s;
    }
    if (const auto* seq = As<Seq>(s)) {
      std::vector<Stmt> out;
      for (const Stmt& c : seq->stmts) {
        Stmt r = Run(c, state);
        if (r) out.push_back(r);
      }
      return Seq::Make(out, seq->span);
    }
    if (const auto* tb = As<For>(s)) {
      if (tb->for_kind == ForKind::kThreadBinding) {
        Stmt body = Run(tb->body, state);
        return For::Make(tb->var, tb->min, tb->extent, tb->for_kind, body, tb->annotations, tb->span);
      }
    }
    if (const auto* br = As<IfThenElse>(s)) {
      if (Stmt split = ThreadRangeBranches(s, br, state)) return split;
    }
    if (!cuda::BarriersGoInside(s, tx_)) return WithBarrier(Access(Collect(s), state), s);
    if (const auto* loop = As<For>(s)) {
      // min and extent are read once, before the first iteration.
      AccessCollector head = Collect(loop->min);
      head.Visit(loop->extent);
      bool barrier = Access(head, state);
      barrier |= EnterLoop(s, state);
      slots_.BindLoop(loop->var.get(), loop->min, loop->extent);
      const int64_t first_id = kernel_->next_id;
      State entered = *state;
      Stmt body = RunLoop(loop->body, state, loop->var);
      const int inside = CountBarriers(body);
      // (with nothing pending before the loop, a barrier in front would change nothing)
      if (inside > 0 && !barrier && !(entered.reads.empty() && entered.writes.empty())) {
        // Barriers inside the loop that only order it after what was pending before it
        // (upstream's sparse MLA producer: its slots differ from one iteration to the
        // next, but not from the outer loop's previous round) run once in front instead.
        const int64_t after_id = kernel_->next_id;
        kernel_->next_id = first_id;
        State fresh = entered;
        fresh.Barrier();
        Stmt hoisted = RunLoop(loop->body, &fresh, loop->var);
        if (CountBarriers(hoisted) < inside) {
          *state = fresh;
          return WithBarrier(true, For::Make(loop->var, loop->min, loop->extent, loop->for_kind, hoisted,
                                             loop->annotations, loop->span));
        }
        kernel_->next_id = after_id;
      }
      return WithBarrier(barrier, For::Make(loop->var, loop->min, loop->extent, loop->for_kind, body,
                                            loop->annotations, loop->span));
    }
    if (const auto* w = As<While>(s)) {
      bool barrier = EnterLoop(s, state);
      Stmt body = RunLoop(w->body, state);
      return WithBarrier(barrier, While::Make(w->cond, body, w->span));
    }
    const auto* br = As<IfThenElse>(s);
    TL_ICHECK(br) << "barriers inside an unexpected statement";
    // The condition is evaluated before either branch: its reads come first.
    bool barrier = Access(Collect(br->cond), state);
    State then_state = *state, else_state = *state;
    Stmt t = Run(br->then_case, &then_state);
    Stmt e = Run(br->else_case, &else_state);
    *state = then_state;
    state->Merge(else_state);
    return WithBarrier(barrier, IfThenElse::Make(br->cond, t, e, br->span));
  }

 private:
  template <typename Node>
  AccessCollector Collect(const Node& n) const {
    AccessCollector acc;
    if (!kernel_->program_copies.empty()) acc.program_copies = &kernel_->program_copies;
    acc.Visit(n);
    return acc;
  }

  /// Records one unit's accesses; returns whether a barrier must go in front of it.
  bool Access(const AccessCollector& acc, State* state) {
    TL_ICHECK(!memory_.Aliases(acc.All(), state->in_flight))
        << "shared bytes reused while a cp.async into them may be in flight (see cuda-plan-shared-memory)";
    bool conflict = Conflicts(acc.reads, acc.read_slots, false, state->writes, state->write_slots, true) ||
                    Conflicts(acc.writes, acc.write_slots, true, state->reads, state->read_slots, false) ||
                    Conflicts(acc.writes, acc.write_slots, true, state->writes, state->write_slots, true) ||
                    memory_.Aliases(acc.async_writes, state->Accessed());
    if (conflict) state->Barrier();
    state->reads.insert(acc.reads.begin(), acc.reads.end());
    state->writes.insert(acc.writes.begin(), acc.writes.end());
    cuda::MergeSlots(&state->read_slots, acc.read_slots);
    cuda::MergeSlots(&state->write_slots, acc.write_slots);
    state->in_flight.insert(acc.async_writes.begin(), acc.async_writes.end());
    return conflict;
  }

  /// Whether this unit's accesses `cur` (writes when `cur_write`) conflict with pending ones:
  /// the same memory, unless every pair of accesses of one buffer is independent
  /// (barrier_slots.h).
  bool Conflicts(const BufferSet& cur, const cuda::SlotAccesses& cur_slots, bool cur_write, const BufferSet& pending,
                 const cuda::SlotAccesses& pending_slots, bool pending_write) {
    for (const BufferNode* x : cur) {
      for (const BufferNode* y : pending) {
        if (x != y) {
          if (memory_.SharesBytes(x, y)) return true;
          continue;
        }
        auto c = cur_slots.find(x);
        auto p = pending_slots.find(y);
        if (c == cur_slots.end() || p == pending_slots.end()) return true;
        for (const cuda::SlotAccess& a : c->second) {
          for (const cuda::SlotAccess& b : p->second) {
            if (!slots_.Independent(a, cur_write, b, pending_write)) return true;
          }
        }
      }
    }
    return false;
  }

  /// A loop reusing bytes of buffers pending from before it takes one barrier in front,
  /// rather than one per iteration where the reuse starts.
  bool EnterLoop(const Stmt& loop, State* state) {
    if (!memory_.Aliases(Collect(loop).All(), state->Accessed())) return false;
    state->Barrier();
    return true;
  }

  Stmt RunLoop(const Stmt& body, State* state, const VarRef& var = nullptr) {
    // What one iteration leaves pending reaches the next iteration's start.
    State dry;
    Run(body, &dry);
    cuda::CarrySlots(&dry.read_slots, var);
    cuda::CarrySlots(&dry.write_slots, var);
    State start = *state;
    start.Merge(dry);
    State entry = *state;
    Stmt out = Run(body, &start);
    *state = entry;  // the loop may run zero times
    state->Merge(start);
    return out;
  }

  /// A program's named barrier over other threads than this region's (a constant count).
  bool AcrossRegion(const Stmt& s) const {
    const std::optional<int64_t> n = NamedBarrierThreads(s, kernel_->threads);
    return n && *n >= 0 && *n != named_threads_;
  }

  Stmt Barrier(const Span& span) {
    if (named_threads_ == 0) return Evaluate::Make(Call::Make(DType::Void(), "syncthreads", {}), span);
    return Evaluate::Make(
        Call::Make(DType::Void(), "named_barrier_sync", {MakeInt(barrier_id_), MakeInt(named_threads_)}), span);
  }

  /// `if tx < 32: ... else: ...` (upstream's way of giving warps different work, as in
  /// DeepSeek's mHC kernels): each branch runs on its own range of threads, and threads of
  /// one branch may exchange data through shared memory (a T.Pipelined loop on the else
  /// threads, a reduction's partial results). __syncthreads there would wait for threads
  /// that never arrive, and no barrier at all would race; a branch over whole warps gets
  /// barriers of its own, a named barrier over its threads (the two branches run at the
  /// same time, so each has its own barrier id). Other branches stay one unit, as before
  /// (an error when they hold a barrier: one there would hang or race).
  /// Returns null when `br` is not a branch on a range of the thread index.
  Stmt ThreadRangeBranches(const Stmt& s, const IfThenElse* br, State* state) {
    if (!kernel_->threads || (kernel_->producers_above && named_threads_ == 0)) return Stmt();
    auto is_tx = [&](const Expr& e) {
      const auto* v = As<Var>(e);
      return v == tx_;
    };
    auto then_range = ThreadRangeOf(br->cond, is_tx, kernel_->threads);
    if (!then_range) return Stmt();
    const ThreadRange outer = range_.value_or(ThreadRange{0, kernel_->threads});
    then_range = ThreadRange{std::max(then_range->lo, outer.lo), std::min(then_range->hi, outer.hi)};
    auto else_range = ComplementWithin(*then_range, outer);
    // Accesses of the whole branch against what is pending before and after it, as for
    // any unit; inside, each branch starts with nothing pending.
    bool barrier = Access(Collect(s), state);
    Stmt t = RunOnRange(br->then_case, *then_range, br->span);
    Stmt e = br->else_case;
    if (e && else_range) e = RunOnRange(e, *else_range, br->span);
    if (e && !else_range && ContainsBarrier(e)) {
      TL_USER_ERROR(br->span) << "the else branch of this condition on the thread index needs a barrier among its "
                                 "threads, which are not one range: write the condition as one range of whole warps";
    }
    return WithBarrier(barrier, IfThenElse::Make(br->cond, t, e, br->span));
  }

  Stmt RunOnRange(const Stmt& branch, const ThreadRange& r, const Span& span) {
    const int64_t n = r.hi - r.lo;
    bool whole_warps = r.lo % kWarpSize == 0 && n % kWarpSize == 0 && n > 0;
    if (whole_warps && n == named_threads_) {  // the same threads as ours: our barrier serves
      State fresh;
      return Run(branch, &fresh);
    }
    if (!whole_warps || kernel_->NextFree() > kLastBarrierId) {
      // bar.sync counts whole warps: the branch stays one unit (no barrier inside), which
      // is right unless it holds a barrier of its own (a T.Pipelined loop's).
      if (ContainsBarrier(branch)) {
        TL_USER_ERROR(span) << "the work under this condition on the thread index needs a barrier among its "
                            << n << " thread(s) " << r.lo << ".." << r.hi - 1
                            << " (a T.Pipelined loop, say); barriers synchronize whole warps: use a range of whole "
                               "warps (multiples of 32 threads)"
                            << (whole_warps ? " (this kernel has used all 14 named barriers)" : "");
      }
      return branch;
    }
    BarrierInserter inner(tx_, memory_, kernel_, n, kernel_->Take(), r);
    State fresh;
    return inner.Run(branch, &fresh);
  }

  /// The barriers in `s` (those of its loops counted once).
  static int CountBarriers(const Stmt& s) {
    int n = 0;
    ForEachExpr(s, [&](const Expr& e) { n += HasEffect(As<Call>(e), kBarrier); });
    return n;
  }

  static bool ContainsBarrier(const Stmt& s) {
    bool found = false;
    ForEachExpr(s, [&](const Expr& e) { found |= HasEffect(As<Call>(e), kBarrier); });
    return found;
  }

  Stmt WithBarrier(bool barrier, const Stmt& s) {
    return barrier ? Seq::Make({Barrier(s->span), s}, s->span) : s;
  }

  /// A warp-specialized split: the producer only issues TMA and waits on mbarriers, which
  /// order its writes into the staged tiles; the consumers' own shared-memory traffic
  /// gets barriers over the consumer threads alone.
  Stmt SplitRoles(const IfThenElse* split, State* state) {
    int64_t consumers = 0;
    AsConstInt(As<Call>(split->cond)->args[0], &consumers);
    if (kernel_->consumer_id > kLastBarrierId) {
      TL_USER_ERROR(split->span) << "this kernel uses every named barrier id 1.." << kLastBarrierId
                                 << " itself; its consumer warpgroups need one of their own: leave one free";
    }
    BarrierInserter inner(tx_, memory_, kernel_, consumers, kernel_->consumer_id);
    Stmt consumer = inner.Run(split->else_case, state);
    return IfThenElse::Make(split->cond, split->then_case, consumer, split->span);
  }

  const Var* tx_;
  const Memory& memory_;
  KernelBarriers* kernel_;
  int64_t named_threads_;
  int64_t barrier_id_;
  std::optional<ThreadRange> range_;
  cuda::SlotProver slots_;  ///< which same-buffer accesses are each thread's own slots
};

class KernelVisitor : public IRMutator {
 public:
  explicit KernelVisitor(const Memory& memory) : memory_(memory) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    KernelBarriers kernel;
    int64_t min = -1;
    if (!AsConstInt(op->extent, &kernel.threads) || !AsConstInt(op->min, &min) || min != 0) kernel.threads = 0;
    struct FindSplit : IRVisitor {
      bool found = false;
      void Visit_(const AttrStmt* a) override { found |= a->key == cuda::kWarpSpecializedAttr; }
    } split;
    split.Visit(op->body);
    kernel.producers_above = split.found;
    // Ids of the program's own named barriers (constant ones; a computed id could be any).
    kernel.user_ids = cuda::ProgramNamedBarrierIds(op->body);
    while (kernel.user_ids.count(kernel.consumer_id)) ++kernel.consumer_id;
    kernel.program_copies = ProgramGroupCopies(op->body);
    State state;
    Stmt body = BarrierInserter(op->var.get(), memory_, &kernel).Run(WithoutThreadAliases(op->body, op->var), &state);
    return For::Make(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }

 private:
  const Memory& memory_;
};

}  // namespace

ir::PrimFunc CudaInsertBarriers(const ir::PrimFunc& f, PassContext& ctx) {
  Memory memory(cuda::ReadSharedPlan(f->body));
  return ir::PrimFuncNode::Make(f->name, f->params, KernelVisitor(memory).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-insert-barriers", CudaInsertBarriers);

}  // namespace tl::transform
