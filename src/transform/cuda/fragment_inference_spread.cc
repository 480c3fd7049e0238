// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference, the spreading rules: a fragment's layout is fixed once
/// (Assign: a second, different one is a conflict, resolved by a warp split request, by
/// moving a per-row vector to shared memory, or reported), and spreads element-for-element
/// through T.Parallel nests, row reductions and whole fragment-to-fragment copies.
#include <sstream>
#include <string>

#include "../region_util.h"
#include "tl/arith/simplify.h"
#include "fragment_inference_internal.h"
#include "tl/support/error.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file
using layout::FragmentLayoutRef;
using layout::MmaAccumulatorLayout;

namespace {

/// A per-row vector of a tile with `m` rows: a 1-D fragment of length m.
bool IsRowVector(const Buffer& b, int64_t m) {
  int64_t len = 0;
  return IsFragment(b) && b->shape.size() == 1 && AsConstInt(b->shape[0], &len) && len == m;
}

}  // namespace

void FragmentLayoutInference::Assign(const Buffer& b, const FragmentLayoutRef& l, const std::string& origin,
                                     const Span& span) {
  if (forced_shared.count(b.get())) return;
  auto it = layouts.find(b.get());
  if (l->is_rows() && it != layouts.end() && !(*it->second.layout == *l)) {
    // A per-row vector used next to tiles of different layouts: it stays in shared
    // memory, where every thread can reach every row.
    conflicted.insert(b.get());
    return;
  }
  if (it == layouts.end()) {
    layouts[b.get()] = Assigned{l, origin, span};
    changed = true;
    return;
  }
  if (!(*it->second.layout == *l)) {
    const auto* have = dynamic_cast<const MmaAccumulatorLayout*>(it->second.layout->Base());
    const auto* want = dynamic_cast<const MmaAccumulatorLayout*>(l->Base());
    if (have && want && have->m() == want->m() && have->n() == want->n() &&
        it->second.layout->first_thread() == l->first_thread() &&
        it->second.origin.rfind("T.gemm", 0) == 0 && !preferred_split.count(b.get())) {
      std::ostringstream why;
      why << "layout conflict for fragment " << b->name << ": " << it->second.origin << " (line "
          << it->second.span.line << ") gives it " << have->ToString() << " but " << origin << " needs "
          << want->ToString();
      split_requests[b.get()] = SplitRequest{want->warps(), why.str(), span};
      return;
    }
    TL_USER_ERROR(span) << "layout conflict for fragment " << b->name << ": " << it->second.origin
                        << " (line " << it->second.span.line << ") gives it " << it->second.layout->ToString()
                        << " but " << origin << " needs " << l->ToString();
  }
}

void FragmentLayoutInference::Visit_(const For* op) {
  if (op->for_kind != ForKind::kParallel) return IRVisitor::Visit_(op);
  ParallelNest nest = CollectNest(op);
  AccessCollector c;
  c.Visit(nest.body);
  FragmentLayoutRef anchor;
  Buffer anchor_buf;
  for (auto& [b, idx] : c.accesses) {
    auto it = layouts.find(b.get());
    if (it != layouts.end() && IndicesAreVars(idx, nest)) {
      anchor = it->second.layout;
      anchor_buf = b;
      break;
    }
  }
  if (anchor && !anchor->is_rows()) {
    const FragmentLayoutRef columns = anchor->whole_columns() || mma_columns ? anchor->Columns() : nullptr;
    for (auto& [b, idx] : c.accesses) {
      int64_t m, n;
      if (b->shape.size() == 2 && IsWhole2D(Region::Full(b), &m, &n) && m == anchor->m() && n == anchor->n() &&
          IndicesAreVars(idx, nest)) {
        Assign(b, anchor, "T.Parallel with " + anchor_buf->name, op->span);
      }
      // A per-column vector (V[j]) next to a tile whose layout has one: the tile's columns
      // (whole columns; an mma accumulator's unless a tile op writes the vector: `loaded`).
      int64_t len = 0;
      if (columns && (anchor->whole_columns() || !loaded.count(b.get())) && nest.loops.size() == 2 &&
          IsFragment(b) && b->shape.size() == 1 &&
          AsConstInt(b->shape[0], &len) && len == anchor->n() && idx.size() == 1 &&
          idx[0] == static_cast<Expr>(nest.loops[1]->var)) {
        Assign(b, columns, "T.Parallel with " + anchor_buf->name, op->span);
        continue;
      }
      // A per-row vector read or written next to the tile: it holds this tile's rows.
      if (IsFragment(b) && b->shape.size() == 1 && !IsRowVector(b, anchor->m())) conflicted.insert(b.get());
      if (IsRowVector(b, anchor->m()) && idx.size() == 1 && idx[0] == static_cast<Expr>(nest.loops[0]->var)) {
        Assign(b, anchor->Rows(), "T.Parallel with " + anchor_buf->name,
               op->span);
      }
    }
  } else if (anchor) {
    for (auto& [b, idx] : c.accesses) {
      if (IsRowVector(b, anchor->m()) && IndicesAreVars(idx, nest)) {
        Assign(b, anchor, "T.Parallel with " + anchor_buf->name, op->span);
      }
    }
  } else if (FoldColumns(nest, c.accesses, op->span)) {
    // (a tile read through another's columns folded: it holds them, FoldedColumns)
  } else {
    // No register tile leads this loop: its vectors must be reachable by any thread.
    for (auto& [b, idx] : c.accesses) {
      if (IsFragment(b) && b->shape.size() == 1) conflicted.insert(b.get());
    }
  }
  IRVisitor::Visit(nest.body);
}

