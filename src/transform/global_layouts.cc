// SPDX-License-Identifier: Apache-2.0
/// \file A global tensor's storage order from T.annotate_layout (upstream's semantics): the
/// element at logical (i, j, ...) lives at the row-major position of layout(i, j, ...) in
/// an array of the layout's output extents. Upstream's attention backward stores dQ this
/// way (`make_dq_layout`) so that a warp's atomic adds of an mma accumulator land on one
/// 128-byte line, and its post-processing kernel reads dQ through the same annotation.
///
/// The front end writes "tl.global_layout"(address_of(G[0, ...]), i0, ..., i{n-1}, out0,
/// ..., out{m-1}): the output indices as expressions of one variable per dimension of G.
/// Two passes, so that the passes between them see logical indices:
/// - "expand-global-layout-tile-ops" (first): a tile op that touches such a tensor becomes
///   its loop nests (the target-neutral lowering), since copies, TMA and vector accesses
///   assume the logical order; a GEMM reading it directly is refused.
/// - "apply-global-layouts" (after the bounds checks and edge guards, which reason about the
///   logical indices): every element access G[idx] becomes G[0, ..., 0, p] with p the
///   physical position, which code generation flattens to exactly p (the last dimension's
///   stride is 1). Later passes (vectorization, atomics) then see the true addresses.
#include <unordered_map>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

struct GlobalLayout {
  std::vector<VarRef> inputs;    ///< one per dimension of the tensor
  std::vector<Expr> outputs;     ///< physical indices, in `inputs`
  std::vector<int64_t> extents;  ///< of each output index
  Span span;
};

const BufferNode* AnnotatedBuffer(const Expr& e) {
  const auto* addr = As<Call>(e);
  const auto* load = addr && HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load && load->buffer->scope == Scope::kGlobal ? load->buffer.get() : nullptr;
}

/// The annotations after the first pass: "tl.global_layout.checked"(address, inputs...,
/// outputs..., extents...), the extents fixed when the annotation was checked, so that later
/// simplification of the output expressions cannot change the storage order.
constexpr const char* kChecked = "tl.global_layout.checked";

/// The annotations of the function. The front end's are checked (constant shapes, output
/// extents that hold the tensor's elements exactly); checked ones are read back as they are.
struct LayoutCollector : IRVisitor {
  std::unordered_map<const BufferNode*, GlobalLayout> layouts;

  void Visit_(const AttrStmt* op) override {
    if (op->key == kChecked) return ReadChecked(op);
    if (op->key != "tl.global_layout") return;
    const BufferNode* b = op->values.empty() ? nullptr : AnnotatedBuffer(op->values[0]);
    size_t n = b ? b->shape.size() : 0;
    TL_ICHECK(b && op->values.size() > 1 + n) << "malformed tl.global_layout";
    GlobalLayout lay;
    lay.span = op->span;
    arith::Analyzer an;
    int64_t elements = 1;
    for (size_t k = 0; k < n; ++k) {
      VarRef v = std::static_pointer_cast<const Var>(op->values[1 + k]);
      int64_t extent;
      if (!AsConstInt(b->shape[k], &extent)) {
        TL_USER_ERROR(op->span) << "T.annotate_layout on global tensor " << b->name
                                << ": its shape must be static (dimension " << k << " is not)";
      }
      an.BindRange(v.get(), MakeInt(0), MakeInt(extent));
      lay.inputs.push_back(v);
      elements *= extent;
    }
    int64_t physical = 1;
    for (size_t j = 1 + n; j < op->values.size(); ++j) {
      Expr out = an.Simplify(op->values[j]);
      arith::IntBound bound = an.Bound(out);
      if (!bound.min || !bound.max || *bound.min < 0) {
        TL_USER_ERROR(op->span) << "T.annotate_layout on global tensor " << b->name << ": output index "
                                << (j - 1 - n) << " of the layout is not provably non-negative and bounded";
      }
      lay.outputs.push_back(out);
      lay.extents.push_back(*bound.max + 1);
      physical *= *bound.max + 1;
    }
    if (physical != elements) {
      TL_USER_ERROR(op->span) << "T.annotate_layout on global tensor " << b->name << ": the layout maps its "
                              << elements << " elements into " << physical
                              << " positions; a tensor's storage order must use each position once";
    }
    layouts[b] = std::move(lay);
  }

  void ReadChecked(const AttrStmt* op) {
    const BufferNode* b = AnnotatedBuffer(op->values[0]);
    const size_t n = b->shape.size(), m = (op->values.size() - 1 - n) / 2;
    GlobalLayout lay;
    lay.span = op->span;
    for (size_t k = 0; k < n; ++k) lay.inputs.push_back(std::static_pointer_cast<const Var>(op->values[1 + k]));
    for (size_t j = 0; j < m; ++j) {
      int64_t e = 0;
      TL_ICHECK(AsConstInt(op->values[1 + n + m + j], &e)) << "malformed " << kChecked;
      lay.outputs.push_back(op->values[1 + n + j]);
      lay.extents.push_back(e);
    }
    layouts[b] = std::move(lay);
  }
};

/// The checked form of each annotation (see kChecked).
class MarkChecked : public IRMutator {
 public:
  explicit MarkChecked(const std::unordered_map<const BufferNode*, GlobalLayout>& l) : layouts_(l) {}

 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key != "tl.global_layout") return IRMutator::Mutate_(op, self);
    const GlobalLayout& lay = layouts_.at(AnnotatedBuffer(op->values[0]));
    std::vector<Expr> values{op->values[0]};
    for (const VarRef& v : lay.inputs) values.push_back(v);
    values.insert(values.end(), lay.outputs.begin(), lay.outputs.end());
    for (int64_t e : lay.extents) values.push_back(MakeInt(e));
    return AttrStmt::Make(kChecked, values, op->span);
  }

 private:
  const std::unordered_map<const BufferNode*, GlobalLayout>& layouts_;
};

