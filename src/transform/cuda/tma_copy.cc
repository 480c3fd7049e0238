// SPDX-License-Identifier: Apache-2.0
/// \file TMA box loads (global -> shared) and stores (shared -> global); see tma_copy.h.
#include "tma_copy.h"

#include <unordered_set>

#include "wgmma_select.h"

#include "copy_lowering.h"
#include "tl/arith/simplify.h"
#include "tl/ir/expr.h"
#include "tl/ir/printer.h"
#include "../region_util.h"
#include "tl/layout/shared.h"
#include "tl/support/error.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The largest box extent TMA takes in any dimension.
constexpr int64_t kMaxBox = 256;

bool ConstExtents(const Region& r, std::vector<int64_t>* ext) {
  for (const Range& rg : r.ranges) {
    int64_t e = 0;
    if (!AsConstInt(rg.extent, &e)) return false;
    ext->push_back(e);
  }
  return true;
}

/// rows x cols of the destination tile: the last dimension and the product of the others.
bool TileShape(const Buffer& b, int64_t* rows, int64_t* cols) {
  *rows = 1;
  for (size_t i = 0; i < b->shape.size(); ++i) {
    int64_t d = 0;
    if (!AsConstInt(b->shape[i], &d)) return false;
    if (i + 1 == b->shape.size()) {
      *cols = d;
    } else {
      *rows *= d;
    }
  }
  return true;
}


/// The rows [*first, *first + *count) of `tile` (rows: the last dimension's lines, as in
/// TileShape) when `tile` is a run of whole rows with static extents: whole in its last
/// dimension, whole in the dimensions after the first partial one and of extent 1 before it.
/// The first row may be symbolic (`a_shared[warp, 0:K]`).
bool RowRange(const Region& tile, Expr* first, int64_t* count) {
  const Buffer& b = tile.buffer;
  size_t n = b->shape.size();
  bool partial_seen = false;
  *first = MakeInt(0);
  *count = 1;
  for (size_t i = 0; i < n; ++i) {
    int64_t dim = 0, lo = -1, e = 0;
    if (!AsConstInt(b->shape[i], &dim) || !AsConstInt(tile.ranges[i].extent, &e)) return false;
    bool whole = AsConstInt(tile.ranges[i].min, &lo) && lo == 0 && e == dim;
    if (i + 1 == n) return whole;
    if (partial_seen && !whole) return false;
    if (!whole && !partial_seen) {
      partial_seen = true;
      for (size_t k = 0; e != 1 && k < i; ++k) {  // every dimension before it: extent 1
        int64_t ek = 0;
        AsConstInt(tile.ranges[k].extent, &ek);
        if (ek != 1) return false;
      }
    }
    *first = *first * MakeInt(dim) + tile.ranges[i].min;
    *count *= e;
  }
  return true;
}

/// A box width for one row of `cols` elements wider than a box (256): the largest divisor
/// of cols up to 256 whose bytes are a multiple of 16, or 0.
int64_t LongRowChunk(int64_t cols, int64_t bytes) {
  for (int64_t w = kMaxBox; w >= 1; --w) {
    if (cols % w == 0 && w * bytes % 16 == 0) return w;
  }
  return 0;
}

