// SPDX-License-Identifier: Apache-2.0
/// \file Small helpers on regions shared by the tile-op lowerings of every target.
#pragma once

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

/// 0 <= idx < shape for every dimension (null when there are no indices).
inline ir::Expr InBounds(const ir::Buffer& b, const std::vector<ir::Expr>& idx) {
  ir::Expr cond;
  for (size_t i = 0; i < idx.size(); ++i) {
    cond = ir::And(cond, ir::And(ir::GE(idx[i], ir::MakeInt(0, idx[i]->dtype)), ir::LT(idx[i], b->shape[i])));
  }
  return cond;
}

/// Zero of a dtype.
inline ir::Expr Zero(ir::DType t) { return t.IsFloat() ? ir::MakeFloat(0, t) : ir::MakeInt(0, t); }

}  // namespace tl::transform
