// SPDX-License-Identifier: Apache-2.0
/// \file wgmma's panel layout of shared tiles (layout/shared.h).
#include "tl/layout/shared.h"

#include "tl/layout/fragment.h"

namespace tl::layout {

using namespace ir;  // NOLINT: implementation file

Expr WgmmaOperandOffset(const Expr& off, int64_t rows, int64_t cols, int elem_bytes) {
  auto C = [](int64_t v) { return MakeInt(v); };
  const int64_t pw = WgmmaPanelElems(cols, elem_bytes);
  Expr tile = FloorDiv(off, C(rows * cols)), in_tile = FloorMod(off, C(rows * cols));
  Expr r = FloorDiv(in_tile, C(cols)), col = FloorMod(in_tile, C(cols));
  Expr panelled = tile * C(rows * cols) + FloorDiv(col, C(pw)) * C(rows * pw) + r * C(pw) + FloorMod(col, C(pw));
  // Panel rows of 128 bytes: the 128-byte swizzle of SwizzleOffset.
  if (pw * elem_bytes == 128) return SwizzleOffset(panelled, elem_bytes, 128);
  // Rows of 64 bytes, in the 64-byte swizzle: the 16-byte chunk index (bits 4-5 of the byte
  // offset) XOR bits 7-8 (the pair of rows), repeating every 512 bytes.
  Expr bytes = panelled * C(elem_bytes);
  Expr bits = Binary::Make(BinOp::kBitAnd, Binary::Make(BinOp::kShr, bytes, C(7)), C(3));
  return FloorDiv(Binary::Make(BinOp::kBitXor, bytes, Binary::Make(BinOp::kShl, bits, C(4))), C(elem_bytes));
}

Expr WgmmaOperandOffsetAt(const Expr& tile_offset, const Expr& row, const Expr& col, int64_t rows, int64_t cols,
                          int elem_bytes) {
  auto C = [](int64_t v) { return MakeInt(v); };
  const int64_t pw = WgmmaPanelElems(cols, elem_bytes), chunk_elems = 16 / elem_bytes;
  Expr in_panel = FloorMod(col, C(pw));
  Expr chunk = FloorDiv(in_panel, C(chunk_elems)), within = FloorMod(in_panel, C(chunk_elems));
  // The row bits the chunk is XORed with: the byte offset's bits 7-9 in the 128-byte swizzle
  // (row % 8: panels and tiles start on 1024 bytes), bits 7-8 in the 64-byte one ((row / 2) % 4).
  // (as floor modulos: the simplifier drops a row's terms that are multiples of 8, and the
  // printer writes a non-negative one as a mask)
  Expr row_bits = pw * elem_bytes == 128 ? FloorMod(row, C(8)) : FloorMod(FloorDiv(row, C(2)), C(4));
  Expr swizzled = Binary::Make(BinOp::kBitXor, chunk, row_bits) * C(chunk_elems) + within;
  return tile_offset + FloorDiv(col, C(pw)) * C(rows * pw) + row * C(pw) + swizzled;
}

int64_t WgmmaPanelElems(int64_t cols, int64_t elem_bytes) { return (cols * elem_bytes == 64 ? 64 : 128) / elem_bytes; }

}  // namespace tl::layout
