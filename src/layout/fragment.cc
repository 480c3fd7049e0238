// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layouts and the shared-memory swizzle (see layout/fragment.h).
#include "tl/layout/fragment.h"
#include "tl/target/warp.h"

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
    // FullRow: as many warps along M as the rows allow, the rest along N (upstream's
    // policy: 64 rows on 8 warps are 4 x 2); FullCol the same along N. Square: the warp
    // tile whose sides are closest (fewest fragment loads per mma).
    int64_t cost = policy == GemmPolicy::kFullRow   ? -wm
                   : policy == GemmPolicy::kFullCol ? -wn
                                                    : std::llabs(m / wm - n / wn);
    if (!found || cost < best_cost) {
      found = true;
      best_cost = cost;
      *out = WarpPartition{wm, wn};
    }
  }
  return found;
}

MmaAccumulatorLayout::MmaAccumulatorLayout(int64_t m, int64_t n, WarpPartition warps)
    : m_(m), n_(n), warps_(warps.Normalized()), tile_m_(m / warps.warps_m), tile_n_(n / warps.warps_n) {
  if (tile_m_ == 16) warps_.interleave_m = false;  // one slice per warp: both orders agree
}

namespace {
Expr C(int64_t v) { return MakeInt(v); }
constexpr int64_t kWarp = target::kWarpSize;
}  // namespace

Expr FragmentLayout::RowWarp(const Expr& thread) const { return FloorMod(FloorDiv(thread, C(kWarp)), C(row_warps())); }

Expr FragmentLayout::FirstCopy(const Expr& thread) const {
  Expr first;
  if (row_lanes() > 1) first = EQ(FloorMod(thread, C(row_lanes())), C(0));
  if (row_warps() > 1) first = And(first, EQ(RowWarp(thread), C(0)));
  return first;
}

Expr MmaAccumulatorLayout::RowWarp(const Expr& thread) const {
  Expr warp = FloorDiv(thread, C(kWarp));
  return warps_.m_fastest ? FloorDiv(warp, C(warps_.warps_m)) : FloorMod(warp, C(warps_.warps_n));
}

FragmentLayoutRef MmaAccumulatorLayout::Rows() const {
  auto rows = std::make_shared<MmaAccumulatorLayout>(*this);
  rows->n_ = 0;
  rows->rows_ = true;
  return rows;
}

Expr MmaAccumulatorLayout::RowLocal(const Expr& local) const {
  Expr tile = FloorDiv(local, C(4)), reg = FloorMod(local, C(4));
  return FloorDiv(tile, C(tile_n_ / 8)) * C(2) + FloorDiv(reg, C(2));
}

Expr MmaAccumulatorLayout::RowReg(const Expr& row_local, const Expr& q) const {
  // Row register 2 * mt + h; q = 2 * nt + c walks the tile's n-tiles and column pairs.
  Expr mt = FloorDiv(row_local, C(2)), h = FloorMod(row_local, C(2));
  Expr nt = FloorDiv(q, C(2)), c = FloorMod(q, C(2));
  return (mt * C(tile_n_ / 8) + nt) * C(4) + h * C(2) + c;
}

std::pair<Expr, Expr> MmaAccumulatorLayout::Inverse(const Expr& thread, const Expr& local) const {
  Expr warp = FloorDiv(thread, C(kWarp)), lane = FloorMod(thread, C(kWarp));
  Expr warp_m = warps_.m_fastest ? FloorMod(warp, C(warps_.warps_m)) : FloorDiv(warp, C(warps_.warps_n));
  Expr warp_n = RowWarp(thread);
  // First row of the warp's 16-row slice mt.
  auto slice = [&](const Expr& mt) {
    return warps_.interleave_m ? (mt * C(warps_.warps_m) + warp_m) * C(16) : warp_m * C(tile_m_) + mt * C(16);
  };
  if (rows_) {
    Expr in_slice = FloorMod(local, C(2)) * C(8) + FloorDiv(lane, C(4));
    return {slice(FloorDiv(local, C(2))) + in_slice, MakeInt(0)};
  }
  Expr reg = FloorMod(local, C(4)), tile = FloorDiv(local, C(4));
  Expr mt = FloorDiv(tile, C(tile_n_ / 8)), nt = FloorMod(tile, C(tile_n_ / 8));
  Expr r = FloorDiv(lane, C(4)) + FloorDiv(reg, C(2)) * C(8);
  Expr c = FloorMod(lane, C(4)) * C(2) + FloorMod(reg, C(2));
  return {slice(mt) + r, warp_n * C(tile_n_) + nt * C(8) + c};
}

