// SPDX-License-Identifier: Apache-2.0
/// \file "check-tile-bounds": an access to a tile (shared, fragment, local) that certainly
/// leaves it is a CompileError at its line, on every target: such a write would corrupt a
/// neighbouring tile, or silently drop work, instead of failing. A T.ptx_cp_async counts
/// as an access to every element it writes (its destination element and those after it).
///
/// Only certain cases are reported, so that no correct program is refused: the access is
/// unconditional (not under an `if`, a `while` or one arm of a select), and each index is
/// a linear combination of variables whose ranges are exact (loops and block indices with
/// constant bounds), so its interval is attained.
///
/// One case is refused without being certain, as upstream refuses it: a register tile
/// (fragment or local) indexed, unconditionally, by the variable of a T.Parallel loop whose
/// extent has no upper bound (`for i in T.Parallel(n): frag[i] = 0` with n a dynamic size).
/// Registers are sized at compile time; such a loop writes past them whenever n is larger,
/// so the program says how far it goes (T.min(n, size)) or guards the access. Serial loops
/// are left alone, as upstream leaves them (a data-dependent count of blocks, say).
///
/// One exception, for upstream TileLang's programs: a register fragment indexed past its
/// declared end (never below 0), e.g. `sinks = T.alloc_fragment([heads])` written by a
/// T.Parallel(block_M) loop with block_M > heads in upstream's attention-sink examples.
/// Upstream sizes a fragment by the loops that use it, so those programs work there; here
/// the fragment is allocated with the extent its accesses need, as a remark that names it.
#include <algorithm>
#include <map>
#include <unordered_map>

