// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layouts: how a tile held in registers is spread over a block's threads.
///
/// A fragment of logical shape S is stored as `num_local` registers in each of
/// `num_threads` threads. Thread(idx) and Local(idx) give the owner and register of an
/// element; Inverse(thread, local) gives the element a register holds, which is how a
/// T.Parallel loop over a fragment becomes a loop over each thread's own registers.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::layout {

/// The warp grid of a tile GEMM: warps_m x warps_n warps, each owning a
/// (M / warps_m) x (N / warps_n) part of C. Warps are numbered row-major over the grid
/// (warp w at (w / warps_n, w % warps_n)), or, with m_fastest, column-major (at
/// (w % warps_m, w / warps_m)): the order of wgmma, whose warpgroups (4 consecutive warps,
/// 64 rows) split N between them when there are more warpgroups than 64-row blocks.
///
/// interleave_m: a warp's rows are 16-row slices spaced 16 x warps_m apart (slice t of warp
/// row wm holds rows (t warps_m + wm) 16 ..), not one contiguous block: the layout of a
/// wgmma accumulator with fewer warpgroups than 64-row blocks, each warpgroup issuing one
/// m64 wgmma per block it owns (a 128-row tile on 128 threads).
struct WarpPartition {
  int64_t warps_m = 1, warps_n = 1;
  bool m_fastest = false;
  bool interleave_m = false;
  /// The two orders coincide with one warp column; m_fastest is kept only when it matters.
  WarpPartition Normalized() const { return {warps_m, warps_n, m_fastest && warps_n > 1, interleave_m}; }
  bool operator==(const WarpPartition& o) const {
    WarpPartition a = Normalized(), b = o.Normalized();
    return a.warps_m == b.warps_m && a.warps_n == b.warps_n && a.m_fastest == b.m_fastest &&
           a.interleave_m == b.interleave_m;
  }
};

/// Splits `num_warps` over an M x N accumulator as the policy asks (Square balances the
/// warp tile's sides, FullRow puts every warp along M, FullCol along N). Each warp tile
/// must be a multiple of 16 x 8 (one mma.m16n8 tile); returns false when no split fits.
bool PartitionWarps(int64_t m, int64_t n, int64_t num_warps, ir::GemmPolicy policy,
                    WarpPartition* out);