FragmentLayoutRef MmaAccumulatorLayout::Columns() const {
  return rows_ ? nullptr : std::make_shared<MmaColumnsLayout>(*this);
}

Expr MmaAccumulatorLayout::ColumnLocal(const Expr& local) const {
  // register (mt * tile_n / 8 + nt) * 4 + 2 h + c holds column 8 nt + 2 (lane % 4) + c
  return FloorMod(FloorDiv(local, C(4)), C(tile_n_ / 8)) * C(2) + FloorMod(local, C(2));
}

std::pair<Expr, Expr> MmaColumnsLayout::Inverse(const Expr& thread, const Expr& local) const {
  Expr lane = FloorMod(thread, C(kWarp));
  Expr column = tile_.RowWarp(thread) * C(tile_.tile_n()) + FloorDiv(local, C(2)) * C(8) +
                FloorMod(lane, C(4)) * C(2) + FloorMod(local, C(2));
  return {column, MakeInt(0)};
}

Expr MmaColumnsLayout::FirstCopy(const Expr& thread) const {
  // lanes 0-3 (lane / 4 is the row within a tile) of the warp at row 0 of the warp grid
  Expr warp = FloorDiv(thread, C(kWarp));
  const WarpPartition& w = tile_.warps();
  Expr warp_m = w.m_fastest ? FloorMod(warp, C(w.warps_m)) : FloorDiv(warp, C(w.warps_n));
  Expr first = LT(FloorMod(thread, C(kWarp)), C(4));
  return w.warps_m > 1 ? And(first, EQ(warp_m, C(0))) : first;
}

std::string MmaColumnsLayout::ToString() const { return "mma_cols(" + tile_.ToString() + ")"; }

std::pair<Expr, Expr> MmaAccumulatorLayout::StmatrixRowStart(const Expr& thread, const Expr& group) const {
  // Lane 4 r of the warp holds row r of a matrix's left columns in its register pair 2 i
  // (Inverse: lane / 4 is the row in the 8x8 piece, and lane % 4 = 0 its first column).
  // (written as warp * 32 + lane' so that the simplifier sees the warp unchanged)
  Expr lane = FloorMod(thread, C(kWarp));
  return Inverse(FloorDiv(thread, C(kWarp)) * C(kWarp) + FloorMod(thread, C(8)) * C(4),
                 group * C(8) + FloorDiv(lane, C(8)) * C(2));
}

std::string MmaAccumulatorLayout::ToString() const {
  std::string warps = "warps " + std::to_string(warps_.warps_m) + "x" + std::to_string(warps_.warps_n) +
                      (warps_.m_fastest ? " m-fastest" : "") + (warps_.interleave_m ? " interleaved" : "");
  if (rows_) return "mma_rows(" + std::to_string(m_) + ", " + warps + ")";
  return "mma_acc(" + std::to_string(m_) + "x" + std::to_string(n_) + ", " + warps + ")";
}

MmaTf32ALayout::MmaTf32ALayout(int64_t m, int64_t k, WarpPartition warps)
    : m_(m), k_(k), warps_(warps.Normalized()), tile_m_(m / warps.warps_m) {
  if (tile_m_ == 16) warps_.interleave_m = false;  // as MmaAccumulatorLayout
}

FragmentLayoutRef MmaTf32ALayout::Rows() const {
  // The rows a thread holds are those of the accumulator with the same warp grid.
  return MmaAccumulatorLayout(m_, 8 * warps_.warps_n, warps_).Rows();
}

Expr MmaTf32ALayout::RowLocal(const Expr& local) const {
  return FloorDiv(local, C(2 * groups())) * C(2) + FloorMod(local, C(2));
}

