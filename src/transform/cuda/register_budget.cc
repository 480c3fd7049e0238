// SPDX-License-Identifier: Apache-2.0
/// \file T.set_max_nreg (see register_budget.h). Upstream's hand warp-specialized kernels
/// give each warpgroup its budget in the branch that selects it (`if tx < 128:
/// T.set_max_nreg(240, 1)`, the producer's `T.set_max_nreg(80, 0)`): ptxas then allocates each
/// branch's registers within its budget rather than the launch bound's (168 for 384 threads).
#include "register_budget.h"

#include <optional>
#include <unordered_set>

#include "../thread_range.h"
#include "pass_helpers.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cuda {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kWarpgroup = 128;

class Budget : public IRMutator {
 public:
  Budget(int64_t threads, const std::string& why_not, PassContext& ctx)
      : threads_(threads), why_not_(why_not), ctx_(ctx) {}

 protected:
  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    if (IsThreadIndex(op->value)) aliases_.insert(op->var.get());
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    // (a condition that is no range on the thread index: its threads are unknown)
    const bool on_thread = UsesVar(op->cond, [&](const Var* v) { return aliases_.count(v) > 0; }) ||
                           ContainsThreadIndexCall(op->cond);
    if (!on_thread) return IRMutator::Mutate_(op, self);
    const RunningThreads outer = running_;
    const auto [then_threads, else_threads] =
        outer.Branches(op->cond, [&](const Expr& e) { return IsThreadIndex(e); }, threads_);
    running_ = then_threads;
    Stmt then_case = Mutate(op->then_case);
    Stmt else_case;
    if (op->else_case) {
      running_ = else_threads;
      else_case = Mutate(op->else_case);
    }
    running_ = outer;
    return IfThenElse::Make(op->cond, then_case, else_case, op->span);
  }
  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    const auto* call = As<Call>(op->value);
    if (!IsIntrinsic(call, TL_INTRINSIC_NAME("set_max_nreg"))) return IRMutator::Mutate_(op, self);
    int64_t count = 0, inc = 0;
    AsConstInt(call->args[0], &count);
    AsConstInt(call->args[1], &inc);
    std::string what = "T.set_max_nreg(" + std::to_string(count) + ", " + std::to_string(inc) + ") at line " +
                       std::to_string(op->span.line);
    std::string why = why_not_;
    const ThreadRange& r = running_.range;
    if (why.empty() && (!running_.known || r.lo % kWarpgroup || r.hi % kWarpgroup || (r.lo == 0 && r.hi >= threads_))) {
      why = "it does not run under a branch on the thread index that selects whole warpgroups of the block";
    }
    if (!why.empty()) {
      ctx_.remarks.push_back(what + ": not applied: " + why);
      return Seq::Make({}, op->span);
    }
    ctx_.remarks.push_back(what + ": threads " + std::to_string(r.lo) + ".." + std::to_string(r.hi - 1) +
                           " " + (inc ? "raise" : "lower") + " their register budget to " + std::to_string(count) +
                           " (setmaxnreg)");
    return CallStmt(inc ? "warpgroup_reg_alloc" : "warpgroup_reg_dealloc", {MakeInt(count)}, op->span);
  }

 private:
  bool IsThreadIndex(const Expr& e) const {
    const auto* v = As<Var>(e);
    if (v) return aliases_.count(v) > 0;
    const auto* call = As<Call>(e);
    int64_t axis = 0;
    return HasEffect(call, kThreadIndex) && (call->args.empty() || (AsConstInt(call->args[0], &axis) && axis == 0));
  }
  static bool ContainsThreadIndexCall(const Expr& e) {
    bool found = false;
    ForEachExpr(e, [&](const Expr& x) { found |= HasEffect(As<Call>(x), kThreadIndex); });
    return found;
  }

  int64_t threads_;
  std::string why_not_;
  PassContext& ctx_;
  std::unordered_set<const Var*> aliases_;
  RunningThreads running_{true, ThreadRange{0, threads_}};
};

}  // namespace

Stmt ApplyRegisterBudget(const Stmt& body, int64_t threads, const std::string& why_not, PassContext& ctx) {
  bool any = false;
  ForEachExpr(body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    any |= IsIntrinsic(call, TL_INTRINSIC_NAME("set_max_nreg"));
  });
  if (!any) return body;
  return Budget(threads, why_not, ctx).Mutate(body);
}

}  // namespace tl::transform::cuda
