// SPDX-License-Identifier: Apache-2.0
/// \file "guard-global-access": element accesses to global tensors that may fall outside
/// the tensor are made safe, as T.copy's are: an out-of-range read gives zero and an
/// out-of-range write is skipped. Accesses proven in range (from loop and block ranges)
/// are left alone. Runs before tile ops are lowered, so it sees only the user's own
/// element accesses (tile-op lowering guards its own). T.annotate_safe_value (an attribute
/// "tl.safe_value" naming a tensor and a value) sets what later out-of-range reads of that
/// tensor give, its T.copy sources too; the attribute is consumed here.
#include <unordered_map>

#include "tl/arith/simplify.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"
#include "region_util.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class GlobalAccessGuard : public IRMutator {
 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    for (size_t i = 0; i < op->block_vars.size(); ++i) {
      an_.BindRange(op->block_vars[i].get(), MakeInt(0, op->block_vars[i]->dtype), op->grid[i]);
    }
    return IRMutator::Mutate_(op, self);
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    an_.BindRange(op->var.get(), op->min, op->extent);
    Stmt out = IRMutator::Mutate_(op, self);
    an_.Unbind(op->var.get());
    return out;
  }

  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    Expr e = IRMutator::Mutate_(op, self);
    if (op->buffer->scope != Scope::kGlobal) return e;
    Expr cond = Unproven(op->buffer, As<BufferLoad>(e)->indices);
    if (!cond) return e;
    auto safe = safe_values_.find(op->buffer.get());
    if (safe != safe_values_.end()) return Select::Make(cond, e, safe->second);
    Expr zero = e->dtype.IsFloat() ? MakeFloat(0, e->dtype) : MakeInt(0, e->dtype);
    return Select::Make(cond, e, zero);
  }

  /// A T.copy from a tensor with a safe value: a loop nest whose out-of-range reads give it
  /// (the copy lowerings pad with 0), so it loses vectorized and TMA copies, not the value.
  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    auto safe = safe_values_.find(op->src.buffer.get());
    if (op->src.buffer->scope != Scope::kGlobal || safe == safe_values_.end()) return IRMutator::Mutate_(op, self);
    return CopyAsLoops(op, safe->second);
  }

  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key != "tl.safe_value") return IRMutator::Mutate_(op, self);
    const auto* first = op->values.size() == 2 ? As<BufferLoad>(op->values[0]) : nullptr;
    TL_ICHECK(first) << "tl.safe_value names a tensor element and a value";
    safe_values_[first->buffer.get()] = op->values[1];
    return Seq::Make({}, op->span);
  }

  /// An element whose address a call takes (an atomic, T.atomic_load): the element is not
  /// replaced by a select; the call is guarded instead (see Mutate_(Evaluate)).
  Expr Mutate_(const Call* op, const Expr& self) override {
    const auto* load = HasEffect(op, kAddress) && op->args.size() == 1 ? As<BufferLoad>(op->args[0]) : nullptr;
    if (load && load->buffer->scope == Scope::kGlobal) {
      std::vector<Expr> idx;
      for (const Expr& i : load->indices) idx.push_back(Mutate(i));
      if (Expr cond = Unproven(load->buffer, idx)) pending_ = And(pending_, cond);
      return Call::Make(op->dtype, op->op, {BufferLoad::Make(load->buffer, idx)});
    }
    Expr saved = pending_;
    pending_ = nullptr;
    Expr e = IRMutator::Mutate_(op, self);
    Expr cond = pending_;
    pending_ = saved;
    if (!cond) return e;
    if (e->dtype.IsVoid()) {  // a statement (an atomic update): its Evaluate is guarded
      stmt_cond_ = And(stmt_cond_, cond);
      return e;
    }
    // A value (the old value of an atomic): out of range it neither updates nor reads.
    Expr zero = e->dtype.IsFloat() ? MakeFloat(0, e->dtype) : MakeInt(0, e->dtype);
    return Select::Make(cond, e, zero);
  }

  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    Expr saved = stmt_cond_;
    stmt_cond_ = nullptr;
    Stmt s = IRMutator::Mutate_(op, self);
    Expr cond = stmt_cond_;
    stmt_cond_ = saved;
    return cond ? IfThenElse::Make(cond, s, nullptr, op->span) : s;
  }

  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    Stmt s = IRMutator::Mutate_(op, self);
    if (op->buffer->scope != Scope::kGlobal) return s;
    Expr cond = Unproven(op->buffer, As<BufferStore>(s)->indices);
    return cond ? IfThenElse::Make(cond, s, nullptr, op->span) : s;
  }

 private:
  /// The range conditions that cannot be proven, or null when all can.
  Expr Unproven(const Buffer& b, const std::vector<Expr>& idx) {
    Expr cond;
    for (size_t i = 0; i < idx.size(); ++i) {
      Expr lo = GE(idx[i], MakeInt(0, idx[i]->dtype));
      Expr hi = LT(idx[i], b->shape[i]);
      if (!an_.CanProve(lo)) cond = And(cond, lo);
      if (!an_.CanProve(hi)) cond = And(cond, hi);
    }
    return cond;
  }

  arith::Analyzer an_;
  Expr pending_;    ///< range conditions of the addresses taken inside the current call
  std::unordered_map<const BufferNode*, Expr> safe_values_;  ///< T.annotate_safe_value, per tensor
  Expr stmt_cond_;  ///< conditions the current Evaluate must be guarded by
};

}  // namespace

ir::PrimFunc GuardGlobalAccess(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = GlobalAccessGuard().Mutate(f->body);
  return body == f->body ? f : ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("guard-global-access", GuardGlobalAccess);

}  // namespace tl::transform