#include "../arith/arith_internal.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
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
    const bool unbounded = op->for_kind == ForKind::kParallel && !exact && AsConstInt(op->min, &lo) &&
                           !analyzer_.Bound(op->extent).max;
    if (unbounded) unbounded_[op->var.get()] = op->extent;
    if (!exact) analyzer_.BindRange(op->var.get(), op->min, op->extent);
    IRVisitor::Visit_(op);
    exact_.erase(op->var.get());
    unbounded_.erase(op->var.get());
    if (!exact) analyzer_.Unbind(op->var.get());
  }
  void Visit_(const KernelLaunch* op) override {
    for (size_t k = 0; k < op->block_vars.size() && k < op->grid.size(); ++k) {
      int64_t ext = 0;
      if (AsConstInt(op->grid[k], &ext) && ext >= 1) exact_[op->block_vars[k].get()] = {0, ext - 1};
      analyzer_.BindRange(op->block_vars[k].get(), MakeInt(0, op->grid[k]->dtype), op->grid[k]);
    }
    IRVisitor::Visit_(op);
  }
  // A let-bound value's bounds are its variable's (`loop_range = T.min(n_blocks, ...)`
  // bounds a loop over loop_range).
  void Visit_(const LetStmt* op) override {
    IRVisitor::Visit_(op);
    if (op->value->dtype.IsInt()) analyzer_.BindBound(op->var.get(), analyzer_.Bound(op->value));
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
  /// T.ptx_cp_async writes `bytes` from its destination element on: a count larger than
  /// the tile has left (`T.ptx_cp_async(T.access_ptr(t[i], "w", 1), ..., 4)` over every i of
  /// t) would write the tile's neighbour.
  void Visit_(const Call* op) override {
    IRVisitor::Visit_(op);
    int64_t bytes = 0;
    if (!HasEffect(op, kProgramGroupCopy) || op->args.size() < 3 || !AsConstInt(op->args[2], &bytes)) return;
    const auto* addr = As<Call>(op->args[0]);
    const auto* dst = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
    if (!dst || conditional_ || dst->buffer->scope == Scope::kGlobal || dst->buffer->dtype.bits % 8 != 0) return;
    const Buffer& b = dst->buffer;
    Expr flat = MakeInt(0);
    for (size_t d = 0; d < dst->indices.size(); ++d) flat = flat + dst->indices[d] * b->StrideOf(d);
    int64_t total = 0;
    Range64 r{0, 0};
    if (!AsConstInt(analyzer_.Simplify(b->NumElements()), &total) || !ExactRange(flat, &r)) return;
    const int64_t elems = bytes / b->dtype.bytes();
    if (r.hi + elems <= total) return;
    TL_USER_ERROR(span_) << "T.ptx_cp_async writes " << bytes << " bytes (" << elems << " " << b->dtype.str()
                         << " elements) from " << b->name << "[" << ToString(flat) << "], which takes values up to "
                         << r.hi << ", past the end of " << b->name << " (" << total
                         << " elements); num_elems counts elements of the destination's type";
  }

 private:
  void Check(const Buffer& b, const std::vector<Expr>& indices) {
    if (conditional_ || b->scope == Scope::kGlobal || indices.size() != b->shape.size()) return;
    for (size_t d = 0; d < indices.size(); ++d) {
      int64_t extent = 0;
      Range64 r{0, 0};
      if (!AsConstInt(b->shape[d], &extent)) continue;
      if (b->scope == Scope::kFragment || b->scope == Scope::kLocal) CheckUnboundedLoop(b, d, indices[d], extent);
      if (!ExactRange(indices[d], &r)) continue;
      if (r.lo >= 0 && r.hi < extent) continue;
      if (b->scope == Scope::kFragment && r.lo >= 0) {
        auto& need = grown[b.get()];
        if (need.empty()) need = std::vector<int64_t>(indices.size(), 0);
        need[d] = std::max(need[d], r.hi + 1);
        grown_lines.emplace(b.get(), span_.line);  // the first such access
        continue;
      }
      TL_USER_ERROR(span_) << "out-of-bounds access to " << b->name << ": index " << ToString(indices[d])
                           << " of dimension " << d << " takes values in [" << r.lo << ", " << r.hi << "], but "
                           << b->name << " has " << extent << " elements there";
    }
  }

  /// A register tile's index that grows with the variable of a loop of unbounded extent.
  void CheckUnboundedLoop(const Buffer& b, size_t d, const Expr& index, int64_t extent) {
    if (unbounded_.empty() || !index->dtype.IsInt()) return;
    arith::detail::LinearForm f = arith::detail::ParseLinear(analyzer_.Simplify(index));
    if (f.overflow) return;
    for (const auto& [term, c] : f.terms) {
      const auto* v = As<Var>(term);
      auto it = v ? unbounded_.find(v) : unbounded_.end();
      if (it == unbounded_.end() || c <= 0) continue;
      TL_USER_ERROR(span_) << b->name << " is a register " << (b->scope == Scope::kLocal ? "array" : "fragment")
                           << " of " << extent << " elements along dimension " << d << ", indexed there by "
                           << ToString(index) << ", which grows with loop variable " << v->name
                           << " of a T.Parallel loop of extent " << ToString(it->second)
                           << " (no upper bound): it runs past the end whenever that extent is larger. Registers "
                              "are sized at compile time: bound the loop (T.min("
                           << ToString(it->second) << ", " << extent << ")) or guard the access with an if";
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


 public:
  /// Fragments indexed past their end: the extent each dimension needs (0: as declared),
  /// and a line of such an access.
  std::map<const BufferNode*, std::vector<int64_t>> grown;
  std::map<const BufferNode*, int> grown_lines;

 private:
  std::unordered_map<const Var*, Range64> exact_;
  std::unordered_map<const Var*, Expr> unbounded_;  ///< variables of T.Parallel loops with no upper bound
  int conditional_ = 0;
  Span span_;
  arith::Analyzer analyzer_;
};

}  // namespace

/// Every reference to a grown fragment goes to its larger copy.
class GrowFragments : public IRMutator {
 public:
  explicit GrowFragments(std::unordered_map<const BufferNode*, Buffer> to) : to_(std::move(to)) {}
  Buffer MutateBuffer(const Buffer& b) override {
    auto it = to_.find(b.get());
    return it == to_.end() ? b : it->second;
  }

 private:
  std::unordered_map<const BufferNode*, Buffer> to_;
};

ir::PrimFunc CheckTileBounds(const ir::PrimFunc& f, PassContext& ctx) {
  BoundsChecker checker;
  checker.Visit(f->body);
  if (checker.grown.empty()) return f;
  std::unordered_map<const BufferNode*, Buffer> to;
  for (const auto& [b, need] : checker.grown) {
    std::vector<Expr> shape = b->shape;
    std::string from, into;
    for (size_t d = 0; d < shape.size(); ++d) {
      int64_t old = 0;
      AsConstInt(shape[d], &old);
      if (need[d] > old) shape[d] = MakeInt(need[d], shape[d]->dtype);
      from += (d ? ", " : "") + std::to_string(old);
      into += (d ? ", " : "") + std::to_string(std::max(old, need[d]));
    }
    to[b] = BufferNode::Make(b->name, b->dtype, shape, b->scope, b->strides, b->data);
    ctx.remarks.push_back("warning: fragment " + b->name + " is declared [" + from + "] but line " +
                          std::to_string(checker.grown_lines[b]) + " indexes it as one of [" + into +
                          "] elements: allocated with that shape (upstream sizes fragments by their loops); "
                          "declare it with the larger shape to silence this");
  }
  return ir::PrimFuncNode::Make(f->name, f->params, GrowFragments(std::move(to)).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("check-tile-bounds", CheckTileBounds);

}  // namespace tl::transform