Expr MmaTf32ALayout::RowReg(const Expr& row_local, const Expr& q) const {
  return (FloorDiv(row_local, C(2)) * C(groups()) + q) * C(2) + FloorMod(row_local, C(2));
}

std::pair<Expr, Expr> MmaTf32ALayout::Inverse(const Expr& thread, const Expr& local) const {
  Expr warp = FloorDiv(thread, C(kWarp)), lane = FloorMod(thread, C(kWarp));
  Expr warp_m = warps_.m_fastest ? FloorMod(warp, C(warps_.warps_m)) : FloorDiv(warp, C(warps_.warps_n));
  Expr h = FloorMod(local, C(2)), group = FloorMod(FloorDiv(local, C(2)), C(groups()));
  Expr mt = FloorDiv(local, C(2 * groups()));
  Expr slice = warps_.interleave_m ? (mt * C(warps_.warps_m) + warp_m) * C(16) : warp_m * C(tile_m_) + mt * C(16);
  return {slice + FloorDiv(lane, C(4)) + h * C(8), group * C(4) + FloorMod(lane, C(4))};
}

std::shared_ptr<const FragmentLayout> MmaTf32ALayout::FoldedColumns(int64_t p) const {
  if (p <= 0 || p % 4 || k_ % p) return nullptr;
  return std::make_shared<MmaTf32ALayout>(m_, p, warps_);
}

Expr MmaTf32ALayout::FoldedLocal(int64_t p, const Expr& folded_local, const Expr& s) const {
  // (mt * p/4 + group) * 2 + h there -> (mt * k/4 + group + s * p/4) * 2 + h here
  const int64_t fg = p / 4;
  Expr h = FloorMod(folded_local, C(2)), group = FloorMod(FloorDiv(folded_local, C(2)), C(fg));
  Expr mt = FloorDiv(folded_local, C(2 * fg));
  return (mt * C(groups()) + group + s * C(fg)) * C(2) + h;
}

std::string MmaTf32ALayout::ToString() const {
  return "mma_tf32_a(" + std::to_string(m_) + "x" + std::to_string(k_) + ", warps " + std::to_string(warps_.warps_m) +
         "x" + std::to_string(warps_.warps_n) + (warps_.m_fastest ? " m-fastest" : "") +
         (warps_.interleave_m ? " interleaved" : "") + ")";
}

std::shared_ptr<const RowStripLayout> RowStripLayout::Choose(int64_t m, int64_t n, int64_t threads) {
  if (m <= 0 || n <= 0 || threads <= 0) return nullptr;
  for (int64_t vec : {8, 4, 2, 1}) {
    if (n % vec) continue;
    // Most lanes first: fewer registers per thread and shorter shuffle trees per row.
    int64_t top = 1;
    while (top * 2 <= threads) top *= 2;
    for (int64_t lanes = top; lanes >= 1; lanes /= 2) {
      if (threads % lanes || (n / vec) % lanes || m % (threads / lanes)) continue;
      return std::make_shared<RowStripLayout>(m, n, threads, vec, lanes);
    }
  }
  return nullptr;
}

std::shared_ptr<const RowStripLayout> RowStripLayout::ChooseWholeColumns(int64_t m, int64_t n, int64_t threads) {
  if (m <= 0 || n <= 0 || threads <= 0) return nullptr;
  for (int64_t vec : {8, 4, 2, 1}) {
    if (n % (vec * threads) == 0) return std::make_shared<RowStripLayout>(m, n, threads, vec, threads);
  }
  return nullptr;
}

FragmentLayoutRef RowStripLayout::Columns() const {
  // Chunk c of a row (vec columns) is held by lane c % lanes as its (c / lanes)-th chunk:
  // with lanes = threads, the dealing of VectorLayout(n, threads, vec).
  if (!whole_columns()) return nullptr;
  return std::make_shared<VectorLayout>(n_, threads_, vec_);
}

Expr RowStripLayout::ColumnLocal(const Expr& local) const { return FloorMod(local, C(n_ / lanes_)); }

RowStripLayout::RowStripLayout(int64_t m, int64_t n, int64_t threads, int64_t vec, int64_t lanes, bool rows)
    : m_(m), n_(n), threads_(threads), vec_(vec), lanes_(lanes), rows_(rows) {}

