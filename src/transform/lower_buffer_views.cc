// SPDX-License-Identifier: Apache-2.0
/// \file "lower-buffer-views": T.reshape and T.view make a second buffer over the storage of
/// another (same dtype, same element count, row-major). The front end marks each with an
/// attribute "tl.buffer_view"(address_of(view[0, ...]), address_of(owner[0, ...])). Here
/// every access to a view becomes an access to its owner at the same row-major position,
/// so no later pass knows about views; a tile op that touches a view is first turned into
/// loop nests (the target-neutral lowering), whose element accesses are then re-indexed.
/// A register fragment accessed through a view no longer matches the element pattern
/// layout inference needs, so the CUDA target keeps it in shared memory (and says so).
#include <unordered_map>
#include <vector>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

const BufferNode* MarkedBuffer(const Expr& e) {
  const auto* addr = As<Call>(e);
  const auto* load = addr && HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load ? load->buffer.get() : nullptr;
}
Buffer MarkedBufferRef(const Expr& e) { return As<BufferLoad>(As<Call>(e)->args[0])->buffer; }

class ViewLowerer : public IRMutator {
 public:
  /// view -> owner, chains resolved (a view of a view reads the first owner).
  std::unordered_map<const BufferNode*, Buffer> owner_;

 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == "tl.buffer_view") return Seq::Make({}, op->span);
    return IRMutator::Mutate_(op, self);
  }

  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    auto it = owner_.find(op->buffer.get());
    if (it == owner_.end()) return IRMutator::Mutate_(op, self);
    return BufferLoad::Make(it->second, Reindex(op->buffer, MutateAll(op->indices), it->second));
  }

  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    auto it = owner_.find(op->buffer.get());
    if (it == owner_.end()) return IRMutator::Mutate_(op, self);
    return BufferStore::Make(it->second, Reindex(op->buffer, MutateAll(op->indices), it->second), Mutate(op->value),
                             op->span);
  }

  // A tile op touching a view: its loop nests, with the view's accesses re-indexed.
  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    return Touches({op->src, op->dst}) ? Mutate(LowerTileOpToLoops(self)) : IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const FillOp* op, const Stmt& self) override {
    return Touches({op->dst}) ? Mutate(LowerTileOpToLoops(self)) : IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const ReduceOp* op, const Stmt& self) override {
    return Touches({op->src, op->dst}) ? Mutate(LowerTileOpToLoops(self)) : IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override {
    return Touches({op->dst, op->src}) ? Mutate(LowerTileOpToLoops(self)) : IRMutator::Mutate_(op, self);
  }
  Stmt Mutate_(const GemmOp* op, const Stmt& self) override {
    for (const Region* r : {&op->a, &op->b, &op->c}) {
      if (owner_.count(r->buffer.get())) {
        TL_USER_ERROR(op->span) << "T.gemm of " << r->buffer->name
                                << ", a T.reshape / T.view, is not supported; copy it into a tile of the shape "
                                   "the GEMM needs";
      }
    }
    return IRMutator::Mutate_(op, self);
  }

 private:
  std::vector<Expr> MutateAll(const std::vector<Expr>& v) {
    std::vector<Expr> out;
    for (const Expr& e : v) out.push_back(Mutate(e));
    return out;
  }

  bool Touches(const std::vector<Region>& regions) const {
    for (const Region& r : regions) {
      if (r.buffer && owner_.count(r.buffer.get())) return true;
    }
    return false;
  }

  /// The owner's indices of the element at `idx` of `view` (same row-major position).
  static std::vector<Expr> Reindex(const Buffer& view, const std::vector<Expr>& idx, const Buffer& owner) {
    Expr linear;
    for (size_t k = 0; k < idx.size(); ++k) {
      Expr i = Cast::Make(DType::Int(64), idx[k]);
      linear = linear ? linear * Cast::Make(DType::Int(64), view->shape[k]) + i : i;
    }
    if (!linear) linear = MakeInt(0, DType::Int(64));
    std::vector<Expr> out(owner->shape.size());
    for (size_t k = owner->shape.size(); k-- > 0;) {
      Expr extent = Cast::Make(DType::Int(64), owner->shape[k]);
      Expr at = k == 0 ? linear : FloorMod(linear, extent);
      out[k] = Cast::Make(owner->shape[k]->dtype, at);
      linear = FloorDiv(linear, extent);
    }
    return out;
  }
};

/// Collects the markers in program order (a view is declared before it is used).
struct MarkerCollector : IRVisitor {
  std::unordered_map<const BufferNode*, Buffer>* owner;
  void Visit_(const AttrStmt* op) override {
    if (op->key != "tl.buffer_view" || op->values.size() != 2) return;
    const BufferNode* view = MarkedBuffer(op->values[0]);
    TL_ICHECK(view && MarkedBuffer(op->values[1])) << "malformed tl.buffer_view marker";
    Buffer target = MarkedBufferRef(op->values[1]);
    auto chained = owner->find(target.get());
    (*owner)[view] = chained == owner->end() ? target : chained->second;
  }
};

}  // namespace

ir::PrimFunc LowerBufferViews(const ir::PrimFunc& f, PassContext& ctx) {
  ViewLowerer lowerer;
  MarkerCollector markers;
  markers.owner = &lowerer.owner_;
  markers.Visit(f->body);
  if (lowerer.owner_.empty()) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, lowerer.Mutate(f->body), f->span);
}

TL_REGISTER_PASS("lower-buffer-views", LowerBufferViews);

}  // namespace tl::transform
