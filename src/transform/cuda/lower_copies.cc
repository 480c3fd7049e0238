// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-copies": T.copy between global and shared memory as vectorized,
/// thread-partitioned loops (see copy_lowering.h). Copies it cannot vectorize are left
/// for the generic loop lowering. Under a condition selecting a range of threads
/// (thread_range.h) a copy is spread over those threads; under another thread-dependent
/// condition it is refused.
#include <unordered_set>

#include "../thread_range.h"
#include "copy_lowering.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class CopyLowerer : public IRMutator {
 public:
  explicit CopyLowerer(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kThreadBinding) return IRMutator::Mutate_(op, self);
    VarRef prev = tx_, prev_part = part_tx_;
    int64_t prev_threads = threads_, prev_part_threads = part_threads_;
    tx_ = part_tx_ = op->var;
    AsConstInt(op->extent, &threads_);
    part_threads_ = threads_;
    Stmt out = IRMutator::Mutate_(op, self);
    tx_ = prev;
    part_tx_ = prev_part;
    threads_ = prev_threads;
    part_threads_ = prev_part_threads;
    return out;
  }

  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    if (UsesVar(op->value, [&](const Var* v) { return IsThreadVar(v); })) thread_vars_.insert(op->var.get());
    if (const auto* v = As<Var>(op->value); v && (v == tx_.get() || aliases_.count(v))) aliases_.insert(op->var.get());
    return IRMutator::Mutate_(op, self);
  }

  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    if (!tx_ || !UsesVar(op->cond, [&](const Var* v) { return IsThreadVar(v); })) {
      return IRMutator::Mutate_(op, self);
    }
    auto is_index = [&](const Expr& e) {
      const auto* v = As<Var>(e);
      return v && (v == tx_.get() || aliases_.count(v) > 0);
    };
    auto range = ThreadRangeOf(op->cond, is_index, threads_);
    std::optional<ThreadRange> other;
    if (range) other = ComplementRange(*range, threads_);
    Stmt then_case = InRange(range, op->then_case);
    Stmt else_case = op->else_case ? InRange(other, op->else_case) : nullptr;
    return IfThenElse::Make(op->cond, then_case, else_case, op->span);
  }

  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    TL_ICHECK(tx_) << "copy outside a thread binding";
    sub_used_ |= part_tx_.get() != tx_.get();
    Stmt s = cuda::LowerCopyPartitioned(op, part_tx_, part_threads_, false, ctx_);
    if (s && unranged_ > 0) {
      TL_USER_ERROR(op->span) << "T.copy under a condition on the thread index that does not select a range of "
                                 "threads (tx < c, tx >= c, and their conjunctions): the copy is shared by all "
                                 "threads, so only part of it would run; test a range, or move it out";
    }
    return s ? s : self;
  }

 private:
  bool IsThreadVar(const Var* v) const { return v == tx_.get() || thread_vars_.count(v) > 0; }

  /// A branch taken by the threads of `range` (an unknown subset when nullopt); see the
  /// Partitioner of cuda-partition-parallel, which does the same for T.Parallel nests.
  Stmt InRange(const std::optional<ThreadRange>& range, const Stmt& body) {
    VarRef prev = part_tx_;
    int64_t prev_threads = part_threads_;
    int prev_unranged = unranged_;
    bool narrow = range && part_tx_.get() == tx_.get() && part_threads_ == threads_;
    VarRef sub;
    if (narrow && range->lo > 0) sub = Var::Make(tx_->name + "_in_range", tx_->dtype);
    if (narrow) {
      if (sub) part_tx_ = sub;
      part_threads_ = std::max<int64_t>(range->hi - range->lo, 1);
    } else if (!range) {
      ++unranged_;
    }
    bool prev_used = sub_used_;
    sub_used_ = false;
    Stmt out = Mutate(body);
    if (!sub_used_) sub = nullptr;  // nothing was spread over the range: no let
    sub_used_ = prev_used;
    part_tx_ = prev;
    part_threads_ = prev_threads;
    unranged_ = prev_unranged;
    if (sub) {
      Stmt let = LetStmt::Make(sub, Binary::Make(BinOp::kSub, tx_, MakeInt(range->lo, tx_->dtype)), body->span);
      out = Seq::Make({let, out}, body->span);
    }
    return out;
  }

  PassContext& ctx_;
  VarRef tx_, part_tx_;
  int64_t threads_ = 0, part_threads_ = 0;
  int unranged_ = 0;
  bool sub_used_ = false;  ///< a copy was spread over a range's own thread numbers
  std::unordered_set<const Var*> thread_vars_, aliases_;
};

}  // namespace

ir::PrimFunc CudaLowerCopies(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, CopyLowerer(ctx).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-lower-copies", CudaLowerCopies);

}  // namespace tl::transform