/// How a fragment of m x n elements (or a vector of m per-row values: n() == 0,
/// is_rows()) is spread over the block's threads. Each thread holds num_local()
/// registers; Inverse(thread, local) gives the element a register holds.
///
/// Row reductions rely on one shape shared by every layout here: the threads that hold
/// parts of one row are row_lanes() consecutive lanes (an aligned group) of each of
/// row_warps() warps, and RowWarp(tx) is the warp's index along the row.
class FragmentLayout {
 public:
  virtual ~FragmentLayout() = default;
  virtual int64_t m() const = 0;
  virtual int64_t n() const = 0;
  virtual bool is_rows() const = 0;
  virtual int64_t num_threads() const = 0;
  virtual int64_t num_local() const = 0;
  /// The layout of a vector of m() per-row values next to this tile: each thread holds
  /// the rows it holds here (the lanes of a row keep identical copies).
  virtual std::shared_ptr<const FragmentLayout> Rows() const = 0;
  /// For a tile layout: the register, in Rows(), of the row of register `local`.
  virtual ir::Expr RowLocal(const ir::Expr& local) const = 0;
  /// (i, j) of register `local` of thread `thread` ((i, 0) for a Rows() layout).
  virtual std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const = 0;
  virtual int64_t row_lanes() const = 0;
  virtual int64_t row_warps() const = 0;
  /// The index along its row of the warp holding thread `thread`: (tx / 32) % row_warps().
  virtual ir::Expr RowWarp(const ir::Expr& thread) const;
  /// How many registers of each of its rows a thread holds (for a tile layout), and the
  /// register of the q-th of them in the thread's row `row_local` (a register of Rows()).
  virtual int64_t regs_per_row() const = 0;
  virtual ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& q) const = 0;
  /// Registers come in runs of vec() that hold consecutive columns of one row (the run
  /// starts at a register index that is a multiple of vec()): one vector access each.
  virtual int64_t vec() const { return 1; }
  /// A tile layout in which every thread holds every row of its columns: register
  /// row * regs_per_row() + q holds (row, column of register q). Then an element of another
  /// row in the thread's column (F[s, j] in a loop over F[i, j]) is one of its registers,
  /// and a vector of per-column values (V[j]) can be held as Columns().
  virtual bool whole_columns() const { return false; }
  /// The layout of a vector of n() per-column values next to this tile (V[j] in a nest over
  /// F[i, j]): each thread holds the values of the columns it holds here; nullptr when the
  /// layout has none. With whole_columns() the thread's registers' column order; for an mma
  /// accumulator, MmaColumnsLayout.
  virtual std::shared_ptr<const FragmentLayout> Columns() const { return nullptr; }
  /// With Columns(): the register there holding the column of register `local` here.
  virtual ir::Expr ColumnLocal(const ir::Expr& local) const { return local; }
  /// For a vector layout whose elements several threads hold (copies of a row, or of a
  /// column): whether `thread` holds the first copy of its elements, which alone makes a write
  /// to memory; nullptr when every thread's copy is the first. By default the first of
  /// row_lanes() lanes in the first of row_warps() warps.
  virtual ir::Expr FirstCopy(const ir::Expr& thread) const;
  /// The first of the num_threads() consecutive threads that hold the fragment: 0, or the
  /// start of a range of threads a branch selects (ThreadRangeLayout).
  virtual int64_t first_thread() const { return 0; }
  /// The layout this one is held in, apart from which threads hold it: itself, or the inner
  /// layout of a ThreadRangeLayout (what a GEMM's instruction choice reads).
  virtual const FragmentLayout* Base() const { return this; }
  /// A layout of m() x p in which each thread holds (i, j) exactly when it holds (i, j + p s)
  /// here for every s: then a nest over that tile reading this one at F[i, j + p s] finds
  /// its element in the thread's own registers (FoldedLocal). nullptr when there is none.
  virtual std::shared_ptr<const FragmentLayout> FoldedColumns(int64_t /*p*/) const { return nullptr; }
  /// With FoldedColumns(p) = L: the register here holding the element (i, j + p s) of the
  /// element (i, j) that register `folded_local` holds in L.
  virtual ir::Expr FoldedLocal(int64_t /*p*/, const ir::Expr& folded_local, const ir::Expr& /*s*/) const {
    return folded_local;
  }
  /// Canonical text, used in messages and for equality: "mma_acc(128x128, warps 2x2)".
  virtual std::string ToString() const = 0;
  bool operator==(const FragmentLayout& o) const { return ToString() == o.ToString(); }
  bool operator!=(const FragmentLayout& o) const { return !(*this == o); }
};

using FragmentLayoutRef = std::shared_ptr<const FragmentLayout>;