/// Why a TMA box transfer between `global` (a region of a tensor parameter) and the whole
/// shared tile `tile` is impossible, or "". `panelled`: the tile is in wgmma's panel layout;
/// `wide_panels`: 4-byte elements may be in panels too (tf32 operands of gemm_ss_panels, and
/// TMA stores; wgmma's own operands are 8- and 16-bit). `row_range`: a run of whole rows of
/// the tile will do (stores: the pipelines that load tiles by TMA count on whole tiles).
std::string TmaBoxUnfit(const Region& global, const Region& tile, bool panelled, bool wide_panels, bool row_range,
                        const std::vector<Param>& params, const AlignmentPromise& promise) {
  const Buffer &src = global.buffer, &dst = tile.buffer;
  bool is_param = false;
  for (const Param& p : params) is_param |= p.buffer.get() == src.get();
  if (!is_param || src->scope != Scope::kGlobal) return "the global side is not a tensor parameter";
  if (!src->strides.empty()) return "the global tensor has explicit strides";
  size_t rank = src->shape.size();
  if (rank < 1 || rank > 5) return "TMA takes tensors of rank 1 to 5";
  if (src->dtype != dst->dtype) return "the copy converts between dtypes";
  if (PackedInMemory(*src)) return "the tensor packs two 4-bit values per byte, the tile one per byte";
  int64_t bytes = src->dtype.bytes();
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return "the element type has no TMA encoding";
  // The tensor map is encoded on the host from the call's sizes: each dimension static or one
  // size variable (`seq_len * 32` is neither).
  for (const Expr& d : src->shape) {
    int64_t v = 0;
    if (!AsConstInt(d, &v) && !As<Var>(d)) {
      return "the tensor's dimension " + ToString(d) + " is an expression of sizes (the host encodes static or "
             "single-size dimensions)";
    }
  }
  // The tensor map's row pitch must be a multiple of 16 bytes: a static innermost size, or
  // a dynamic one the call promises to be a multiple of enough elements.
  int64_t inner = 0;
  if (AsConstInt(src->shape.back(), &inner)) {
    if (inner * bytes % 16) return "the tensor's rows are not a multiple of 16 bytes";
  } else if (!promise.Covers(As<Var>(src->shape.back())) || promise.elems * bytes % 16) {
    return "the tensor's innermost dimension is not static";
  }
  std::vector<int64_t> ext, dst_ext;
  if (!ConstExtents(global, &ext) || !ConstExtents(tile, &dst_ext)) return "the copied extents are not static";
  int64_t rows = 0, cols = 0;
  if (!TileShape(dst, &rows, &cols)) return "the shared tile's shape is not static";
  Expr first_row;
  int64_t copied_rows = 0, first_const = 0;
  arith::Analyzer az;
  const bool runs = RowRange(tile, &first_row, &copied_rows);
  const bool whole = runs && copied_rows == rows && az.CanProve(EQ(first_row, MakeInt(0)));
  if (!whole && (!row_range || !runs || (AsConstInt(az.Simplify(first_row), &first_const) &&
                                         (first_const < 0 || first_const + copied_rows > rows)))) {
    return row_range ? "the copy does not cover a run of whole rows of the shared tile"
                     : "the copy does not cover the whole shared tile";
  }
  if (ext.back() != cols) return "the copied rows are not contiguous in the tensor";
  int64_t outer = 1, non_unit = 0;
  for (size_t i = 0; i + 1 < ext.size(); ++i) {
    outer *= ext[i];
    non_unit += ext[i] != 1;
    if (ext[i] > kMaxBox) return "a box extent exceeds 256";
  }
  if (outer != copied_rows || non_unit > 1) return "the copied region does not line up with the tile's rows";
  // A run of rows starts where a box may: on a 1024-byte swizzle atom (8 rows) of each panel,
  // or 128-byte aligned in a row-major tile.
  if (!whole) {
    auto multiple = [&](const Expr& e, int64_t m) { return az.CanProve(EQ(FloorMod(e, MakeInt(m)), MakeInt(0))); };
    bool aligned = panelled ? multiple(first_row, 8) && copied_rows % 8 == 0
                            : (cols * bytes) % 128 == 0 || multiple(first_row * MakeInt(cols * bytes), 128);
    if (!aligned) return "the copied rows do not start on a 128-byte boundary of the tile (8 rows of a wgmma panel)";
  }
  if (panelled) {
    bool sized = bytes == 2 || bytes == 1 || (wide_panels && bytes == 4);
    if (!sized || ((cols * bytes) % 128 && cols * bytes != 64)) {
      return "a wgmma panel tile needs 16- or 8-bit elements in rows of a multiple of 128 bytes (or of 64)";
    }
  } else if (cols * bytes % 16 || (cols > kMaxBox && (copied_rows != 1 || !LongRowChunk(cols, bytes)))) {
    // (one row longer than a box: several boxes side by side, contiguous in the tile)
    return "the tile's rows must be at most 256 elements (or one row of several boxes) and a multiple of 16 bytes";
  }
  // TMA addresses shared memory 128-byte aligned (1024 for a 128-byte swizzle, per
  // 64-column panel), and a pipeline stacks its stages back to back: a 16-byte tile would
  // put stage 1 at a misaligned address (a GPU fault).
  if (panelled && rows % 8) return "a wgmma panel tile needs a multiple of 8 rows (1024-byte swizzle atoms)";
  if (rows * cols * bytes % 128) return "the tile is not a multiple of 128 bytes (each stage must start 128-byte aligned)";
  return "";
}