/// `F[i, j] op= ... G[i, j + p s] ...` in a nest over F (m x p, no layout yet) where G has a
/// layout that folds its columns by p (FragmentLayout::FoldedColumns): F takes the folded
/// layout, so each thread finds G[i, j + p s] for every s among its own registers (mHC pre's
/// `sqrsum_part[i, j] += x_frag[i, jj * 4 + j] ** 2` over a tf32 GEMM operand).
bool FragmentLayoutInference::FoldColumns(const ParallelNest& nest,
                                          const std::vector<std::pair<Buffer, std::vector<Expr>>>& accesses,
                                          const Span& span) {
  if (nest.loops.size() != 2) return false;
  const Var* vi = nest.loops[0]->var.get();
  const Var* vj = nest.loops[1]->var.get();
  auto in_nest = [&](const Var* v) { return v == vi || v == vj; };
  for (auto& [f, fidx] : accesses) {
    int64_t m = 0, p = 0;
    if (!IsFragment(f) || layouts.count(f.get()) || forced_shared.count(f.get()) || fidx.size() != 2 ||
        As<Var>(fidx[0]) != vi || As<Var>(fidx[1]) != vj || !IsWhole2D(Region::Full(f), &m, &p)) {
      continue;
    }
    for (auto& [g, gidx] : accesses) {
      auto lay = layouts.find(g.get());
      if (lay == layouts.end() || gidx.size() != 2 || As<Var>(gidx[0]) != vi || lay->second.layout->m() != m) continue;
      FragmentLayoutRef folded = lay->second.layout->FoldedColumns(p);
      if (!folded) continue;
      arith::Analyzer az;
      Expr shift = az.Simplify(gidx[1] - nest.loops[1]->var);
      int64_t rem = -1;
      if (UsesVar(shift, in_nest) || !AsConstInt(az.Simplify(FloorMod(shift, MakeInt(p))), &rem) || rem != 0) {
        continue;
      }
      Assign(f, folded, "T.Parallel reading " + g->name + " by its columns folded", span);
      return true;
    }
  }
  return false;
}

void FragmentLayoutInference::Visit_(const ReduceOp* op) {
  // A reduction into part of a 2-D fragment (a column of it: the reduction of a reshaped
  // tile, lower-buffer-views) writes it from shared memory's side: it stays there.
  if (IsFragment(op->dst.buffer) && op->dst.buffer->shape.size() == 2 && !CoversWholeBuffer(op->dst)) {
    if (layouts.erase(op->dst.buffer.get())) changed = true;
    forced_shared.insert(op->dst.buffer.get());
  }
  auto it = layouts.find(op->src.buffer.get());
  if (it != layouts.end() && !it->second.layout->is_rows() && op->dim == 1 &&
      IsRowVector(op->dst.buffer, it->second.layout->m())) {
    Assign(op->dst.buffer, it->second.layout->Rows(),
           "T.reduce of " + op->src.buffer->name, op->span);
  }
  IRVisitor::Visit_(op);
}

void FragmentLayoutInference::Visit_(const CopyOp* op) {
  if (IsFragment(op->src.buffer) && IsFragment(op->dst.buffer)) {
    // Only fills in a missing layout: a copy between two different layouts converts
    // (through shared memory, see FragmentRewriter).
    // Whole fragment to whole fragment of one shape only: one row of a 2-D fragment copied
    // into a per-row vector says nothing about the 2-D fragment's layout.
    auto s = layouts.find(op->src.buffer.get()), d = layouts.find(op->dst.buffer.get());
    bool whole = CoversWholeBuffer(op->src) && CoversWholeBuffer(op->dst) &&
                 op->src.buffer->shape.size() == op->dst.buffer->shape.size();
    if (!whole) {
      s = d = layouts.end();
    }
    if (s != layouts.end() && d == layouts.end()) {
      Assign(op->dst.buffer, s->second.layout, "T.copy from " + op->src.buffer->name, op->span);
    } else if (d != layouts.end() && s == layouts.end()) {
      Assign(op->src.buffer, d->second.layout, "T.copy to " + op->dst.buffer->name, op->span);
    }
  }
  IRVisitor::Visit_(op);
}

}  // namespace tl::transform::cuda