/// The accumulator layout of mma.sync m16n8kX with a warp grid. Within one 16x8 mma tile,
/// lane l holds rows l/4 and l/4 + 8, columns 2*(l%4) and 2*(l%4)+1 (PTX ISA, "matrix
/// fragments for mma.m16n8k16"); a warp's tiles are numbered row-major over its part of C
/// and each contributes 4 consecutive registers. In Rows(), register r = 2 * mt + h holds
/// row mt * 16 + h * 8 + g.
class MmaAccumulatorLayout : public FragmentLayout {
 public:
  MmaAccumulatorLayout(int64_t m, int64_t n, WarpPartition warps);
  FragmentLayoutRef Rows() const override;
  bool is_rows() const override { return rows_; }
  int64_t m() const override { return m_; }
  int64_t n() const override { return n_; }
  int64_t num_threads() const override { return 32 * warps_.warps_m * warps_.warps_n; }
  int64_t num_local() const override { return rows_ ? tile_m_ / 16 * 2 : m_ * n_ / num_threads(); }
  ir::Expr RowLocal(const ir::Expr& local) const override;
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const override;
  int64_t row_lanes() const override { return 4; }
  int64_t row_warps() const override { return warps_.warps_n; }
  ir::Expr RowWarp(const ir::Expr& thread) const override;
  int64_t regs_per_row() const override { return tile_n_ / 8 * 2; }
  ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& q) const override;
  /// Registers 2k and 2k+1 hold columns 2*(lane%4) and 2*(lane%4)+1 of one row.
  int64_t vec() const override { return rows_ ? 1 : 2; }
  /// A vector of per-column values (MmaColumnsLayout); register (mt, nt, h, c) of the tile
  /// reads register 2 nt + c of it.
  FragmentLayoutRef Columns() const override;
  ir::Expr ColumnLocal(const ir::Expr& local) const override;
  std::string ToString() const override;
  const WarpPartition& warps() const { return warps_; }
  /// The part of C one warp owns: tile_m() x tile_n().
  int64_t tile_m() const { return tile_m_; }
  int64_t tile_n() const { return tile_n_; }
  /// Whether each run of 8 registers (8g .. 8g+7) is two 16x8 tiles side by side, the four
  /// 8x8 matrices stmatrix.x4 stores from registers pairs 2i, 2i+1 (i = 0..3): rows 0-7 and
  /// 8-15 of the left tile, then of the right one.
  bool stmatrix_groups() const { return !rows_ && tile_n_ % 16 == 0; }
  /// The element whose address `thread` gives to the stmatrix.x4 of group g: the first
  /// element of row lane % 8 of matrix lane / 8 (lane = thread % 32). Lane l's register
  /// 8g + 2i + h then lands lane l / 4's row start of matrix i, plus 2 (l % 4) + h columns.
  std::pair<ir::Expr, ir::Expr> StmatrixRowStart(const ir::Expr& thread, const ir::Expr& group) const;

 private:
  int64_t m_, n_;
  WarpPartition warps_;
  int64_t tile_m_, tile_n_;  ///< the part of C one warp owns
  bool rows_ = false;
};

/// A vector of n per-column values next to an mma accumulator of n columns (V[j] read in a
/// nest over C[i, j], as a mask of valid columns is): each thread holds the values of the
/// columns it holds in the accumulator, 2 per 8-column mma tile of its warp's part, so that
/// a nest over either walks registers only. Register q = 2 nt + c holds column
/// warp_n tile_n + 8 nt + 2 (lane % 4) + c. A column's copies are the 8 lane groups of a warp
/// and the warps_m warps of its warp column; the first copy (lanes 0-3 of warp row 0) makes
/// the writes to memory. Indexed as a vector (is_rows(); Inverse gives (column, 0)); it takes
/// part in no row reduction.
class MmaColumnsLayout : public FragmentLayout {
 public:
  explicit MmaColumnsLayout(const MmaAccumulatorLayout& tile) : tile_(tile) {}
  FragmentLayoutRef Rows() const override { return std::make_shared<MmaColumnsLayout>(tile_); }
  bool is_rows() const override { return true; }
  int64_t m() const override { return tile_.n(); }
  int64_t n() const override { return 0; }
  int64_t num_threads() const override { return tile_.num_threads(); }
  int64_t num_local() const override { return tile_.tile_n() / 8 * 2; }
  ir::Expr RowLocal(const ir::Expr& local) const override { return local; }
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const override;
  int64_t row_lanes() const override { return 1; }
  int64_t row_warps() const override { return 1; }
  int64_t regs_per_row() const override { return 1; }
  ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& /*q*/) const override { return row_local; }
  /// Registers 2k and 2k+1 hold consecutive columns.
  int64_t vec() const override { return 2; }
  ir::Expr FirstCopy(const ir::Expr& thread) const override;
  std::string ToString() const override;

 private:
  MmaAccumulatorLayout tile_;
};

