// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments" (see lower_fragments.h), the element accesses of a T.Parallel
/// nest over registers: which access anchors the nest's walk (AnchorOf), which other
/// accesses find their element among the thread's registers (column reads of a tile held in
/// whole columns, folded reads of an mma tf32 operand), why iterations no register reaches may
/// be skipped (UnreachedIterationsIdle), and the guard that keeps a per-row vector's copies
/// from repeating a write to memory (GuardReplicatedWrites).
#include <algorithm>
#include <optional>
#include <vector>

#include "tl/arith/comparison.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/layout/fragment.h"
#include "fragment_inference.h"
#include "lower_fragments.h"

namespace tl::transform {
namespace fragments {

std::optional<Expr> FragmentRewriter::ColumnRead(const BufferLoad* op) {
  auto it = column_reads_.find(op->buffer.get());
  if (it == column_reads_.end() || op->indices.size() != 2) return std::nullopt;
  const ColumnReads& c = it->second;
  if (!StructuralEqual(op->indices[1], c.column)) return std::nullopt;
  auto in_nest = [&](const Var* v) { return std::find(c.nest_vars.begin(), c.nest_vars.end(), v) != c.nest_vars.end(); };
  if (UsesVar(op->indices[0], in_nest)) return std::nullopt;
  UsesVar(op->indices[0], [&](const Var* v) {
    column_row_vars_.insert(v);
    return false;
  });
  return Mutate(op->indices[0]) * MakeInt(c.per_row) + c.in_row;
}

std::optional<Expr> FragmentRewriter::FoldedRead(const BufferLoad* op, const RegFragment& rf) {
  auto it = folded_reads_.find(op->buffer.get());
  if (it == folded_reads_.end() || op->indices.size() != 2) return std::nullopt;
  const FoldedReads& f = it->second;
  if (!StructuralEqual(op->indices[0], f.row)) return std::nullopt;
  auto in_nest = [&](const Var* v) { return std::find(f.nest_vars.begin(), f.nest_vars.end(), v) != f.nest_vars.end(); };
  arith::Analyzer az;
  Expr shift = az.Simplify(op->indices[1] - f.column);
  int64_t rem = -1;
  if (UsesVar(shift, in_nest) || !AsConstInt(az.Simplify(FloorMod(shift, MakeInt(f.p))), &rem) || rem != 0) {
    return std::nullopt;
  }
  // The register depends on the shift's loop variables: those loops are unrolled, as for
  // column reads (registers cannot be indexed at run time).
  UsesVar(shift, [&](const Var* v) {
    column_row_vars_.insert(v);
    return false;
  });
  return az.Simplify(rf.layout->FoldedLocal(f.p, f.local, Mutate(FloorDiv(shift, MakeInt(f.p)))));
}

std::optional<FragmentRewriter::NestAnchor> FragmentRewriter::AnchorOf(const std::vector<Expr>& idx,
                                                                      const ParallelNest& nest) {
  if (idx.empty() || idx.size() > 2) return std::nullopt;
  auto nest_var = [&](const Var* v) {
    for (const For* loop : nest.loops) {
      if (loop->var.get() == v) return true;
    }
    return false;
  };
  // outer * c + inner (either order), both loop variables
  auto fused = [&](const Expr& e, const Var** outer, const Var** inner, int64_t* c) {
    const auto* add = As<Binary>(e);
    if (!add || add->op != BinOp::kAdd) return false;
    for (int side = 0; side < 2; ++side) {
      const auto* mul = As<Binary>(side ? add->b : add->a);
      const Var* in = As<Var>(side ? add->a : add->b);
      if (!mul || mul->op != BinOp::kMul || !in || !nest_var(in)) continue;
      const Var* out = As<Var>(mul->a);
      if (out && nest_var(out) && out != in && AsConstInt(mul->b, c) && *c > 0) {
        *outer = out;
        *inner = in;
        return true;
      }
    }
    return false;
  };
  NestAnchor a;
  a.indices = idx;
  size_t loops_named = 0;
  for (const Expr& e : idx) {
    // v, v + e, e + v or v - e, with e free of the nest's variables; or a fused pair
    const Var* v = As<Var>(e);
    Expr off;
    const Var *outer = nullptr, *in = nullptr;
    int64_t c = 0;
    if (!v && fused(e, &outer, &in, &c)) {
      for (const Var* seen : a.vars) {
        if (seen == outer || seen == in) return std::nullopt;
      }
      for (const Var* seen : a.inner) {
        if (seen && (seen == outer || seen == in)) return std::nullopt;
      }
      a.vars.push_back(outer);
      a.offsets.push_back(nullptr);
      a.inner.push_back(in);
      a.inner_extent.push_back(c);
      loops_named += 2;
      continue;
    }
    if (!v) {
      const auto* bin = As<Binary>(e);
      if (!bin || (bin->op != BinOp::kAdd && bin->op != BinOp::kSub)) return std::nullopt;
      if (As<Var>(bin->a) && nest_var(As<Var>(bin->a))) {
        v = As<Var>(bin->a);
        off = bin->op == BinOp::kAdd ? bin->b : MakeInt(0, bin->b->dtype) - bin->b;
      } else if (bin->op == BinOp::kAdd && As<Var>(bin->b) && nest_var(As<Var>(bin->b))) {
        v = As<Var>(bin->b);
        off = bin->a;
      } else {
        return std::nullopt;
      }
      if (UsesVar(off, nest_var)) return std::nullopt;
    }
    if (!nest_var(v)) return std::nullopt;
    for (const Var* seen : a.vars) {
      if (seen == v) return std::nullopt;
    }
    for (const Var* seen : a.inner) {
      if (seen == v) return std::nullopt;
    }
    a.vars.push_back(v);
    a.offsets.push_back(off);
    a.inner.push_back(nullptr);
    a.inner_extent.push_back(0);
    ++loops_named;
  }
  if (loops_named != nest.loops.size()) return std::nullopt;
  return a;
}

namespace {

/// Wraps every write a walk makes outside the thread's own registers (stores to shared or
/// global memory, atomic updates) in `first`.
class ReplicaGuard : public IRMutator {
 public:
  explicit ReplicaGuard(Expr first) : first_(std::move(first)) {}