/// The boxes of a transfer TmaBoxUnfit accepts: one per panel (or one for a plain tile),
/// each as (descriptor, address in the tile, coordinates innermost first).
struct TmaBox {
  Expr desc, smem;
  std::vector<Expr> coords;
};
/// With `slices` > 1, the boxes of slice `slice` of the rows (along the tensor dimension
/// `sliced`, the tile dimension `tile_dim`; TmaMulticastUnfit checked they divide).
std::vector<TmaBox> TmaBoxes(const Region& global, const Region& tile, bool panelled, int64_t* box_bytes,
                             int64_t slices = 1, const Expr& slice = Expr(), size_t sliced = 0, size_t tile_dim = 0) {
  const Buffer& src = global.buffer;
  size_t rank = src->shape.size();
  std::vector<int64_t> ext;
  ConstExtents(global, &ext);
  int64_t cols = ext.back();
  // wgmma panels: 128-byte rows in SWIZZLE_128B, or a 64-byte-row tile in SWIZZLE_64B
  // (cuda::WgmmaOperandOffset).
  int64_t box_inner = panelled         ? layout::WgmmaPanelElems(cols, src->dtype.bytes())
                      : cols > kMaxBox ? LongRowChunk(cols, src->dtype.bytes())  // one row (TmaBoxUnfit)
                                       : cols;
  TmaSwizzle swizzle = !panelled                              ? TmaSwizzle::kNone
                       : box_inner * src->dtype.bytes() == 64 ? TmaSwizzle::kB64
                                                              : TmaSwizzle::kB128;
  // The descriptor: the tensor, the swizzle, then the box innermost first.
  std::vector<Expr> desc_args{AddressOf(src, std::vector<Expr>(rank, MakeInt(0))),
                              MakeInt(static_cast<int64_t>(swizzle))};
  int64_t box_elems = 1;
  const int64_t slice_rows = slices > 1 ? ext[sliced] / slices : 0;
  for (size_t j = 0; j < rank; ++j) {
    int64_t e = j == 0 ? box_inner : slices > 1 && rank - 1 - j == sliced ? slice_rows : ext[rank - 1 - j];
    desc_args.push_back(MakeInt(e));
    box_elems *= e;
  }
  *box_bytes = box_elems * src->dtype.bytes();
  Expr desc = Call::Make(DType::Handle(), "tma_descriptor", desc_args);
  std::vector<Expr> tile_idx;
  for (const Range& r : tile.ranges) tile_idx.push_back(r.min);
  if (slices > 1) tile_idx[tile_dim] = tile_idx[tile_dim] + slice * MakeInt(slice_rows);
  std::vector<TmaBox> boxes;
  for (int64_t p = 0; p < cols / box_inner; ++p) {
    std::vector<Expr> at = tile_idx;
    at.back() = at.back() + MakeInt(p * box_inner);
    TmaBox box{desc, AddressOf(tile.buffer, at), {}};
    for (size_t j = 0; j < rank; ++j) {
      Expr c = global.ranges[rank - 1 - j].min;
      if (slices > 1 && rank - 1 - j == sliced) c = c + slice * MakeInt(slice_rows);
      box.coords.push_back(j == 0 && p ? c + MakeInt(p * box_inner) : c);
    }
    boxes.push_back(box);
  }
  return boxes;
}

}  // namespace

std::string TmaLoadUnfit(const CopyOp* copy, bool panelled, const std::vector<Param>& params,
                         const AlignmentPromise& promise, bool row_range) {
  // (4-byte panels: the tf32 operands of an mma.sync GEMM on panels, gemm_ss_panels)
  return TmaBoxUnfit(copy->src, copy->dst, panelled, true, row_range, params, promise);
}

Stmt LowerTmaLoad(const CopyOp* copy, bool panelled, const Expr& bar, int64_t* bytes) {
  int64_t box_bytes = 0;
  std::vector<Stmt> loads;
  for (const TmaBox& box : TmaBoxes(copy->src, copy->dst, panelled, &box_bytes)) {
    std::vector<Expr> args{box.desc, box.smem, bar};
    args.insert(args.end(), box.coords.begin(), box.coords.end());
    loads.push_back(Evaluate::Make(Call::Make(DType::Void(), "tma_load", args), copy->span));
    *bytes += box_bytes;
  }
  return loads.size() == 1 ? loads[0] : Seq::Make(loads, copy->span);
}

namespace {

/// The tensor dimension along which a whole-tile copy's rows run and the tile's dimension
/// that holds them (MulticastSlicing); false when the rows are not one dimension of each.
bool MulticastSlicing(const CopyOp* copy, size_t* sliced, size_t* tile_dim, int64_t* rows) {
  std::vector<int64_t> ext, tile_ext;
  if (!ConstExtents(copy->src, &ext) || !ConstExtents(copy->dst, &tile_ext)) return false;
  int found = 0;
  for (size_t i = 0; i + 1 < ext.size(); ++i) {
    if (ext[i] != 1) *sliced = i, *rows = ext[i], ++found;
  }
  int found_tile = 0;
  for (size_t i = 0; i + 1 < tile_ext.size(); ++i) {
    if (tile_ext[i] != 1) *tile_dim = i, ++found_tile;
  }
  return found == 1 && found_tile == 1 && tile_ext[*tile_dim] == *rows;
}

}  // namespace