/// The A operand of mma.sync m16n8k8 on tf32, held in registers (T.gemm with a tfloat32
/// register fragment A): an m x k fragment over the warp grid of the GEMM's accumulator, warp
/// row wm holding its rows as the accumulator does (16-row slices) and every warp of that row
/// an identical copy (A is read by all the warps along N). Within a slice, lane l holds rows
/// l/4 and l/4 + 8 of column l%4 of every group of 4 columns (PTX ISA, "matrix fragments for
/// mma.m16n8k8", .tf32: a0..a3 = (g, t), (g+8, t), (g, t+4), (g+8, t+4)); register
/// (mt * (k/4) + group) * 2 + h holds row slice(mt) + l/4 + 8h, column 4 group + l%4. The four
/// registers of k-step s of slice mt are 4 consecutive ones starting at (mt k/4 + 2 s) 2: an
/// mma's A operand. Rows: a row's parts are 4 lanes of one warp (the copies along N are not
/// parts), so a row reduction stays in the warp.
class MmaTf32ALayout : public FragmentLayout {
 public:
  MmaTf32ALayout(int64_t m, int64_t k, WarpPartition warps);
  FragmentLayoutRef Rows() const override;
  bool is_rows() const override { return false; }
  int64_t m() const override { return m_; }
  int64_t n() const override { return k_; }
  int64_t num_threads() const override { return 32 * warps_.warps_m * warps_.warps_n; }
  int64_t num_local() const override { return tile_m_ / 16 * groups() * 2; }
  ir::Expr RowLocal(const ir::Expr& local) const override;
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const override;
  int64_t row_lanes() const override { return 4; }
  int64_t row_warps() const override { return 1; }
  int64_t regs_per_row() const override { return groups(); }
  ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& q) const override;
  std::shared_ptr<const FragmentLayout> FoldedColumns(int64_t p) const override;
  ir::Expr FoldedLocal(int64_t p, const ir::Expr& folded_local, const ir::Expr& s) const override;
  std::string ToString() const override;
  const WarpPartition& warps() const { return warps_; }

 private:
  int64_t groups() const { return k_ / 4; }
  int64_t m_, k_;
  WarpPartition warps_;
  int64_t tile_m_;
};

/// The layout of a fragment that no T.gemm constrains: each row is cut into chunks of
/// vec consecutive columns dealt round-robin to `lanes` consecutive threads, and the
/// block's threads / lanes groups take rows round-robin. A thread's registers are its
/// rows in order, each row's chunks in order. Neighbouring threads hold neighbouring
/// chunks, so copies to and from memory are coalesced vector accesses, and a row
/// reduction is an in-thread fold plus shuffles within a group of lanes.
class RowStripLayout : public FragmentLayout {
 public:
  /// The layout for an m x n fragment over `threads` threads: widest vec (8, 4, 2, 1),
  /// then the most lanes per row, such that the tile splits evenly; nullptr if none does.
  static std::shared_ptr<const RowStripLayout> Choose(int64_t m, int64_t n, int64_t threads);
  /// The layout in which every thread holds whole columns (lanes = threads: whole_columns()),
  /// widest vec first; nullptr if n is not a multiple of threads.
  static std::shared_ptr<const RowStripLayout> ChooseWholeColumns(int64_t m, int64_t n, int64_t threads);
  RowStripLayout(int64_t m, int64_t n, int64_t threads, int64_t vec, int64_t lanes, bool rows = false);
  FragmentLayoutRef Rows() const override;
  bool is_rows() const override { return rows_; }
  int64_t m() const override { return m_; }
  int64_t n() const override { return rows_ ? 0 : n_; }
  int64_t num_threads() const override { return threads_; }
  int64_t num_local() const override { return m_ / row_groups() * (rows_ ? 1 : n_ / lanes_); }
  ir::Expr RowLocal(const ir::Expr& local) const override;
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const override;
  int64_t row_lanes() const override { return lanes_ < 32 ? lanes_ : 32; }
  int64_t row_warps() const override { return lanes_ < 32 ? 1 : lanes_ / 32; }
  int64_t regs_per_row() const override { return n_ / lanes_; }
  ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& q) const override;
  int64_t vec() const override { return rows_ ? 1 : vec_; }
  bool whole_columns() const override { return !rows_ && lanes_ == threads_; }
  std::shared_ptr<const FragmentLayout> Columns() const override;
  /// (whole columns: register row * regs_per_row() + q holds the column of register q)
  ir::Expr ColumnLocal(const ir::Expr& local) const override;
  std::string ToString() const override;

 private:
  int64_t row_groups() const { return threads_ / lanes_; }
  int64_t m_, n_, threads_, vec_, lanes_;
  bool rows_;
};