FragmentLayoutRef RowStripLayout::Rows() const {
  return std::make_shared<RowStripLayout>(m_, n_, threads_, vec_, lanes_, true);
}

Expr RowStripLayout::RowLocal(const Expr& local) const { return FloorDiv(local, C(n_ / lanes_)); }

Expr RowStripLayout::RowReg(const Expr& row_local, const Expr& q) const { return row_local * C(n_ / lanes_) + q; }

std::pair<Expr, Expr> RowStripLayout::Inverse(const Expr& thread, const Expr& local) const {
  Expr group = FloorDiv(thread, C(lanes_)), lane = FloorMod(thread, C(lanes_));
  if (rows_) return {local * C(row_groups()) + group, MakeInt(0)};
  int64_t per_row = n_ / lanes_;  // registers of one row in one thread
  Expr row = FloorDiv(local, C(per_row)), in_row = FloorMod(local, C(per_row));
  Expr chunk = FloorDiv(in_row, C(vec_)) * C(lanes_) + lane;
  return {row * C(row_groups()) + group, chunk * C(vec_) + FloorMod(in_row, C(vec_))};
}

std::string RowStripLayout::ToString() const {
  // A vector of rows depends only on how rows are dealt to threads.
  std::string common = std::to_string(threads_) + " threads, " + std::to_string(lanes_) + " per row";
  if (rows_) return "strip_rows(" + std::to_string(m_) + ", " + common + ")";
  return "strip(" + std::to_string(m_) + "x" + std::to_string(n_) + ", " + common + ", vec " + std::to_string(vec_) +
         ")";
}

FragmentLayoutRef ThreadRangeLayout::Rows() const {
  FragmentLayoutRef rows = inner_->Rows();
  return rows ? std::make_shared<ThreadRangeLayout>(rows, first_) : nullptr;
}

FragmentLayoutRef ThreadRangeLayout::Columns() const {
  FragmentLayoutRef columns = inner_->Columns();
  return columns ? std::make_shared<ThreadRangeLayout>(columns, first_) : nullptr;
}

std::pair<Expr, Expr> ThreadRangeLayout::Inverse(const Expr& thread, const Expr& local) const {
  return inner_->Inverse(thread - C(first_), local);
}

Expr ThreadRangeLayout::RowWarp(const Expr& thread) const { return inner_->RowWarp(thread - C(first_)); }

Expr ThreadRangeLayout::FirstCopy(const Expr& thread) const { return inner_->FirstCopy(thread - C(first_)); }

std::string ThreadRangeLayout::ToString() const {
  return "threads " + std::to_string(first_) + ".." + std::to_string(first_ + num_threads() - 1) + " " +
         inner_->ToString();
}

std::shared_ptr<const VectorLayout> VectorLayout::Choose(int64_t length, int64_t threads) {
  if (length <= 0 || threads <= 0) return nullptr;
  for (int64_t vec : {8, 4, 2, 1}) {
    if (length % (vec * threads) == 0) return std::make_shared<VectorLayout>(length, threads, vec);
  }
  return nullptr;
}

VectorLayout::VectorLayout(int64_t length, int64_t threads, int64_t vec)
    : length_(length), threads_(threads), vec_(vec) {}

FragmentLayoutRef VectorLayout::Rows() const { return std::make_shared<VectorLayout>(length_, threads_, vec_); }

std::pair<Expr, Expr> VectorLayout::Inverse(const Expr& thread, const Expr& local) const {
  // register `local` is element local % vec of the thread's run local / vec
  Expr run = FloorDiv(local, C(vec_)) * C(threads_) + thread;
  return {run * C(vec_) + FloorMod(local, C(vec_)), MakeInt(0)};
}

std::string VectorLayout::ToString() const {
  return "vector(" + std::to_string(length_) + ", " + std::to_string(threads_) + " threads, vec " +
         std::to_string(vec_) + ")";
}

int SwizzleShift(int64_t row_bytes) {
  int shift = 7;
  while ((int64_t{1} << shift) < row_bytes) ++shift;
  return shift;
}

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
