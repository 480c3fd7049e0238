// SPDX-License-Identifier: Apache-2.0
/// \file "privatize-reducers": a T.alloc_reducer tile whose updates all come from T.Parallel
/// nests of one shape, each update indexing the reducer by some of the nest's variables
/// (`o[i] += a[i, j] * x[j]` over T.Parallel(M, N)), is accumulated per element of the nest in
/// a register fragment of the nest's shape instead of by atomics on the shared tile: each
/// thread adds into the registers it owns (the fragment takes the layout of the tiles the loop
/// reads), and T.finalize_reducer combines them once, as a T.reduce along the dimension the
/// reducer does not index (clear=False: onto the reducer's initial value). Any other pattern
/// keeps the front end's atomic updates, and the remarks say why.
///
/// The front end marks a reducer after its allocation ("tl.reducer", the address of its first
/// element) and each T.finalize_reducer ("tl.reducer_finalize", before its barrier); updates
/// are AtomicOps on one element of it and initializations FillOps of the whole tile. The
/// markers are removed here, whatever the decision.
#include <string>
#include <unordered_map>
#include <vector>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kMaxRegistersPerThread = 64;  ///< per reducer: more would spill

const BufferNode* MarkedBuffer(const AttrStmt* op) {
  if (op->values.size() != 1) return nullptr;
  const auto* addr = As<Call>(op->values[0]);
  const auto* load = addr && HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load ? load->buffer.get() : nullptr;
}

/// What is known of one reducer after the survey.
struct ReducerPlan {
  Buffer buffer;
  std::string unfit;               ///< why it keeps its atomics ("" while it may be privatized)
  bool has_update = false;
  bool finalized = false;          ///< a T.finalize_reducer seen (in program order)
  AtomicKind kind = AtomicKind::kAdd;
  std::vector<int64_t> extents;    ///< the update nests' extents, outermost first
  std::vector<size_t> positions;   ///< nest position of each reducer dimension
  Buffer partial;                  ///< the register fragment, once decided
  int reduced_dim = -1;
};

/// Finds the reducers and checks every access to them.
class Survey : public IRVisitor {
 public:
  std::unordered_map<const BufferNode*, ReducerPlan> plans;
  int64_t threads = 0;