std::string TmaMulticastUnfit(const CopyOp* copy, bool panelled, int64_t blocks) {
  size_t sliced = 0, tile_dim = 0;
  int64_t rows = 0;
  if (!MulticastSlicing(copy, &sliced, &tile_dim, &rows)) return "its rows do not run along one tensor dimension";
  if (rows % blocks) return "its " + std::to_string(rows) + " rows do not split into " + std::to_string(blocks);
  const int64_t slice = rows / blocks;
  std::vector<int64_t> ext;
  ConstExtents(copy->src, &ext);
  const int64_t row_bytes = ext.back() * copy->src.buffer->dtype.bytes();
  if (panelled ? slice % 8 != 0 : slice * row_bytes % 128 != 0) {
    return "a slice of " + std::to_string(slice) + " rows does not start on a " +
           (panelled ? "1024-byte swizzle atom" : "128-byte boundary");
  }
  return "";
}

Stmt LowerTmaLoadMulticast(const CopyOp* copy, bool panelled, const Expr& bar, const Expr& rank, int64_t blocks,
                           int64_t* bytes) {
  size_t sliced = 0, tile_dim = 0;
  int64_t rows = 0, box_bytes = 0;
  TL_ICHECK(MulticastSlicing(copy, &sliced, &tile_dim, &rows)) << "a multicast copy TmaMulticastUnfit refuses";
  std::vector<Stmt> loads;
  const Expr mask = MakeInt((int64_t{1} << blocks) - 1);
  for (const TmaBox& box : TmaBoxes(copy->src, copy->dst, panelled, &box_bytes, blocks, rank, sliced, tile_dim)) {
    std::vector<Expr> args{box.desc, box.smem, bar, mask};
    args.insert(args.end(), box.coords.begin(), box.coords.end());
    loads.push_back(Evaluate::Make(Call::Make(DType::Void(), "tma_load_multicast", args), copy->span));
    *bytes += box_bytes * blocks;
  }
  return loads.size() == 1 ? loads[0] : Seq::Make(loads, copy->span);
}

bool TmaStorePanels(const CopyOp* copy, const std::unordered_set<const BufferNode*>& wgmma_operands) {
  const Buffer& tile = copy->src.buffer;
  if (wgmma_operands.count(tile.get())) return true;
  // (1-byte tiles stay row-major: their element loops would pay the swizzle on every access,
  // as with the XOR-rows staging layout, which leaves them alone too)
  int64_t rows = 0, cols = 0, bytes = tile->dtype.bytes();
  return TileShape(tile, &rows, &cols) && rows % 8 == 0 && (bytes == 2 || bytes == 4) && cols * bytes % 128 == 0;
}

std::string TmaStoreUnfit(const CopyOp* copy, bool panelled, const std::vector<Param>& params,
                          const AlignmentPromise& promise) {
  if (copy->src.buffer->scope != Scope::kShared || copy->dst.buffer->scope != Scope::kGlobal) {
    return "the copy is not from a shared tile to a global tensor";
  }
  return TmaBoxUnfit(copy->dst, copy->src, panelled, true, true, params, promise);
}

Stmt LowerTmaStores(const std::vector<TmaStoreCopy>& copies, const Expr& issuer) {
  TL_ICHECK(!copies.empty()) << "no TMA stores to lower";
  const Span& span = copies[0].copy->span;
  int64_t box_bytes = 0;
  std::vector<Stmt> issue;
  for (const TmaStoreCopy& c : copies) {
    for (const TmaBox& box : TmaBoxes(c.copy->dst, c.copy->src, c.panelled, &box_bytes)) {
      std::vector<Expr> args{box.desc, box.smem};
      args.insert(args.end(), box.coords.begin(), box.coords.end());
      issue.push_back(Evaluate::Make(Call::Make(DType::Void(), "tma_store", args), c.copy->span));
    }
  }
  issue.push_back(Evaluate::Make(Call::Make(DType::Void(), "tma_store_arrive", {}), span));
  issue.push_back(Evaluate::Make(Call::Make(DType::Void(), "tma_store_wait", {MakeInt(0), MakeBool(true)}), span));
  return Seq::Make({Evaluate::Make(Call::Make(DType::Void(), "fence_proxy_async", {}), span),
                    Evaluate::Make(Call::Make(DType::Void(), "syncthreads", {}), span),
                    IfThenElse::Make(issuer, Seq::Make(issue, span), nullptr, span)},
                   span);
}

}  // namespace tl::transform::cuda
