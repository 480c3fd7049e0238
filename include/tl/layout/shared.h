// SPDX-License-Identifier: Apache-2.0
/// \file Shared-memory tile layouts: where an element of a tile in wgmma's panel layout sits,
/// and the alignments the layouts need. The passes choose a tile's layout
/// (target/cuda_attrs.h records it); TMA boxes, the passes and codegen compute offsets here.
#pragma once

#include <cstdint>

#include "tl/ir/expr.h"

namespace tl::layout {

/// The element offset of (flat row-major offset `off`) in a wgmma operand tile of
/// `rows` x `cols` (cols contiguous), possibly one of several stacked tiles (pipeline
/// stages): each tile is stored as column panels of 64 elements, [cols / 64][rows][64],
/// and its 128-byte rows are XOR-swizzled (16-byte chunk ^= row % 8). This is the layout
/// tl::gemm_ss_wgmma reads (templates/tl/cuda/wgmma.h).
/// A tile of 32 columns (a K-major operand of K = 32) is one panel of 32 elements in the
/// 64-byte swizzle instead (16-byte chunk ^= (row / 2) % 4).
ir::Expr WgmmaOperandOffset(const ir::Expr& off, int64_t rows, int64_t cols, int elem_bytes);

/// WgmmaOperandOffset of the element at (row, col) of stacked tile `tile_offset` (an element
/// offset that is a multiple of rows x cols: the leading indices' part), computed from the two
/// indices rather than from their flat sum: panel (col / panel) * rows * panel, row * panel,
/// then the 16-byte chunk of (col % panel) XOR the row's bits. Equal to WgmmaOperandOffset for
/// 0 <= row < rows, 0 <= col < cols (wgmma_offset_test.cc checks every element), and much
/// cheaper where row and col are sums of thread-constant and register-constant terms (a
/// register walk): the XOR then takes one of each, not the whole offset.
ir::Expr WgmmaOperandOffsetAt(const ir::Expr& tile_offset, const ir::Expr& row, const ir::Expr& col, int64_t rows,
                              int64_t cols, int elem_bytes);

/// Elements per panel row of a wgmma operand tile with `cols` columns: 128 bytes of them
/// (128-byte swizzle), or 64 bytes for a tile whose rows are 64 bytes (64-byte swizzle).
int64_t WgmmaPanelElems(int64_t cols, int64_t elem_bytes);

/// Arena alignment: 1024 for swizzled tiles (the swizzle pattern repeats every 1024
/// bytes), else 128 (banks only see the address mod 128).
inline int64_t SharedAlignment(bool swizzled) { return swizzled ? 1024 : 128; }

/// Alignment of a register array of `bytes` bytes: the largest power of two up to 16 that
/// divides its size, so that vector accesses (tl::copy, tl::cast_copy) may address it whole
/// or in aligned parts.
inline int64_t LocalAlignment(int64_t bytes) {
  int64_t a = 16;
  while (a > 1 && bytes % a != 0) a /= 2;
  return a;
}

}  // namespace tl::layout