  void Visit_(const KernelLaunch* op) override {
    int64_t t = 1;
    for (int64_t x : op->threads) t *= x;
    threads = t;
    IRVisitor::Visit_(op);
  }
  void Visit_(const AttrStmt* op) override {
    const BufferNode* b = MarkedBuffer(op);
    if (!b) return;
    if (op->key == "tl.reducer") {
      plans[b].buffer = As<BufferLoad>(As<Call>(op->values[0])->args[0])->buffer;
    } else if (op->key == "tl.reducer_finalize") {
      auto it = plans.find(b);
      if (it != plans.end()) it->second.finalized = true;
    }
  }
  void Visit_(const For* op) override {
    loops_.push_back(op);
    IRVisitor::Visit_(op);
    loops_.pop_back();
  }
  void Visit_(const AtomicOp* op) override {
    auto it = plans.find(op->dst.buffer.get());
    if (it == plans.end()) return IRVisitor::Visit_(op);
    Update(it->second, op);
    if (op->value) Visit(op->value);
  }
  void Visit_(const BufferStore* op) override {
    Refuse(op->buffer.get(), "it is written other than by its updates and fills");
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override {
    Refuse(op->dst.buffer.get(), "a T.copy writes it");
    IRVisitor::Visit_(op);
  }
  void Visit_(const ReduceOp* op) override {
    Refuse(op->dst.buffer.get(), "a T.reduce writes it");
    IRVisitor::Visit_(op);
  }

 private:
  void Refuse(const BufferNode* b, const std::string& why) {
    auto it = plans.find(b);
    if (it != plans.end() && it->second.unfit.empty()) it->second.unfit = why;
  }

  void Update(ReducerPlan& plan, const AtomicOp* op) {
    if (!plan.unfit.empty()) return;
    // (an update after a finalize_reducer: the registers would only be combined by a later one)
    if (plan.finalized) return void(plan.unfit = "it is updated after a T.finalize_reducer");
    if (!op->value) return void(plan.unfit = "an update adds a whole tile");
    // The T.Parallel nest around the update: the innermost run of parallel loops.
    std::vector<const For*> nest;
    for (size_t k = loops_.size(); k-- > 0 && loops_[k]->for_kind == ForKind::kParallel;) nest.insert(nest.begin(), loops_[k]);
    if (nest.empty()) return void(plan.unfit = "an update is outside a T.Parallel loop");
    std::vector<int64_t> extents;
    for (const For* f : nest) {
      int64_t lo = 0, e = 0;
      if (!AsConstInt(f->min, &lo) || lo != 0 || !AsConstInt(f->extent, &e)) {
        return void(plan.unfit = "an update's T.Parallel loop has a bound known only at run time");
      }
      extents.push_back(e);
    }
    std::vector<size_t> positions;
    for (const Range& r : op->dst.ranges) {
      int64_t one = 0;
      const auto* v = As<Var>(r.min);
      size_t p = nest.size();
      for (size_t k = 0; v && k < nest.size(); ++k) {
        if (nest[k]->var.get() == v) p = k;
      }
      if (!AsConstInt(r.extent, &one) || one != 1 || p == nest.size() || (!positions.empty() && p <= positions.back())) {
        return void(plan.unfit = "an update indexes it by other than the loop's own variables, in order");
      }
      positions.push_back(p);
    }
    if (nest.size() != positions.size() + 1) {
      return void(plan.unfit = "an update's loop does not have exactly one dimension more than the reducer");
    }
    if (plan.has_update && (extents != plan.extents || positions != plan.positions || op->atomic_kind != plan.kind)) {
      return void(plan.unfit = "its updates come from loops of different shapes or combine differently");
    }
    plan.has_update = true;
    plan.extents = extents;
    plan.positions = positions;
    plan.kind = op->atomic_kind;
  }

  std::vector<const For*> loops_;
};

Expr Identity(AtomicKind kind, DType t) {
  const bool is_float = t.IsFloat() || t.code == DType::kBFloat;
  if (kind == AtomicKind::kAdd) return is_float ? MakeFloat(0, t) : MakeInt(0, t);
  if (is_float) return Call::Make(t, kind == AtomicKind::kMax ? "neg_infinity" : "infinity", {});
  // integers: the type's smallest value for max, its largest for min
  const bool is_signed = t.IsInt();
  const int64_t lo = is_signed ? -(int64_t{1} << (t.bits - 1)) : 0;
  const int64_t hi = is_signed ? (int64_t{1} << (t.bits - 1)) - 1 : static_cast<int64_t>((uint64_t{1} << t.bits) - 1);
  return MakeInt(kind == AtomicKind::kMax ? lo : hi, t);
}

class Rewriter : public IRMutator {
 public:
  explicit Rewriter(std::unordered_map<const BufferNode*, ReducerPlan>& plans) : plans_(plans) {}

 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == "tl.reducer") return Seq::Make({}, op->span);
    if (op->key != "tl.reducer_finalize") return IRMutator::Mutate_(op, self);
    ReducerPlan* plan = Planned(MarkedBuffer(op));
    if (!plan) return Seq::Make({}, op->span);
    ReduceKind kind = plan->kind == AtomicKind::kAdd ? ReduceKind::kSum
                      : plan->kind == AtomicKind::kMax ? ReduceKind::kMax : ReduceKind::kMin;
    // the reducer's initial value combined with every thread's partials, then the partials
    // start over (a reducer may be reused)
    return Seq::Make({ReduceOp::Make(Region::Full(plan->partial), Region::Full(plan->buffer), kind, plan->reduced_dim,
                                     /*clear=*/false, op->span),
                      Reset(*plan, op->span)},
                     op->span);
  }

  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    ReducerPlan* plan = Planned(op->buffer.get());
    if (!plan) return IRMutator::Mutate_(op, self);
    return Seq::Make({self, Allocate::Make(plan->partial, nullptr, op->span), Reset(*plan, op->span)}, op->span);
  }

  Stmt Mutate_(const FillOp* op, const Stmt& self) override {
    ReducerPlan* plan = Planned(op->dst.buffer.get());
    return plan ? Seq::Make({self, Reset(*plan, op->span)}, op->span) : IRMutator::Mutate_(op, self);
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    loops_.push_back(op);
    Stmt out = IRMutator::Mutate_(op, self);
    loops_.pop_back();
    return out;
  }

  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override {
    ReducerPlan* plan = Planned(op->dst.buffer.get());
    if (!plan) return IRMutator::Mutate_(op, self);
    std::vector<Expr> idx;
    for (size_t k = loops_.size() - plan->extents.size(); k < loops_.size(); ++k) idx.push_back(loops_[k]->var);
    DType t = plan->partial->dtype;
    Expr old = BufferLoad::Make(plan->partial, idx);
    Expr v = Mutate(op->value);
    if (v->dtype != t) v = Cast::Make(t, v);
    Expr next = plan->kind == AtomicKind::kAdd   ? old + v
                : plan->kind == AtomicKind::kMax ? Max(old, v)
                                                 : Min(old, v);
    return BufferStore::Make(plan->partial, idx, next, op->span);
  }

 private:
  ReducerPlan* Planned(const BufferNode* b) {
    auto it = plans_.find(b);
    return it != plans_.end() && it->second.partial ? &it->second : nullptr;
  }
  static Stmt Reset(const ReducerPlan& plan, const Span& span) {
    return FillOp::Make(Region::Full(plan.partial), Identity(plan.kind, plan.partial->dtype), span);
  }

  std::unordered_map<const BufferNode*, ReducerPlan>& plans_;
  std::vector<const For*> loops_;
};

}  // namespace

