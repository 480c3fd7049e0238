// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layouts and the shared-memory swizzle (see layout/fragment.h).
#include "tl/layout/fragment.h"

#include <algorithm>
#include <cstdlib>

namespace tl::layout {

using namespace ir;  // NOLINT: implementation file

bool PartitionWarps(int64_t m, int64_t n, int64_t num_warps, GemmPolicy policy, WarpPartition* out) {
  bool found = false;
  int64_t best_cost = 0;
  for (int64_t wm = 1; wm <= num_warps; ++wm) {
    if (num_warps % wm) continue;
    int64_t wn = num_warps / wm;
    if (m % (16 * wm) || n % (8 * wn)) continue;
    if (policy == GemmPolicy::kFullRow && wn != 1) continue;
    if (policy == GemmPolicy::kFullCol && wm != 1) continue;
    // Square: the warp tile whose sides are closest (fewest fragment loads per mma).
    int64_t cost = std::llabs(m / wm - n / wn);
    if (!found || cost < best_cost) {
      found = true;
      best_cost = cost;
      *out = WarpPartition{wm, wn};
    }
  }
  if (!found && policy != GemmPolicy::kSquare) return PartitionWarps(m, n, num_warps, GemmPolicy::kSquare, out);
  return found;
}

MmaAccumulatorLayout::MmaAccumulatorLayout(int64_t m, int64_t n, WarpPartition warps)
    : m_(m), n_(n), warps_(warps), tile_m_(m / warps.warps_m), tile_n_(n / warps.warps_n) {}

namespace {
Expr C(int64_t v) { return MakeInt(v); }
}  // namespace

Expr MmaAccumulatorLayout::Thread(const Expr& i, const Expr& j) const {
  Expr warp = FloorDiv(i, C(tile_m_)) * C(warps_.warps_n) + FloorDiv(j, C(tile_n_));
  Expr r = FloorMod(i, C(16)), c = FloorMod(j, C(8));
  Expr lane = FloorMod(r, C(8)) * C(4) + FloorDiv(c, C(2));
  return warp * C(32) + lane;
}

Expr MmaAccumulatorLayout::Local(const Expr& i, const Expr& j) const {
  Expr ii = FloorMod(i, C(tile_m_)), jj = FloorMod(j, C(tile_n_));
  Expr tile = FloorDiv(ii, C(16)) * C(tile_n_ / 8) + FloorDiv(jj, C(8));
  Expr reg = FloorDiv(FloorMod(ii, C(16)), C(8)) * C(2) + FloorMod(jj, C(2));
  return tile * C(4) + reg;
}

MmaAccumulatorLayout MmaAccumulatorLayout::Rows() const {
  MmaAccumulatorLayout rows = *this;
  rows.n_ = 0;
  rows.rows_ = true;
  return rows;
}

Expr MmaAccumulatorLayout::RowLocal(const Expr& local) const {
  Expr tile = FloorDiv(local, C(4)), reg = FloorMod(local, C(4));
  return FloorDiv(tile, C(tile_n_ / 8)) * C(2) + FloorDiv(reg, C(2));
}

std::pair<Expr, Expr> MmaAccumulatorLayout::Inverse(const Expr& thread, const Expr& local) const {
  Expr warp = FloorDiv(thread, C(32)), lane = FloorMod(thread, C(32));
  Expr warp_m = FloorDiv(warp, C(warps_.warps_n)), warp_n = FloorMod(warp, C(warps_.warps_n));
  if (rows_) {
    Expr row = FloorDiv(local, C(2)) * C(16) + FloorMod(local, C(2)) * C(8) + FloorDiv(lane, C(4));
    return {warp_m * C(tile_m_) + row, MakeInt(0)};
  }
  Expr reg = FloorMod(local, C(4)), tile = FloorDiv(local, C(4));
  Expr mt = FloorDiv(tile, C(tile_n_ / 8)), nt = FloorMod(tile, C(tile_n_ / 8));
  Expr r = FloorDiv(lane, C(4)) + FloorDiv(reg, C(2)) * C(8);
  Expr c = FloorMod(lane, C(4)) * C(2) + FloorMod(reg, C(2));
  return {warp_m * C(tile_m_) + mt * C(16) + r, warp_n * C(tile_n_) + nt * C(8) + c};
}

std::string MmaAccumulatorLayout::ToString() const {
  if (rows_) {
    return "mma_rows(" + std::to_string(m_) + ", warps " + std::to_string(warps_.warps_m) + "x" +
           std::to_string(warps_.warps_n) + ")";
  }
  return "mma_acc(" + std::to_string(m_) + "x" + std::to_string(n_) + ", warps " +
         std::to_string(warps_.warps_m) + "x" + std::to_string(warps_.warps_n) + ")";
}

namespace {
int SwizzleShift(int64_t row_bytes) {
  int shift = 7;
  while ((int64_t{1} << shift) < row_bytes) ++shift;
  return shift;
}
}  // namespace

Expr SwizzleOffset(const Expr& elem_offset, int elem_bytes, int64_t row_bytes) {
  Expr bytes = elem_offset * C(elem_bytes);
  Expr row_bits = Binary::Make(BinOp::kBitAnd, Binary::Make(BinOp::kShr, bytes, C(SwizzleShift(row_bytes))), C(7));
  Expr swizzled = Binary::Make(BinOp::kBitXor, bytes, Binary::Make(BinOp::kShl, row_bits, C(4)));
  return FloorDiv(swizzled, C(elem_bytes));
}

bool CanSwizzle(int64_t row_bytes, int64_t tile_bytes) {
  bool pow2 = row_bytes >= 64 && (row_bytes & (row_bytes - 1)) == 0;
  return pow2 && tile_bytes % (8 * std::max<int64_t>(row_bytes, 128)) == 0;
}

}  // namespace tl::layout