/// The layout of a 1-D fragment that no tile constrains (a vector of `length` elements used
/// element-wise and copied whole): runs of vec consecutive elements dealt round-robin to
/// the block's threads, thread t holding runs t, t + threads, ... (its registers in that
/// order). Neighbouring threads hold neighbouring runs, so copies to and from memory are
/// coalesced vector accesses. Indexed like a per-row vector (is_rows(): Inverse gives
/// (element, 0)), but no element is held twice; it takes part in no row reduction.
class VectorLayout : public FragmentLayout {
 public:
  /// Widest vec (8, 4, 2, 1) with length a multiple of vec x threads; nullptr if none.
  static std::shared_ptr<const VectorLayout> Choose(int64_t length, int64_t threads);
  VectorLayout(int64_t length, int64_t threads, int64_t vec);
  FragmentLayoutRef Rows() const override;
  bool is_rows() const override { return true; }
  int64_t m() const override { return length_; }
  int64_t n() const override { return 0; }
  int64_t num_threads() const override { return threads_; }
  int64_t num_local() const override { return length_ / threads_; }
  ir::Expr RowLocal(const ir::Expr& local) const override { return local; }
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const override;
  int64_t row_lanes() const override { return 1; }
  int64_t row_warps() const override { return 1; }
  int64_t regs_per_row() const override { return 1; }
  ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& q) const override { return row_local; }
  int64_t vec() const override { return vec_; }
  std::string ToString() const override;

 private:
  int64_t length_, threads_, vec_;
};

/// A layout held by threads first .. first + inner.num_threads() - 1 only: those of a branch
/// on a range of whole warps (`else:` of `if tx < 32:`), numbered from the range's first.
/// Every other method is the inner layout's.
class ThreadRangeLayout : public FragmentLayout {
 public:
  ThreadRangeLayout(FragmentLayoutRef inner, int64_t first) : inner_(std::move(inner)), first_(first) {}
  int64_t m() const override { return inner_->m(); }
  int64_t n() const override { return inner_->n(); }
  bool is_rows() const override { return inner_->is_rows(); }
  int64_t num_threads() const override { return inner_->num_threads(); }
  int64_t num_local() const override { return inner_->num_local(); }
  FragmentLayoutRef Rows() const override;
  FragmentLayoutRef Columns() const override;
  ir::Expr ColumnLocal(const ir::Expr& local) const override { return inner_->ColumnLocal(local); }
  ir::Expr FirstCopy(const ir::Expr& thread) const override;
  ir::Expr RowLocal(const ir::Expr& local) const override { return inner_->RowLocal(local); }
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const override;
  int64_t row_lanes() const override { return inner_->row_lanes(); }
  int64_t row_warps() const override { return inner_->row_warps(); }
  ir::Expr RowWarp(const ir::Expr& thread) const override;
  int64_t regs_per_row() const override { return inner_->regs_per_row(); }
  ir::Expr RowReg(const ir::Expr& row_local, const ir::Expr& q) const override { return inner_->RowReg(row_local, q); }
  int64_t vec() const override { return inner_->vec(); }
  bool whole_columns() const override { return inner_->whole_columns(); }
  int64_t first_thread() const override { return first_; }
  const FragmentLayout* Base() const override { return inner_->Base(); }
  std::string ToString() const override;

 private:
  FragmentLayoutRef inner_;
  int64_t first_;
};

/// XOR swizzle of a row-major shared tile in 16-byte chunks: with rows of R bytes (a power
/// of two, at least 64) and L = max(R, 128), the chunk index within each 128-byte segment
/// is XORed with (byte_offset / L) % 8, i.e. with the row number (R >= 128) or the pair of
/// rows (R = 64). Eight consecutive rows at the same column then fall in eight different
/// bank groups, so ldmatrix reads and 16-byte cp.async writes are free of bank conflicts.
/// A bijection on every block of 8 * L bytes. Offsets are in elements of `elem_bytes`.
ir::Expr SwizzleOffset(const ir::Expr& elem_offset, int elem_bytes, int64_t row_bytes);
/// log2 of the bytes above which SwizzleOffset takes its row bits: 7 for rows up to 128
/// bytes, else log2 of the row (a swizzle atom is 8 << SwizzleShift bytes).
int SwizzleShift(int64_t row_bytes);
/// Whether a tile with these rows can be swizzled (see SwizzleOffset).
bool CanSwizzle(int64_t row_bytes, int64_t tile_bytes);

}  // namespace tl::layout
