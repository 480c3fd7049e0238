// SPDX-License-Identifier: Apache-2.0
/// \file "guard-global-access": element accesses to global tensors that may fall outside
/// the tensor are made safe, as T.copy's are: an out-of-range read gives zero and an
/// out-of-range write is skipped. Accesses proven in range (from loop and block ranges)
/// are left alone. Runs before tile ops are lowered, so it sees only the user's own
/// element accesses (tile-op lowering guards its own). T.annotate_safe_value (an attribute
/// "tl.safe_value" naming a tensor and a value) sets what later out-of-range reads of that
/// tensor give, its T.copy sources too; the attribute is consumed here.
#include <unordered_map>
#include <vector>

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
    size_t facts = assumed_.size();
    for (size_t i = 0; i < op->block_vars.size(); ++i) {
      const VarRef& v = op->block_vars[i];
      an_.BindRange(v.get(), MakeInt(0, v->dtype), op->grid[i]);
      // A grid of a symbolic size (`T.Kernel(seq_len, batch)`): the interval bounds cannot
      // show by < batch, the fact batch - by - 1 >= 0 does (as for loops below).
      if (v->dtype.IsSigned() && op->grid[i]->dtype == v->dtype && !As<IntImm>(op->grid[i])) {
        assumed_.push_back(Expr(v));
        assumed_.push_back(op->grid[i] - Expr(v) - MakeInt(1, v->dtype));
      }
    }
    // T.get_thread_binding(d) is compared through a variable in [0, threads[d]) (see Inlined).
    thread_index_.clear();
    for (size_t d = 0; d < op->threads.size(); ++d) {
      thread_index_.push_back(Var::Make("tid" + std::to_string(d), DType::Int(32)));
      an_.BindRange(thread_index_.back().get(), MakeInt(0), MakeInt(op->threads[d]));
    }
    Stmt out = IRMutator::Mutate_(op, self);
    assumed_.resize(facts);
    return out;
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    an_.BindRange(op->var.get(), op->min, op->extent);
    // The loop's range as facts too: with a symbolic extent (`for j in T.serial(N)`) the
    // interval bounds cannot show j < N, the fact N - j - 1 >= 0 does.
    size_t facts = assumed_.size();
    if (op->var->dtype.IsSigned() && op->min->dtype == op->var->dtype && op->extent->dtype == op->var->dtype) {
      assumed_.push_back(Inlined(Expr(op->var) - op->min));
      assumed_.push_back(Inlined(op->min + op->extent - Expr(op->var) - MakeInt(1, op->var->dtype)));
    }
    Stmt out = IRMutator::Mutate_(op, self);
    assumed_.resize(facts);
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

  /// Let values, so that facts and range conditions about a let's variable and about its
  /// value are compared as one (`i_src = T.min(j + 233, tid + 2)`; T.assume(i_src < M)).
  Stmt Mutate_(const LetStmt* op, const Stmt& self) override {
    lets_[op->var.get()] = op->value;
    return IRMutator::Mutate_(op, self);
  }

  /// T.assume's facts hold from the statement on to the end of its block.
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    size_t facts = assumed_.size();
    Stmt out = IRMutator::Mutate_(op, self);
    assumed_.resize(facts);
    return out;
  }

  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == "tl.assume") {
      TL_ICHECK(op->values.size() == 1) << "tl.assume holds one condition";
      AddFacts(op->values[0]);
      return Seq::Make({}, op->span);
    }
    if (op->key == "tl.safe_value_clear") {  // the end of a T.sblock that set one: the default again
      const auto* first = op->values.size() == 1 ? As<BufferLoad>(op->values[0]) : nullptr;
      TL_ICHECK(first) << "tl.safe_value_clear names a tensor element";
      safe_values_.erase(first->buffer.get());
      return Seq::Make({}, op->span);
    }
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
    // A statement (an atomic update; a T.call_extern, whose value, void or a handle, is not
    // used): its Evaluate is guarded.
    if (e->dtype.IsVoid() || e->dtype == DType::Handle()) {
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
      if (!Holds(lo)) cond = And(cond, lo);
      if (!Holds(hi)) cond = And(cond, hi);
    }
    return cond;
  }

  /// An integer comparison as `e >= 0` (a < b is b - a - 1 >= 0), or null for anything else.
  static Expr AsNonNegative(const Expr& c) {
    const auto* bin = As<Binary>(c);
    // Signed only: unsigned differences wrap, so b - a - 1 >= 0 would say nothing.
    if (!bin || !IsComparison(bin->op) || !bin->a->dtype.IsSigned()) return nullptr;
    Expr one = MakeInt(1, bin->a->dtype);
    switch (bin->op) {
      case BinOp::kGE: return bin->a - bin->b;
      case BinOp::kGT: return bin->a - bin->b - one;
      case BinOp::kLE: return bin->b - bin->a;
      case BinOp::kLT: return bin->b - bin->a - one;
      default: return nullptr;
    }
  }

  /// Records the comparisons of an assumed condition (the operands of its `and`s).
  void AddFacts(const Expr& cond) {
    const auto* bin = As<Binary>(cond);
    if (bin && bin->op == BinOp::kAnd) {
      AddFacts(bin->a);
      AddFacts(bin->b);
      return;
    }
    if (Expr e = AsNonNegative(cond)) assumed_.push_back(an_.Simplify(Inlined(e)));
  }

  /// Whether a range condition is proven by the loop and block ranges, or follows from an
  /// assumed fact f >= 0: the condition g >= 0 holds when g - f is provably non-negative.
  bool Holds(const Expr& cond) {
    if (an_.CanProve(cond) || an_.CanProve(Inlined(cond))) return true;
    Expr g = AsNonNegative(cond);
    if (!g || assumed_.empty()) return false;
    g = an_.Simplify(Inlined(g));
    for (const Expr& f : assumed_) {
      if (f->dtype != g->dtype) continue;
      if (an_.CanProve(GE(g - f, MakeInt(0, g->dtype)))) return true;
    }
    return false;
  }

  /// `e` with let variables replaced by their values (to any depth) and the thread index
  /// by a variable with its range, for the comparisons of facts and range conditions.
  Expr Inlined(const Expr& e) {
    struct Inliner : IRMutator {
      GlobalAccessGuard* self;
      explicit Inliner(GlobalAccessGuard* s) : self(s) {}
      Expr Mutate_(const Var* op, const Expr& e) override {
        auto it = self->lets_.find(op);
        return it == self->lets_.end() ? e : Mutate(it->second);
      }
      Expr Mutate_(const Call* op, const Expr& e) override {
        int64_t d = 0;
        if (HasEffect(op, kThreadIndex) && op->args.size() == 1 && AsConstInt(op->args[0], &d) && d >= 0 &&
            d < static_cast<int64_t>(self->thread_index_.size())) {
          return self->thread_index_[d];
        }
        return IRMutator::Mutate_(op, e);
      }
    };
    return Inliner(this).Mutate(e);
  }

  arith::Analyzer an_;
  std::unordered_map<const Var*, Expr> lets_;  ///< let variable -> value (names are unique)
  std::vector<VarRef> thread_index_;           ///< stands for T.get_thread_binding(d)
  std::vector<Expr> assumed_;  ///< T.assume facts in scope, each as `e >= 0`
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