 protected:
  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    return op->buffer->scope == Scope::kLocal ? self : IfThenElse::Make(first_, self, nullptr, op->span);
  }
  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override {  // T.atomic_*, lowered later
    return op->dst.buffer->scope == Scope::kLocal ? self : IfThenElse::Make(first_, self, nullptr, op->span);
  }
  Stmt Mutate_(const Evaluate* op, const Stmt& self) override {
    bool writes = false;
    ForEachExpr(op->value, [&](const Expr& e) {
      const auto* call = As<Call>(e);
      if (!call || !(HasEffect(call, kAtomicUpdate) || HasEffect(call, kWritesArg0))) return;
      const auto* addr = call->args.empty() ? nullptr : As<Call>(call->args[0]);
      const auto* at = HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
      writes |= !at || at->buffer->scope != Scope::kLocal;
    });
    return writes ? IfThenElse::Make(first_, self, nullptr, op->span) : self;
  }

 private:
  Expr first_;
};

}  // namespace

/// A walk over a vector runs in every thread that holds a copy of its elements (the
/// row_lanes() lanes of each of row_warps() warps for a per-row vector; the lane groups and
/// warp rows of an mma accumulator's columns for a per-column one): its register updates
/// must, but a write to memory made by each copy would repeat (an atomic add would count the
/// element that many times), so only the first copy's holder (FirstCopy) makes it.
Stmt FragmentRewriter::GuardReplicatedWrites(const Stmt& body, const FragmentLayout& lay) {
  Expr first = lay.FirstCopy(tx_);
  if (!first) return body;
  return ReplicaGuard(first).Mutate(body);
}

bool FragmentRewriter::UnreachedIterationsIdle(const NestAnchor& a, const ParallelNest& nest, const Buffer& frag) {
  // Every iteration that does something reaches a register: where the body's guard (`if
  // cond:` around all of it, no else) holds, each index is inside the fragment. The guard's
  // comparisons of loop variables with constants narrow their ranges for the proof.
  arith::Analyzer an;
  for (const auto& [v, range] : enclosing_loops_) an.BindRange(v, range.first, range.second);
  for (const For* f : nest.loops) an.BindRange(f->var.get(), f->min, f->extent);
  const auto* guard = As<IfThenElse>(nest.body);
  if (guard && !guard->else_case) {
    std::vector<Expr> conjuncts = {guard->cond};
    while (!conjuncts.empty()) {
      Expr c = conjuncts.back();
      conjuncts.pop_back();
      if (const auto* b = As<Binary>(c); b && b->op == BinOp::kAnd) {
        conjuncts.push_back(b->a);
        conjuncts.push_back(b->b);
        continue;
      }
      auto cmp = arith::AsConstComparison(c);
      const Var* v = cmp ? As<Var>(cmp->operand) : nullptr;
      if (!v) continue;
      std::optional<arith::IntBound> bound =
          arith::NarrowedBound(an.VarBound(v).value_or(arith::IntBound{}), *cmp, true);
      if (!bound) continue;
      an.BindBound(v, *bound);
    }
  }
  auto loop_of = [&](const Var* v) -> const For* {
    for (const For* f : nest.loops) {
      if (f->var.get() == v) return f;
    }
    return nullptr;
  };
  for (size_t d = 0; d < a.vars.size(); ++d) {
    if (a.inner[d]) {
      // the fused pair covers the dimension exactly: inner over [0, c), outer over [0, dim / c)
      int64_t in_min = -1, in_ext = -1, out_min = -1, out_ext = -1, dim = -1;
      const For *in = loop_of(a.inner[d]), *out = loop_of(a.vars[d]);
      if (!in || !out || !AsConstInt(in->min, &in_min) || !AsConstInt(in->extent, &in_ext) ||
          !AsConstInt(out->min, &out_min) || !AsConstInt(out->extent, &out_ext) ||
          !AsConstInt(frag->shape[d], &dim) || in_min || out_min || in_ext != a.inner_extent[d] ||
          out_ext * in_ext != dim) {
        return false;
      }
      continue;
    }
    if (!a.offsets[d]) {
      // v itself: inside the fragment when the loop is (IndicesAreVars' case, reordered)
      if (!an.CanProve(LT(a.indices[d], frag->shape[d]))) return false;
      continue;
    }
    if (!an.CanProve(GE(a.indices[d], MakeInt(0))) || !an.CanProve(LT(a.indices[d], frag->shape[d]))) return false;
  }
  return true;
}

}  // namespace fragments
}  // namespace tl::transform
