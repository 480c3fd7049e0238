// SPDX-License-Identifier: Apache-2.0
/// \file "check-tile-bounds": an access to a tile (shared, fragment, local) that certainly
/// leaves it is a CompileError at its line, on every target: such a write would corrupt a
/// neighbouring tile, or silently drop work, instead of failing.
///
/// Only certain cases are reported, so that no correct program is refused: the access is
/// unconditional (not under an `if`, a `while` or one arm of a select), and each index is
/// a linear combination of variables whose ranges are exact (loops and block indices with
/// constant bounds), so its interval is attained.
#include <algorithm>
#include <unordered_map>

#include "../arith/arith_internal.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/printer.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

struct Range64 {
  int64_t lo, hi;  ///< inclusive
};

class BoundsChecker : public IRVisitor {
 public:
  void Visit(const Stmt& s) override {
    if (!s) return;
    Span saved = span_;
    span_ = s->span;
    IRVisitor::Visit(s);
    span_ = saved;
  }
  using IRVisitor::Visit;

 protected:
  void Visit_(const For* op) override {
    int64_t lo = 0, ext = 0;
    bool exact = AsConstInt(op->min, &lo) && AsConstInt(op->extent, &ext) && ext >= 1;
    if (exact) exact_[op->var.get()] = {lo, lo + ext - 1};
    IRVisitor::Visit_(op);
    exact_.erase(op->var.get());
  }
  void Visit_(const KernelLaunch* op) override {
    for (size_t k = 0; k < op->block_vars.size() && k < op->grid.size(); ++k) {
      int64_t ext = 0;
      if (AsConstInt(op->grid[k], &ext) && ext >= 1) exact_[op->block_vars[k].get()] = {0, ext - 1};
    }
    IRVisitor::Visit_(op);
  }
  // Accesses under a condition may be guarded by it: not certain, not checked.
  void Visit_(const IfThenElse* op) override {
    Visit(op->cond);
    ++conditional_;
    Visit(op->then_case);
    Visit(op->else_case);
    --conditional_;
  }
  void Visit_(const While* op) override {
    ++conditional_;
    IRVisitor::Visit_(op);
    --conditional_;
  }
  void Visit_(const Select* op) override {
    Visit(op->cond);
    ++conditional_;
    Visit(op->t);
    Visit(op->f);
    --conditional_;
  }
  // `a && b`, `a || b`: b may be evaluated only when a allows it.
  void Visit_(const Binary* op) override {
    if (op->op != BinOp::kAnd && op->op != BinOp::kOr) return IRVisitor::Visit_(op);
    Visit(op->a);
    ++conditional_;
    Visit(op->b);
    --conditional_;
  }
  void Visit_(const BufferLoad* op) override {
    Check(op->buffer, op->indices);
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    Check(op->buffer, op->indices);
    IRVisitor::Visit_(op);
  }

 private:
  void Check(const Buffer& b, const std::vector<Expr>& indices) {
    if (conditional_ || b->scope == Scope::kGlobal || indices.size() != b->shape.size()) return;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t extent = 0;
      Range64 r{0, 0};
      if (!AsConstInt(b->shape[d], &extent) || !ExactRange(indices[d], &r)) continue;
      if (r.lo >= 0 && r.hi < extent) continue;
      TL_USER_ERROR(span_) << "out-of-bounds access to " << b->name << ": index " << ToString(indices[d])
                           << " of dimension " << d << " takes values in [" << r.lo << ", " << r.hi << "], but "
                           << b->name << " has " << extent << " elements there";
    }
  }

  /// The exact range of `e` when it is linear in variables of exact ranges.
  bool ExactRange(const Expr& e, Range64* out) {
    if (!e->dtype.IsInt()) return false;
    arith::detail::LinearForm f = arith::detail::ParseLinear(analyzer_.Simplify(e));
    if (f.overflow) return false;
    Range64 r{f.constant, f.constant};
    for (const auto& [term, c] : f.terms) {
      const auto* v = As<Var>(term);
      auto it = v ? exact_.find(v) : exact_.end();
      if (it == exact_.end()) return false;
      int64_t a = c * it->second.lo, b = c * it->second.hi;
      r.lo += std::min(a, b);
      r.hi += std::max(a, b);
    }
    *out = r;
    return true;
  }

  std::unordered_map<const Var*, Range64> exact_;
  int conditional_ = 0;
  Span span_;
  arith::Analyzer analyzer_;
};

}  // namespace

ir::PrimFunc CheckTileBounds(const ir::PrimFunc& f, PassContext& ctx) {
  BoundsChecker().Visit(f->body);
  return f;
}

TL_REGISTER_PASS("check-tile-bounds", CheckTileBounds);

}  // namespace tl::transform