bool Touches(const std::unordered_map<const BufferNode*, GlobalLayout>& layouts, const std::vector<Region>& rs) {
  for (const Region& r : rs) {
    if (r.buffer && layouts.count(r.buffer.get())) return true;
  }
  return false;
}

class TileOpExpander : public IRMutator {
 public:
  explicit TileOpExpander(const std::unordered_map<const BufferNode*, GlobalLayout>& l) : layouts_(l) {}

 protected:
  Stmt Mutate_(const CopyOp* op, const Stmt& self) override { return Expand(self, {op->src, op->dst}); }
  Stmt Mutate_(const FillOp* op, const Stmt& self) override { return Expand(self, {op->dst}); }
  Stmt Mutate_(const ReduceOp* op, const Stmt& self) override { return Expand(self, {op->src, op->dst}); }
  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override { return Expand(self, {op->dst, op->src}); }
  Stmt Mutate_(const GemmOp* op, const Stmt& self) override {
    for (const Region* r : {&op->a, &op->b, &op->c}) {
      if (layouts_.count(r->buffer.get())) {
        TL_USER_ERROR(op->span) << "T.gemm reads " << r->buffer->name
                                << " directly, a global tensor with a T.annotate_layout storage order; copy it "
                                   "into a tile first";
      }
    }
    return self;
  }

 private:
  Stmt Expand(const Stmt& self, const std::vector<Region>& regions) {
    return Touches(layouts_, regions) ? LowerTileOpToLoops(self) : self;
  }
  const std::unordered_map<const BufferNode*, GlobalLayout>& layouts_;
};

class Reindexer : public IRMutator {
 public:
  explicit Reindexer(const std::unordered_map<const BufferNode*, GlobalLayout>& l) : layouts_(l) {}

 protected:
  Stmt Mutate_(const AttrStmt* op, const Stmt& self) override {
    if (op->key == kChecked) return Seq::Make({}, op->span);
    return IRMutator::Mutate_(op, self);
  }
  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    auto it = layouts_.find(op->buffer.get());
    if (it == layouts_.end()) return IRMutator::Mutate_(op, self);
    return BufferLoad::Make(op->buffer, Physical(*op->buffer, it->second, MutateAll(op->indices)));
  }
  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    auto it = layouts_.find(op->buffer.get());
    if (it == layouts_.end()) return IRMutator::Mutate_(op, self);
    return BufferStore::Make(op->buffer, Physical(*op->buffer, it->second, MutateAll(op->indices)),
                             Mutate(op->value), op->span);
  }

 private:
  std::vector<Expr> MutateAll(const std::vector<Expr>& v) {
    std::vector<Expr> out;
    for (const Expr& e : v) out.push_back(Mutate(e));
    return out;
  }

  /// [0, ..., 0, p]: p the row-major position of layout(idx) among the output extents.
  static std::vector<Expr> Physical(const BufferNode& b, const GlobalLayout& lay, const std::vector<Expr>& idx) {
    auto at = [&](const Var* v) -> Expr {
      for (size_t k = 0; k < lay.inputs.size(); ++k) {
        if (lay.inputs[k].get() == v) return idx[k];
      }
      return nullptr;
    };
    DType t = b.shape.back()->dtype;
    Expr p;
    for (size_t j = 0; j < lay.outputs.size(); ++j) {
      Expr o = Substitute(lay.outputs[j], at);
      if (o->dtype != t) o = Cast::Make(t, o);
      p = p ? p * MakeInt(lay.extents[j], t) + o : o;
    }
    std::vector<Expr> out(b.shape.size(), MakeInt(0, t));
    out.back() = p;
    return out;
  }

  const std::unordered_map<const BufferNode*, GlobalLayout>& layouts_;
};

std::string Describe(const BufferNode* b, const GlobalLayout& lay) {
  std::string ext;
  for (int64_t e : lay.extents) ext += (ext.empty() ? "" : ", ") + std::to_string(e);
  return "T.annotate_layout(" + b->name + ", line " + std::to_string(lay.span.line) +
         "): applied to the global tensor's storage (row-major in a (" + ext +
         ") array); tile ops on it run element by element";
}

}  // namespace

ir::PrimFunc ExpandGlobalLayoutTileOps(const ir::PrimFunc& f, PassContext& ctx) {
  LayoutCollector layouts;
  layouts.Visit(f->body);
  if (layouts.layouts.empty()) return f;
  for (const auto& [b, lay] : layouts.layouts) ctx.remarks.push_back(Describe(b, lay));
  ir::Stmt body = MarkChecked(layouts.layouts).Mutate(TileOpExpander(layouts.layouts).Mutate(f->body));
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

ir::PrimFunc ApplyGlobalLayouts(const ir::PrimFunc& f, PassContext& ctx) {
  LayoutCollector layouts;
  layouts.Visit(f->body);
  if (layouts.layouts.empty()) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, Reindexer(layouts.layouts).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("expand-global-layout-tile-ops", ExpandGlobalLayoutTileOps);
TL_REGISTER_PASS("apply-global-layouts", ApplyGlobalLayouts);

}  // namespace tl::transform
