// SPDX-License-Identifier: Apache-2.0
/// \file Where an mma.sync GEMM's ldmatrix reads land in a shared tile, computed cheaply.
///
/// gemm_ss_mma (tile_ops.h) reads each operand with one ldmatrix per 16 x 16 (A) or
/// 16 x 16 / 8 x 16 (B) piece per k-step. The piece's element (row, col) is a thread term
/// (lane and warp) plus a step term (the unrolled k-step and tile number, constants), and
/// its byte offset in a swizzled layout is
///     linear(row, col) XOR row_xor(row)
/// (tl::swizzle). Computed per read, that is five or six integer instructions in front of
/// every ldmatrix (a remainder, a shift, a mask and an XOR of the row, a multiply-add),
/// and in kernels whose accumulators fill the register file those temporaries spill.
///
/// When the terms keep out of each other's way, the offset splits into a per-thread value
/// computed once and a per-step constant:
///     offset = ((T XOR X) XOR Cl) + Ch
/// with T = linear(thread term), X = row_xor(thread row), Cl / Ch the bits of
/// linear(step term) inside / outside the XORed 16-byte-chunk bits: one LOP3 per read (none
/// when Cl is 0) and Ch an immediate of the ldmatrix address. It holds when
///   - linear is additive over the two terms (plain and XOR-row layouts always are; a
///     panelled tile's when neither the rows within a tile nor the columns within a panel
///     carry over),
///   - the step's rows are a multiple of the XOR's row period (row_xor(t + s) = row_xor(t)),
///   - the two terms' chunk bits are disjoint and both are 16-byte aligned (the sum carries
///     nothing into or through the XORed bits).
/// split_reads checks these at compile time over every lane, warp and step (sufficient
/// conditions from maxima and bit unions: a few hundred constant evaluations); any other
/// case keeps the per-read formula. tests/cpp/mma_operand_test.cc compares the split with
/// tl::swizzle for every read of many GEMM shapes and layouts on the host.
///
/// Plain C++ (no CUDA built-ins), so that the host test can include it.
#pragma once

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define TL_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define TL_HOST_DEVICE inline
#endif

namespace tl {

/// Shared layouts of a GEMM operand (the Swz* template arguments of gemm_ss / gemm_rs):
///   kRowMajor (false): plain row-major offsets;
///   kXorRows (true): 16-byte chunks XORed with the row number (rows of 128 bytes or more)
///     or the row pair (64-byte rows): the compiler's layout::SwizzleOffset;
///   kWgmmaPanels + R: wgmma's panel layout of a tile of R rows (R a multiple of 8): columns
///     in panels of 128 bytes (64 16-bit elements; one 64-byte panel when the row is 64
///     bytes), each panel R rows stored back to back and swizzled as 128-byte (64-byte)
///     rows: the compiler's cuda::WgmmaOperandOffset. ldmatrix reads it like any other, so
///     an mma.sync GEMM can share a tile with a wgmma one. A window into such a tile must
///     start on a row that is a multiple of 8 of its first column.
constexpr int kRowMajor = 0, kXorRows = 1, kWgmmaPanels = 1 << 16;

/// Element offset (relative to a window start on a swizzle atom) in shared layout Layout of
/// a tile with rows of RowElems elements. Offsets are never negative: the arithmetic is
/// unsigned, so each division and remainder by a constant is a shift or a mask (signed ones
/// cost a correction each, about a third of an mma.sync GEMM's address arithmetic).
template <int ElemBytes, int Layout, int RowElems>
TL_HOST_DEVICE constexpr int swizzle(int elem_offset) {
  const unsigned off = static_cast<unsigned>(elem_offset);
  if constexpr (Layout == kRowMajor) {
    return elem_offset;
  } else if constexpr (Layout == kXorRows) {
    constexpr unsigned kRowBytes = RowElems * ElemBytes;
    constexpr unsigned kShift = kRowBytes <= 128 ? 7 : kRowBytes <= 256 ? 8 : kRowBytes <= 512 ? 9 : kRowBytes <= 1024 ? 10 : 11;
    const unsigned bytes = off * ElemBytes;
    return static_cast<int>((bytes ^ (((bytes >> kShift) & 7u) << 4)) / ElemBytes);
  } else {
    static_assert(Layout > kWgmmaPanels && (Layout - kWgmmaPanels) % 8 == 0, "wgmma panels: rows a multiple of 8");
    constexpr unsigned kRows = Layout - kWgmmaPanels;
    constexpr bool kNarrow = RowElems * ElemBytes == 64;  // one 64-byte panel (64-byte swizzle)
    static_assert(kNarrow || (RowElems * ElemBytes) % 128 == 0, "wgmma panels: rows of 64 or 128k bytes");
    constexpr unsigned kPanel = (kNarrow ? 64 : 128) / ElemBytes, kTile = kRows * RowElems;
    const unsigned tile = off / kTile, in_tile = off % kTile;
    const unsigned r = in_tile / RowElems, c = in_tile % RowElems;
    const unsigned bytes = (tile * kTile + (c / kPanel) * (kRows * kPanel) + r * kPanel + c % kPanel) * ElemBytes;
    return static_cast<int>((bytes ^ (((bytes >> 7) & (kNarrow ? 3u : 7u)) << 4)) / ElemBytes);
  }
}

/// A row and column of an operand tile (or a term of one).
struct RowCol {
  unsigned row, col;
};

/// tl::swizzle as linear(row, col) XOR row_xor(row), for the layouts where the XOR depends
/// on the row alone (kSplittable): plain, XOR rows of a power-of-two number of bytes, panels.
template <int ElemBytes, int Layout, int RowElems>
struct layout_parts {
  static constexpr unsigned kRowBytes = RowElems * ElemBytes;
  static constexpr bool kPanels = Layout > kWgmmaPanels;
  static constexpr bool kNarrow = kPanels && kRowBytes == 64;
  // (XOR rows: a power of two of at most 2048 bytes; in longer rows the XOR reads column bits.)
  static constexpr bool kSplittable =
      Layout == kRowMajor || kPanels || (Layout == kXorRows && (kRowBytes & (kRowBytes - 1)) == 0 && kRowBytes <= 2048);
  static constexpr unsigned kRows = kPanels ? Layout - kWgmmaPanels : 0;           // panels: rows of a tile
  static constexpr unsigned kPanel = kPanels ? (kNarrow ? 64 : 128) / ElemBytes : 0;  // panels: elements
  static constexpr unsigned kShift =
      kRowBytes <= 128 ? 7 : kRowBytes <= 256 ? 8 : kRowBytes <= 512 ? 9 : kRowBytes <= 1024 ? 10 : 11;
  /// The byte bits the XOR changes (16-byte chunks within a 128- or 64-byte swizzle row).
  static constexpr unsigned kXorBits = Layout == kRowMajor ? 0u : kNarrow ? 0x30u : 0x70u;
  /// row_xor(r + k kRowPeriod) == row_xor(r) for every k.
  static constexpr unsigned kRowPeriod = Layout == kRowMajor ? 1u : kPanels ? 8u : (8u << kShift) / kRowBytes;

