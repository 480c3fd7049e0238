// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-partition-parallel": each remaining T.Parallel nest (element-wise work on
/// shared or global memory) is spread over the block's threads, iteration
/// f = it * threads + tx of the flattened nest. Parallel loops nested inside an already
/// partitioned loop run in order within their thread.
#include "copy_lowering.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Partitioner : public IRMutator {
 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kThreadBinding) {
      VarRef prev = tx_;
      int64_t prev_threads = threads_;
      tx_ = op->var;
      AsConstInt(op->extent, &threads_);
      Stmt out = IRMutator::Mutate_(op, self);
      tx_ = prev;
      threads_ = prev_threads;
      return out;
    }
    if (op->annotations.count(cuda::kPartitioned)) {
      ++inside_;
      Stmt out = IRMutator::Mutate_(op, self);
      --inside_;
      return out;
    }
    if (op->for_kind != ForKind::kParallel) return IRMutator::Mutate_(op, self);
    if (inside_ > 0 || !tx_) {
      Stmt body = Mutate(op->body);
      return For::Make(op->var, op->min, op->extent, ForKind::kSerial, body, {}, op->span);
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
    return cuda::PartitionOverThreads(extents, tx_, threads_, op->span, [&](const std::vector<Expr>& idx) {
      return Substitute(body, [&](const Var* v) -> Expr {
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
    bool atomic = call && (call->op == "atomic_add" || call->op == "atomic_max" || call->op == "atomic_min");
    if (!atomic || inside_ > 0 || !tx_) return IRMutator::Mutate_(op, self);
    // Per-thread atomics (their address or value depends on the thread) stay per thread.
    bool per_thread = false;
    const Var* tx = tx_.get();
    ForEachExpr(self, [&](const Expr& e) { per_thread |= e.get() == tx; });
    if (per_thread) return IRMutator::Mutate_(op, self);
    return IfThenElse::Make(EQ(tx_, MakeInt(0, tx_->dtype)), self, nullptr, op->span);
  }

 private:
  VarRef tx_;
  int64_t threads_ = 0;
  int inside_ = 0;
};

}  // namespace

ir::PrimFunc CudaPartitionParallel(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, Partitioner().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-partition-parallel", CudaPartitionParallel);

}  // namespace tl::transform
