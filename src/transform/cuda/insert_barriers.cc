// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-insert-barriers": __syncthreads exactly where shared memory needs one.
///
/// Walks the kernel's statement sequences tracking the shared buffers read and written
/// since the last barrier. A statement that reads what is pending as written, or writes
/// what is pending as read or written, gets a barrier in front of it (read-after-write,
/// write-after-read, write-after-write between threads). Loops carry what their body
/// leaves pending around the back edge. Work spread over threads (anything that mentions
/// the thread index) is one unit: barriers go around it, never inside, so no barrier is
/// ever under a thread-dependent branch (see HasBlockLevelWork). cp.async copies are ordered by the pipeline's
/// own wait and barrier, so they are not tracked here.
#include <unordered_set>

#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

using BufferSet = std::unordered_set<const BufferNode*>;

struct State {
  BufferSet reads, writes;
  void Merge(const State& o) {
    reads.insert(o.reads.begin(), o.reads.end());
    writes.insert(o.writes.begin(), o.writes.end());
  }
};

bool Intersects(const BufferSet& a, const BufferSet& b) {
  for (const BufferNode* x : a) {
    if (b.count(x)) return true;
  }
  return false;
}

bool IsShared(const Buffer& b) { return b->scope == Scope::kShared; }

/// Shared reads and writes of one unit statement.
class AccessCollector : public IRVisitor {
 public:
  BufferSet reads, writes;

 protected:
  void Visit_(const BufferLoad* op) override {
    if (IsShared(op->buffer)) reads.insert(op->buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    if (IsShared(op->buffer)) writes.insert(op->buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const Call* op) override {
    if (op->op == "cp_async") return;
    bool atomic = op->op == "atomic_add" || op->op == "atomic_max" || op->op == "atomic_min";
    if ((op->op == "vec_copy" || op->op == "vec_zero" || atomic) && !op->args.empty()) {
      if (const auto* addr = As<Call>(op->args[0])) {
        if (const auto* load = As<BufferLoad>(addr->args[0])) {
          if (IsShared(load->buffer)) {
            writes.insert(load->buffer.get());
            if (atomic) reads.insert(load->buffer.get());
          }
          for (const Expr& i : load->indices) Visit(i);
        }
      }
      for (size_t k = 1; k < op->args.size(); ++k) Visit(op->args[k]);
      return;
    }
    IRVisitor::Visit_(op);
  }
};

/// Whether a statement holds work done by the whole block together (thread-partitioned
/// loops, GEMMs, barriers, async copies): only such statements are looked inside.
/// Anything else (per-thread loops over registers, thread-dependent branches) is a unit.
bool HasBlockLevelWork(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit_(const For* op) override {
      if (op->annotations.count("tl.thread_partitioned")) found = true;
      if (!found) IRVisitor::Visit_(op);
    }
    void Visit_(const Call* op) override {
      if (op->op == "gemm_ss" || op->op == "gemm_rs" || op->op == "syncthreads" || op->op.rfind("cp_async", 0) == 0) {
        found = true;
      }
    }
  } f;
  f.Visit(s);
  return f.found;
}

bool MentionsExpr(const Expr& e, const Var* v) {
  bool found = false;
  struct V : IRVisitor {
    const Var* target;
    bool* found;
    void Visit_(const Var* op) override {
      if (op == target) *found = true;
    }
  } vis;
  vis.target = v;
  vis.found = &found;
  vis.Visit(e);
  return found;
}

bool IsBarrier(const Stmt& s) {
  const auto* ev = As<Evaluate>(s);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  return call && call->op == "syncthreads";
}

Stmt Barrier(const Span& span) {
  return Evaluate::Make(Call::Make(DType::Void(), "syncthreads", {}), span);
}

class BarrierInserter {
 public:
  explicit BarrierInserter(const Var* tx) : tx_(tx) {}

  /// Rewrites `s` starting from `state`; leaves in `state` what is pending afterwards.
  Stmt Run(const Stmt& s, State* state) {
    if (!s) return s;
    if (IsBarrier(s)) {
      *state = State{};
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
    if (const auto* loop = As<For>(s)) {
      if (loop->for_kind != ForKind::kThreadBinding && !loop->annotations.count("tl.thread_partitioned") &&
          HasBlockLevelWork(s) && !MentionsExpr(loop->extent, tx_)) {
        return RunLoop(loop, state);
      }
    }
    if (const auto* w = As<While>(s)) {
      if (HasBlockLevelWork(s) && !MentionsExpr(w->cond, tx_)) {
        State entry = *state, dry = State{};
        Run(w->body, &dry);
        State start = entry;
        start.Merge(dry);
        Stmt body = Run(w->body, &start);
        *state = entry;
        state->Merge(start);
        return While::Make(w->cond, body, w->span);
      }
    }
    if (const auto* br = As<IfThenElse>(s)) {
      if (HasBlockLevelWork(s) && !MentionsExpr(br->cond, tx_)) {
        State then_state = *state, else_state = *state;
        Stmt t = Run(br->then_case, &then_state);
        Stmt e = Run(br->else_case, &else_state);
        // The condition is evaluated before either branch: its reads come first.
        *state = then_state;
        state->Merge(else_state);
        return IfThenElse::Make(br->cond, t, e, br->span);
      }
    }
    if (const auto* tb = As<For>(s)) {
      if (tb->for_kind == ForKind::kThreadBinding) {
        Stmt body = Run(tb->body, state);
        return For::Make(tb->var, tb->min, tb->extent, tb->for_kind, body, tb->annotations, tb->span);
      }
    }
    // A unit: barrier in front of it when it conflicts with what is pending.
    AccessCollector acc;
    acc.Visit(s);
    bool conflict = Intersects(acc.reads, state->writes) || Intersects(acc.writes, state->reads) ||
                    Intersects(acc.writes, state->writes);
    if (conflict) *state = State{};
    state->reads.insert(acc.reads.begin(), acc.reads.end());
    state->writes.insert(acc.writes.begin(), acc.writes.end());
    if (!conflict) return s;
    return Seq::Make({Barrier(s->span), s}, s->span);
  }

 private:
  Stmt RunLoop(const For* loop, State* state) {
    // What one iteration leaves pending reaches the next iteration's start.
    State dry;
    Run(loop->body, &dry);
    State start = *state;
    start.Merge(dry);
    State entry = *state;
    Stmt body = Run(loop->body, &start);
    *state = entry;  // the loop may run zero times
    state->Merge(start);
    return For::Make(loop->var, loop->min, loop->extent, loop->for_kind, body, loop->annotations, loop->span);
  }

  const Var* tx_;
};

class KernelVisitor : public IRMutator {
 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    State state;
    Stmt body = BarrierInserter(op->var.get()).Run(op->body, &state);
    return For::Make(op->var, op->min, op->extent, op->for_kind, body, op->annotations, op->span);
  }
};

}  // namespace

ir::PrimFunc CudaInsertBarriers(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, KernelVisitor().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-insert-barriers", CudaInsertBarriers);

}  // namespace tl::transform