ir::PrimFunc PrivatizeReducers(const ir::PrimFunc& f, PassContext& ctx) {
  Survey survey;
  survey.Visit(f->body);
  if (survey.plans.empty()) return f;
  for (auto& [_, plan] : survey.plans) {
    const Buffer& b = plan.buffer;
    if (plan.unfit.empty() && !plan.has_update) plan.unfit = "it has no element updates";
    // Without T.finalize_reducer the partials would never reach the tile (the atomic updates
    // reach it at once).
    if (plan.unfit.empty() && !plan.finalized) plan.unfit = "it is never finalized (T.finalize_reducer)";
    if (plan.unfit.empty() && (b->dtype.bits < 16 || b->dtype.bits > 32)) {
      plan.unfit = "its dtype is not 16 or 32 bits wide";
    }
    int64_t elements = 1;
    for (int64_t e : plan.extents) elements *= e;
    if (plan.unfit.empty() && survey.threads > 0 && elements > kMaxRegistersPerThread * survey.threads) {
      plan.unfit = "its loop has " + std::to_string(elements) + " elements, more than " +
                   std::to_string(kMaxRegistersPerThread) + " registers for each of the " +
                   std::to_string(survey.threads) + " threads";
    }
    if (!plan.unfit.empty()) {
      ctx.remarks.push_back("T.alloc_reducer " + b->name + ": atomic updates of the shared tile (" + plan.unfit + ")");
      continue;
    }
    std::vector<Expr> shape;
    for (int64_t e : plan.extents) shape.push_back(MakeInt(e));
    plan.partial = BufferNode::Make(b->name + "_partial", b->dtype, shape, Scope::kFragment);
    for (size_t k = 0; k < plan.extents.size(); ++k) {
      bool indexed = false;
      for (size_t p : plan.positions) indexed |= p == k;
      if (!indexed) plan.reduced_dim = static_cast<int>(k);
    }
    std::string dims;
    for (int64_t e : plan.extents) dims += (dims.empty() ? "" : " x ") + std::to_string(e);
    ctx.remarks.push_back("T.alloc_reducer " + b->name + ": each thread accumulates its part in registers (" +
                          plan.partial->name + ", " + dims + "), combined once by T.finalize_reducer");
  }
  Rewriter rewriter(survey.plans);
  return ir::PrimFuncNode::Make(f->name, f->params, rewriter.Mutate(f->body), f->span);
}

TL_REGISTER_PASS("privatize-reducers", PrivatizeReducers);

}  // namespace tl::transform
