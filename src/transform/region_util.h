// SPDX-License-Identifier: Apache-2.0
/// \file Small helpers on regions shared by the tile-op lowerings of every target, and a
/// T.copy as a loop nest (the CPU's lowering of copies, and the one copies with a safe value
/// take on every target).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::transform {

inline bool IsOne(const ir::Expr& e) {
  int64_t v;
  return ir::AsConstInt(e, &v) && v == 1;
}

/// The dimensions of a region that form its tile (extent != 1).
inline std::vector<size_t> TileDims(const ir::Region& r) {
  std::vector<size_t> dims;
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    if (!IsOne(r.ranges[i].extent)) dims.push_back(i);
  }
  return dims;
}

/// combined, except NaN when acc or x is NaN (the NaN-propagating max / min reductions):
/// acc + x is NaN exactly when one of them is.
inline ir::Expr NanPropagating(const ir::Expr& acc, const ir::Expr& x, const ir::Expr& combined) {
  using ir::BinOp;
  ir::Expr nan = ir::Binary::Make(BinOp::kOr, ir::Binary::Make(BinOp::kNE, acc, acc),
                                  ir::Binary::Make(BinOp::kNE, x, x));
  return ir::Select::Make(nan, acc + x, combined);
}

/// Whether `r` is its whole buffer (every range from 0 over the full, constant extent).
inline bool CoversWholeBuffer(const ir::Region& r) {
  if (r.ranges.size() != r.buffer->shape.size()) return false;
  for (size_t k = 0; k < r.ranges.size(); ++k) {
    int64_t lo = -1, e = -1, full = -2;
    if (!ir::AsConstInt(r.ranges[k].min, &lo) || !ir::AsConstInt(r.ranges[k].extent, &e) ||
        !ir::AsConstInt(r.buffer->shape[k], &full) || lo != 0 || e != full) {
      return false;
    }
  }
  return true;
}

/// 0 <= idx < shape for every dimension (null when there are no indices).
inline ir::Expr InBounds(const ir::Buffer& b, const std::vector<ir::Expr>& idx) {
  ir::Expr cond;
  for (size_t i = 0; i < idx.size(); ++i) {
    cond = ir::And(cond, ir::And(ir::GE(idx[i], ir::MakeInt(0, idx[i]->dtype)), ir::LT(idx[i], b->shape[i])));
  }
  return cond;
}

/// Zero of a dtype.
/// `address_of(b[idx])`: the address of one element, as intrinsics take their operands.
inline ir::Expr AddressOf(const ir::Buffer& b, std::vector<ir::Expr> idx) {
  return ir::Call::Make(ir::DType::Handle(), "address_of", {ir::BufferLoad::Make(b, std::move(idx))});
}

inline ir::Expr Zero(ir::DType t) { return t.IsFloat() ? ir::MakeFloat(0, t) : ir::MakeInt(0, t); }

/// Indices into `r` for tile coordinates `vars` (one per tile dim, in order).
inline std::vector<ir::Expr> RegionIndices(const ir::Region& r, const std::vector<ir::Expr>& vars) {
  std::vector<ir::Expr> idx;
  size_t next = 0;
  for (const ir::Range& rg : r.ranges) {
    idx.push_back(IsOne(rg.extent) ? rg.min : rg.min + vars[next++]);
  }
  return idx;
}

/// Nest of loops over `extents`, innermost last; `body(vars)` builds the innermost body.
inline ir::Stmt LoopNest(const std::vector<ir::Expr>& extents, const std::string& prefix, ir::ForKind kind,
                         const Span& span, const std::function<ir::Stmt(const std::vector<ir::Expr>&)>& body) {
  std::vector<ir::VarRef> vars;
  std::vector<ir::Expr> var_exprs;
  for (size_t i = 0; i < extents.size(); ++i) {
    vars.push_back(ir::Var::Make(prefix + std::to_string(i), extents[i]->dtype));
    var_exprs.push_back(vars.back());
  }
  ir::Stmt s = body(var_exprs);
  for (size_t i = extents.size(); i-- > 0;) {
    s = ir::For::Make(vars[i], ir::MakeInt(0, extents[i]->dtype), extents[i], kind, s, {}, span);
  }
  return s;
}

/// `s` under `cond` (as is when there is no condition).
inline ir::Stmt Guard(ir::Expr cond, ir::Stmt s, const Span& span) {
  return cond ? ir::IfThenElse::Make(cond, s, nullptr, span) : s;
}

/// The extents of a region's tile dimensions (those of extent other than 1).
inline std::vector<ir::Expr> TileExtents(const ir::Region& r) {
  std::vector<ir::Expr> e;
  for (size_t d : TileDims(r)) e.push_back(r.ranges[d].extent);
  return e;
}

/// A T.copy as a T.Parallel nest over the destination: out-of-range source elements read
/// `pad` (0 when null; T.annotate_safe_value's value), out-of-range destinations are skipped.
inline ir::Stmt CopyAsLoops(const ir::CopyOp* op, ir::Expr pad) {
  using namespace ir;  // NOLINT: the helpers of this header
  return LoopNest(TileExtents(op->dst), "i", ForKind::kParallel, op->span, [&](auto& v) {
    auto si = RegionIndices(op->src, v), di = RegionIndices(op->dst, v);
    Expr value = Cast::Make(op->dst.buffer->dtype, BufferLoad::Make(op->src.buffer, si));
    Expr src_ok = InBounds(op->src.buffer, si);
    // Out-of-range reads give the pad; the select keeps the load from being evaluated.
    Expr fill = pad ? Cast::Make(op->dst.buffer->dtype, pad) : Zero(op->dst.buffer->dtype);
    if (src_ok) value = Select::Make(src_ok, value, fill);
    return Guard(InBounds(op->dst.buffer, di), BufferStore::Make(op->dst.buffer, di, value, op->span), op->span);
  });
}

}  // namespace tl::transform
