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
/// (M / warps_m) x (N / warps_n) part of C.
struct WarpPartition {
  int64_t warps_m = 1, warps_n = 1;
};

/// Splits `num_warps` over an M x N accumulator as the policy asks (Square balances the
/// warp tile's sides, FullRow puts every warp along M, FullCol along N). Each warp tile
/// must be a multiple of 16 x 8 (one mma.m16n8 tile); returns false when no split fits.
bool PartitionWarps(int64_t m, int64_t n, int64_t num_warps, ir::GemmPolicy policy,
                    WarpPartition* out);

/// The accumulator layout of mma.sync m16n8kX with a warp grid. Within one 16x8 mma tile,
/// lane l holds rows l/4 and l/4 + 8, columns 2*(l%4) and 2*(l%4)+1 (PTX ISA, "matrix
/// fragments for mma.m16n8k16"); a warp's tiles are numbered row-major over its part of C
/// and each contributes 4 consecutive registers.
class MmaAccumulatorLayout {
 public:
  MmaAccumulatorLayout(int64_t m, int64_t n, WarpPartition warps);
  /// The layout of a vector of m per-row values (a row reduction of this accumulator):
  /// each thread holds the rows it holds here, so the four lanes of a group (and the warps
  /// along N) keep identical copies. Register r = 2 * mt + h holds row mt * 16 + h * 8 + g.
  MmaAccumulatorLayout Rows() const;
  bool is_rows() const { return rows_; }
  int64_t m() const { return m_; }
  int64_t n() const { return n_; }
  int64_t num_threads() const { return 32 * warps_.warps_m * warps_.warps_n; }
  int64_t num_local() const { return rows_ ? tile_m_ / 16 * 2 : m_ * n_ / num_threads(); }
  /// For an accumulator layout: the register, in Rows(), of the row that register `local`
  /// of this layout belongs to.
  ir::Expr RowLocal(const ir::Expr& local) const;
  const WarpPartition& warps() const { return warps_; }
  /// The part of C one warp owns: tile_m() x tile_n().
  int64_t tile_m() const { return tile_m_; }
  int64_t tile_n() const { return tile_n_; }
  ir::Expr Thread(const ir::Expr& i, const ir::Expr& j) const;
  ir::Expr Local(const ir::Expr& i, const ir::Expr& j) const;
  /// (i, j) of register `local` of thread `thread` ((i, 0) for a Rows() layout).
  std::pair<ir::Expr, ir::Expr> Inverse(const ir::Expr& thread, const ir::Expr& local) const;
  /// Canonical text, used in messages: "mma_acc(128x128, warps 2x2)".
  std::string ToString() const;
  bool operator==(const MmaAccumulatorLayout& o) const {
    return m_ == o.m_ && n_ == o.n_ && rows_ == o.rows_ && warps_.warps_m == o.warps_.warps_m &&
           warps_.warps_n == o.warps_.warps_n;
  }

 private:
  int64_t m_, n_;
  WarpPartition warps_;
  int64_t tile_m_, tile_n_;  ///< the part of C one warp owns
  bool rows_ = false;
};

/// XOR swizzle of a row-major shared tile in 16-byte chunks: with rows of R bytes (a power
/// of two, at least 64) and L = max(R, 128), the chunk index within each 128-byte segment
/// is XORed with (byte_offset / L) % 8, i.e. with the row number (R >= 128) or the pair of
/// rows (R = 64). Eight consecutive rows at the same column then fall in eight different
/// bank groups, so ldmatrix reads and 16-byte cp.async writes are free of bank conflicts.
/// A bijection on every block of 8 * L bytes. Offsets are in elements of `elem_bytes`.
ir::Expr SwizzleOffset(const ir::Expr& elem_offset, int elem_bytes, int64_t row_bytes);
/// Whether a tile with these rows can be swizzled (see SwizzleOffset).
bool CanSwizzle(int64_t row_bytes, int64_t tile_bytes);

}  // namespace tl::layout