  /// Byte offset of element (r, c) before the XOR.
  TL_HOST_DEVICE static constexpr unsigned linear(unsigned r, unsigned c) {
    if constexpr (kPanels) {
      return ((r / kRows) * kRows * RowElems + (c / kPanel) * (kRows * kPanel) + (r % kRows) * kPanel + c % kPanel) *
             ElemBytes;
    } else {
      return (r * RowElems + c) * ElemBytes;
    }
  }
  /// The XOR of row r's chunks, in bytes (within kXorBits).
  TL_HOST_DEVICE static constexpr unsigned row_xor(unsigned r) {
    if constexpr (Layout == kRowMajor) {
      return 0;
    } else if constexpr (kPanels) {
      return ((((r % kRows) * kPanel * ElemBytes) >> 7) & (kNarrow ? 3u : 7u)) << 4;
    } else {
      return (((r * kRowBytes) >> kShift) & 7u) << 4;
    }
  }
  /// Additivity of linear over a thread term whose rows (columns) stay below max_row
  /// (max_col) plus a step term's: no carry across a panelled tile's rows or a panel's columns.
  TL_HOST_DEVICE static constexpr bool additive(unsigned thread_row_mod, unsigned thread_col_mod, RowCol step) {
    if constexpr (kPanels) {
      return thread_row_mod + step.row % kRows < kRows && thread_col_mod + step.col % kPanel < kPanel;
    } else {
      return true;
    }
  }
  TL_HOST_DEVICE static constexpr unsigned row_mod(unsigned r) { return kPanels ? r % kRows : 0; }
  TL_HOST_DEVICE static constexpr unsigned col_mod(unsigned c) { return kPanels ? c % kPanel : 0; }
};

/// Whether Reads' element offsets split as the file comment says, for every read: Reads
/// gives thread(lane, warp) and step(i) (i < Reads::kSteps) as RowCol terms, over Warps warps.
template <class Parts, class Reads, int Warps>
TL_HOST_DEVICE constexpr bool split_reads() {
  if (!Parts::kSplittable) return false;
  unsigned max_row_mod = 0, max_col_mod = 0, thread_bits = 0;
  for (int w = 0; w < Warps; ++w) {
    for (int lane = 0; lane < 32; ++lane) {
      const RowCol t = Reads::thread(lane, w);
      const unsigned lin = Parts::linear(t.row, t.col);
      if (lin % 16 != 0) return false;
      thread_bits |= lin & Parts::kXorBits;
      if (Parts::row_mod(t.row) > max_row_mod) max_row_mod = Parts::row_mod(t.row);
      if (Parts::col_mod(t.col) > max_col_mod) max_col_mod = Parts::col_mod(t.col);
    }
  }
  for (int i = 0; i < Reads::kSteps; ++i) {
    const RowCol s = Reads::step(i);
    const unsigned lin = Parts::linear(s.row, s.col);
    if (lin % 16 != 0 || s.row % Parts::kRowPeriod != 0 || (lin & Parts::kXorBits & thread_bits) != 0) return false;
    if (!Parts::additive(max_row_mod, max_col_mod, s)) return false;
  }
  return true;
}

/// The per-thread part of a split read: linear(t) XOR row_xor(t.row), in bytes.
template <class Parts>
TL_HOST_DEVICE constexpr unsigned split_thread_offset(RowCol t) {
  return Parts::linear(t.row, t.col) ^ Parts::row_xor(t.row);
}

/// Byte offset of a split read from its thread part and its step term.
template <class Parts>
TL_HOST_DEVICE constexpr unsigned split_offset(unsigned thread_offset, RowCol s) {
  const unsigned lin = Parts::linear(s.row, s.col);
  return (thread_offset ^ (lin & Parts::kXorBits)) + (lin & ~Parts::kXorBits);
}

/// The warp grid of gemm_ss_mma: WM x WN warps, warp w at grid row wm(w), column wn(w).
template <int M, int N, int WM, int WN, bool MFastest, bool InterleaveM>
struct mma_warp_grid {
  static constexpr int kWarps = WM * WN, kWarpM = M / WM, kWarpN = N / WN;
  static constexpr int kTilesM = kWarpM / 16, kTilesN = kWarpN / 8;
  TL_HOST_DEVICE static constexpr int wm(int warp) { return MFastest ? warp % WM : warp / WN; }
  TL_HOST_DEVICE static constexpr int wn(int warp) { return MFastest ? warp / WM : warp % WN; }
  /// First row of the warp's 16-row slice mt: slice_row(warp) + slice_step(mt).
  TL_HOST_DEVICE static constexpr int slice_row(int warp) { return InterleaveM ? wm(warp) * 16 : wm(warp) * kWarpM; }
  TL_HOST_DEVICE static constexpr int slice_step(int mt) { return InterleaveM ? mt * WM * 16 : mt * 16; }
};

/// A's ldmatrix_x4 reads (a 16 x kK slice; K x M storage with TransA): step i is k-step
/// i / kTilesM (kK columns each), slice i % kTilesM. kChunk: elements of a 16-byte row.
template <class Grid, int K, int kK, int kChunk, bool TransA>
struct mma_a_reads {
  static constexpr int kSteps = (K / kK) * Grid::kTilesM;
  TL_HOST_DEVICE static constexpr RowCol thread(int lane, int warp) {
    const unsigned m = Grid::slice_row(warp);
    if (!TransA) return RowCol{m + (lane & 15), static_cast<unsigned>((lane >> 4) * kChunk)};
    return RowCol{static_cast<unsigned>((lane & 7) + (lane >> 4) * 8), m + ((lane >> 3) & 1) * 8};
  }
  TL_HOST_DEVICE static constexpr RowCol step(int i) { return step_at((i / Grid::kTilesM) * kK, i % Grid::kTilesM); }
  TL_HOST_DEVICE static constexpr RowCol step_at(int kk, int mt) {
    const unsigned m = Grid::slice_step(mt);
    return TransA ? RowCol{static_cast<unsigned>(kk), m} : RowCol{m, static_cast<unsigned>(kk)};
  }
};

/// B's ldmatrix_x4 reads of two 8-column tiles (nt, nt + 1), nt even (an odd last tile is
/// read with ldmatrix_x2, outside this split); N x K storage with TransB.
template <class Grid, int K, int kK, int kChunk, bool TransB>
struct mma_b_reads {
  static constexpr int kPairs = Grid::kTilesN / 2;
  static constexpr int kSteps = (K / kK) * kPairs;
  TL_HOST_DEVICE static constexpr RowCol thread(int lane, int warp) {
    const unsigned n = Grid::wn(warp) * Grid::kWarpN;
    if (!TransB) return RowCol{static_cast<unsigned>(lane & 15), n + (lane >> 4) * 8};
    return RowCol{n + (lane & 7) + (lane >> 4) * 8, static_cast<unsigned>(((lane >> 3) & 1) * kChunk)};
  }
  TL_HOST_DEVICE static constexpr RowCol step(int i) {
    return step_at((i / (kPairs > 0 ? kPairs : 1)) * kK, (i % (kPairs > 0 ? kPairs : 1)) * 2);
  }
  TL_HOST_DEVICE static constexpr RowCol step_at(int kk, int nt) {
    return TransB ? RowCol{static_cast<unsigned>(nt * 8), static_cast<unsigned>(kk)}
                  : RowCol{static_cast<unsigned>(kk), static_cast<unsigned>(nt * 8)};
  }
};

}  // namespace tl
