// SPDX-License-Identifier: Apache-2.0
/// \file "normalize-role-branches": in a kernel that programs its barriers on a block of two
/// warpgroups, `if tid >= 128: P else: C` (upstream's hand warp-specialized kernels, with
/// `tid = T.get_thread_binding()`) becomes `with T.ws(1): P` and `with T.ws(0): C`, which is
/// what it means: the projection onto warpgroups (cuda-explicit-warp-specialize) and the
/// CPU's lockstep emulation then handle one spelling. Only a branch with an else whose
/// condition selects exactly one warpgroup; each rewrite is a remark.
#include <unordered_set>

#include "explicit_barriers.h"
#include "thread_range.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kWarpgroup = 128;

bool IsZero(const Expr& e) {
  int64_t v = -1;
  return AsConstInt(e, &v) && v == 0;
}

/// Whether `e` is the thread index (x): the intrinsic itself.
bool IsThreadIndexCall(const Expr& e) {
  const auto* call = As<Call>(e);
  return HasEffect(call, kThreadIndex) && (call->args.empty() || IsZero(call->args[0]));
}

class RoleBranches : public IRMutator {
 public:
  bool changed = false;

 protected:
  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    if (IsThreadIndexCall(op->value)) thread_lets_.insert(op->var.get());
    return IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    if (!op->else_case || WsMarker(op->then_case)) return IRMutator::Mutate_(op, self);
    auto is_tx = [&](const Expr& e) {
      const auto* v = As<Var>(e);
      return (v && thread_lets_.count(v) > 0) || IsThreadIndexCall(e);
    };
    auto range = ThreadRangeOf(op->cond, is_tx, 2 * kWarpgroup);
    if (!range || range->hi - range->lo != kWarpgroup || range->lo % kWarpgroup) return IRMutator::Mutate_(op, self);
    const int64_t then_group = range->lo / kWarpgroup;
    auto marked = [&](int64_t g, const Stmt& body) {
      return Seq::Make({AttrStmt::Make(kWsAttr, {MakeInt(g, DType::Int(32))}, op->span), Mutate(body)}, op->span);
    };
    changed = true;
    // the other warpgroup's range, as a comparison (what thread-range analysis reads)
    Expr tx = Call::Make(DType::Int(32), "thread_binding", {MakeInt(0)});
    Expr other = then_group == 1 ? LT(tx, MakeInt(kWarpgroup)) : GE(tx, MakeInt(kWarpgroup));
    return Seq::Make({IfThenElse::Make(op->cond, marked(then_group, op->then_case), nullptr, op->span),
                      IfThenElse::Make(other, marked(1 - then_group, op->else_case), nullptr, op->span)},
                     op->span);
  }

 private:
  std::unordered_set<const Var*> thread_lets_;
};

class KernelVisitor : public IRMutator {
 public:
  explicit KernelVisitor(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    if (op->threads.size() != 1 || op->threads[0] != 2 * kWarpgroup || !ProgramsBarriers(op->body)) return self;
    RoleBranches roles;
    Stmt body = roles.Mutate(op->body);
    if (!roles.changed) return self;
    ctx_.remarks.push_back("kernel at line " + std::to_string(op->span.line) +
                           ": its branch on the thread index over one warpgroup and the other runs as T.ws blocks");
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, body, op->span);
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc NormalizeRoleBranches(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = KernelVisitor(ctx).Mutate(f->body);
  if (body == f->body) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("normalize-role-branches", NormalizeRoleBranches);

}  // namespace tl::transform
