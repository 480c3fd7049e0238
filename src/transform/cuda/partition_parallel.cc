// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-partition-parallel": each remaining T.Parallel nest (element-wise work on
/// shared or global memory) is spread over the block's threads, iteration
/// f = it * threads + tx of the flattened nest. Parallel loops nested inside an already
/// partitioned loop run in order within their thread.
///
/// Under a condition that selects a range of threads (`if tx < 128:`; thread_range.h) a
/// nest is spread over those threads only, numbered from the range's first; under any
/// other thread-dependent condition a nest is refused (only part of it would run).
#include "../atomic_updates.h"
#include "copy_lowering.h"
#include "parallel_copy_groups.h"
#include "thread_share.h"
#include <algorithm>
#include <functional>
#include <unordered_set>

#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Partitioner : public IRMutator {
 public:
  explicit Partitioner(PassContext& ctx)
      : ctx_(ctx),
        group_copies_(cuda::ConfigOn(ctx, "tl.vectorize_parallel_copies", /*default_on=*/true)),
        group_elementwise_(cuda::ConfigOn(ctx, "tl.vectorize_parallel_elementwise", /*default_on=*/true)) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kThreadBinding) {
      cuda::ThreadShare saved = share_;
      int64_t threads = 0;
      AsConstInt(op->extent, &threads);
      share_.Bind(op->var, threads);
      auto saved_storage = thread_storage_;
      auto saved_lets = thread_lets_;
      NoteThreadStorage(op->body);
      Stmt out = IRMutator::Mutate_(op, self);
      share_ = saved;
      thread_storage_ = saved_storage;
      thread_lets_ = saved_lets;
      return out;
    }
    if (op->annotations.count(cuda::kPartitioned) || op->annotations.count(cuda::kRegisterWalk)) {
      ++inside_;
      Stmt out = IRMutator::Mutate_(op, self);
      --inside_;
      return out;
    }
    if (op->for_kind != ForKind::kParallel) return IRMutator::Mutate_(op, self);
    if (inside_ > 0 || !share_.Bound() || WalksLocalStorage(op)) {
      // Already inside a thread's share, or a walk over per-thread storage (T.alloc_local,
      // T.alloc_var, e.g. a T.copy into a thread's own registers): every thread runs it all.
      Stmt body = Mutate(op->body);
      return For::Make(op->var, op->min, op->extent, ForKind::kSerial, body, {}, op->span);
    }
    if (share_.Unranged()) {
      TL_USER_ERROR(op->span) << "T.Parallel under a condition on the thread index that does not select a range "
                                 "of threads (tx < c, tx >= c, and their conjunctions): the loop's iterations "
                                 "are shared by all threads, so only part of it would run; test a range, or "
                                 "move the loop out of the condition";
    }
    // Collect the nest of directly nested parallel loops.
    std::vector<const For*> loops = {op};
    while (const auto* inner = As<For>(loops.back()->body)) {
      if (inner->for_kind != ForKind::kParallel) break;
      loops.push_back(inner);
    }
    ++inside_;
    Stmt body = Mutate(loops.back()->body);
    --inside_;
    std::vector<Expr> extents;
    for (const For* l : loops) extents.push_back(l->extent);
    // An element copy along the innermost loop: groups of k elements per thread
    // (parallel_copy_groups.h), each one 16-byte access after cuda-vectorize-loops.
    // Not for a copy smaller than a group per thread: it gains little, and reading a shared
    // tile in groups can cost a barrier that the element mapping did not need.
    const For* inner = loops.back();
    int64_t elements = 1;
    for (const Expr& e : extents) {
      int64_t n = 0;
      elements = AsConstInt(e, &n) ? elements * n : 0;
    }
    int64_t k = group_copies_ ? cuda::ElementCopyGroup(inner, body) : 0;
    // ... or an element-wise computation along it, through registers k elements at a time
    cuda::ElementwiseGroups elementwise;
    if (!k && group_elementwise_) k = (elementwise = cuda::ElementwiseGroup(inner, body)).k;
    if (elements < k * share_.SpreadThreads()) k = 0;
    if (k) {
      int64_t n = 0;
      AsConstInt(inner->extent, &n);
      extents.back() = MakeInt(n / k, inner->extent->dtype);
      ctx_.remarks.push_back("T.Parallel" + (op->span.Defined() ? " at line " + std::to_string(op->span.line) : "") +
                             (elementwise.k ? ": element-wise, " : ": an element copy, ") + std::to_string(k) +
                             " consecutive elements per thread at a time (" +
                             (elementwise.k ? "tl.vectorize_parallel_elementwise)" : "tl.vectorize_parallel_copies)"));
    }
    const VarRef& tx = share_.Spread();
    return cuda::PartitionOverThreads(extents, tx, share_.SpreadThreads(), op->span, [&](const std::vector<Expr>& idx) {
      const Expr g = k ? Cast::Make(inner->var->dtype, idx.back()) : Expr();
      const Stmt grouped = !k          ? body
                           : elementwise.k ? cuda::GroupedElementwise(inner, elementwise, g)
                                         : cuda::GroupedCopy(inner, body, k, g);
      return Substitute(grouped, [&](const Var* v) -> Expr {
        for (size_t k = 0; k < loops.size(); ++k) {
          if (loops[k]->var.get() == v) return Cast::Make(v->dtype, loops[k]->min + idx[k]);
        }
        return nullptr;
      });
    });
  }

  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    // An element atomic outside any parallel loop is one update, as on the CPU: one thread
    // performs it, not every thread of the block.
    const auto* call = As<Call>(op->value);
    bool atomic = call && IsAtomicUpdate(call->op);
    if (!atomic || inside_ > 0 || !share_.Bound()) return IRMutator::Mutate_(op, self);
    // Per-thread atomics (their address or value depends on the thread) stay per thread.
    // So do atomics under a thread-dependent branch: each thread that takes it updates.
    bool per_thread = thread_branch_ > 0 || PerThread(op->value);
    if (per_thread) return IRMutator::Mutate_(op, self);
    return IfThenElse::Make(EQ(share_.Tx(), MakeInt(0, share_.Tx()->dtype)), self, nullptr, op->span);
  }

  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    share_.NoteLet(op);
    if (inside_ == 0 && share_.Bound() && thread_branch_ == 0 && HasAtomicUpdate(op->value) && !PerThread(op->value)) {
      RefuseBlockLevelAtomicLet(op->span);
    }
    return IRMutator::Mutate_(op, self);
  }

  /// P[i] = T.atomic_add(B[0], v, return_prev=True) outside parallel loops: one update, as on
  /// the CPU, so one thread runs it (a store to per-thread storage would leave the other
  /// threads without the value: refused).
  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    if (inside_ > 0 || !share_.Bound() || thread_branch_ > 0 || !HasAtomicUpdate(op->value)) {
      return IRMutator::Mutate_(op, self);
    }
    bool per_thread = PerThread(op->value);
    for (const Expr& i : op->indices) per_thread = per_thread || PerThread(i);
    if (per_thread) return IRMutator::Mutate_(op, self);
    if (op->buffer->scope == Scope::kLocal || op->buffer->scope == Scope::kVar) {
      TL_USER_ERROR(op->span) << "the old value of an atomic (return_prev=True) stored into per-thread "
                              << op->buffer->name << " outside T.Parallel: on CUDA one thread performs the "
                              << "update, so the others would not have it; store it into a shared or global tensor";
    }
    return IfThenElse::Make(EQ(share_.Tx(), MakeInt(0, share_.Tx()->dtype)), self, nullptr, op->span);
  }

  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    bool on_thread = OnThread(op->cond);
    // (for the atomics: a condition on a per-thread variable that holds thread-dependent
    // data, such as a bin read from the thread's own element, is per thread too)
    bool per_thread = PerThread(op->cond);  // (includes on_thread)
    thread_branch_ += per_thread;
    Stmt out = on_thread && inside_ == 0 ? share_.Branches(op, [&](const Stmt& s) { return Mutate(s); })
                                         : IRMutator::Mutate_(op, self);
    thread_branch_ -= per_thread;
    return out;
  }

 private:
  /// Read-modify-write atomics (an update that must happen once); atomic_store too, whose
  /// repeats would be harmless but are narrowed alike.
  static bool IsAtomicUpdate(const std::string& op) {
    return HasEffect(op, kAtomicUpdate);
  }

  /// Whether `e` depends on the thread index (directly or through a let bound to it).
  bool OnThread(const Expr& e) const { return share_.OnThread(e); }

  /// OnThread, or reading a per-thread variable (T.alloc_var, local storage) or a let that
  /// holds thread-dependent values (NoteThreadStorage).
  bool PerThread(const Expr& e) const {
    if (OnThread(e) || UsesVar(e, [&](const Var* v) { return thread_lets_.count(v) > 0; })) return true;
    bool found = false;
    ForEachLoad(e, [&](const BufferLoad* load) { found = found || thread_storage_.count(load->buffer.get()) > 0; });
    return found;
  }

  template <typename F>
  static void ForEachLoad(const Expr& e, F&& f) {
    struct V : IRVisitor {
      F* f;
      void Visit_(const BufferLoad* op) override {
        (*f)(op);
        IRVisitor::Visit_(op);
      }
    } v;
    v.f = &f;
    v.Visit(e);
  }

  /// The per-thread variables and lets of a thread-binding body that hold thread-dependent
  /// values: assigned from the thread index, from one another, from loads indexed by them,
  /// or under a branch or loop that depends on them (to a fixpoint). Upstream's radix top-k
  /// keeps each thread's bin in a T.alloc_var and adds to its histogram slot.
  void NoteThreadStorage(const Stmt& body) {
    struct Taint : IRVisitor {
      Partitioner* self;
      int branch = 0;
      bool changed = false;
      void Visit_(const LetStmt* op) override {
        if (!self->thread_lets_.count(op->var.get()) && self->PerThread(op->value)) {
          self->thread_lets_.insert(op->var.get());
          changed = true;
        }
        IRVisitor::Visit_(op);
      }
      void Visit_(const BufferStore* op) override {
        const Buffer& b = op->buffer;
        if ((b->scope == Scope::kVar || b->scope == Scope::kLocal) && !self->thread_storage_.count(b.get())) {
          bool dep = branch > 0 || self->PerThread(op->value);
          for (const Expr& i : op->indices) dep = dep || self->PerThread(i);
          if (dep) {
            self->thread_storage_.insert(b.get());
            changed = true;
          }
        }
        IRVisitor::Visit_(op);
      }
      void Visit_(const Allocate* op) override {  // T.alloc_var(dtype, init): the initial value
        const Buffer& b = op->buffer;
        if (op->init && (b->scope == Scope::kVar || b->scope == Scope::kLocal) && !self->thread_storage_.count(b.get()) &&
            (branch > 0 || self->PerThread(op->init))) {
          self->thread_storage_.insert(b.get());
          changed = true;
        }
        IRVisitor::Visit_(op);
      }
      void Visit_(const IfThenElse* op) override {
        Visit(op->cond);
        bool dep = self->PerThread(op->cond);
        branch += dep;
        Visit(op->then_case);
        if (op->else_case) Visit(op->else_case);
        branch -= dep;
      }
      void Visit_(const For* op) override {
        bool dep = self->PerThread(op->min) || self->PerThread(op->extent);
        branch += dep;
        IRVisitor::Visit_(op);
        branch -= dep;
      }
    } taint;
    taint.self = this;
    for (int round = 0; round < 8; ++round) {
      taint.changed = false;
      taint.Visit(body);
      if (!taint.changed) break;
    }
  }

  /// Whether the nest indexes per-thread storage by one of its own loop variables.
  static bool WalksLocalStorage(const For* op) {
    std::vector<const Var*> vars;
    for (const For* l = op; l && l->for_kind == ForKind::kParallel; l = As<For>(l->body)) vars.push_back(l->var.get());
    bool found = false;
    auto check = [&](const Buffer& b, const std::vector<Expr>& idx) {
      if (b->scope != Scope::kLocal && b->scope != Scope::kVar) return;
      for (const Expr& i : idx) {
        found = found || UsesVar(i, [&](const Var* v) { return std::count(vars.begin(), vars.end(), v) > 0; });
      }
    };
    struct Finder : IRVisitor {
      std::function<void(const Buffer&, const std::vector<Expr>&)> check;
      void Visit_(const BufferLoad* op) override {
        check(op->buffer, op->indices);
        IRVisitor::Visit_(op);
      }
      void Visit_(const BufferStore* op) override {
        check(op->buffer, op->indices);
        IRVisitor::Visit_(op);
      }
    } finder;
    finder.check = check;
    finder.Visit(Stmt(op->body));
    return found;
  }

  PassContext& ctx_;
  const bool group_copies_;        ///< tl.vectorize_parallel_copies
  const bool group_elementwise_;  ///< tl.vectorize_parallel_elementwise
  cuda::ThreadShare share_;  ///< the thread index, and the threads work is spread over here
  int inside_ = 0;
  int thread_branch_ = 0;  ///< depth of branches whose condition depends on the thread
  std::unordered_set<const BufferNode*> thread_storage_;  ///< per-thread variables of thread-dependent values
  std::unordered_set<const Var*> thread_lets_;            ///< lets of thread-dependent values
};

}  // namespace

ir::PrimFunc CudaPartitionParallel(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, Partitioner(ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-partition-parallel", CudaPartitionParallel);

}  // namespace tl::transform
