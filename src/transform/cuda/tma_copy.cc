// SPDX-License-Identifier: Apache-2.0
/// \file TMA box loads for global -> shared copies (see tma_copy.h).
#include "tma_copy.h"

#include "wgmma_select.h"

#include "copy_lowering.h"
#include "tl/ir/expr.h"

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

}  // namespace

std::string TmaLoadUnfit(const CopyOp* copy, bool panelled, const std::vector<Param>& params,
                         const AlignmentPromise& promise) {
  const Buffer &src = copy->src.buffer, &dst = copy->dst.buffer;
  bool is_param = false;
  for (const Param& p : params) is_param |= p.buffer.get() == src.get();
  if (!is_param || src->scope != Scope::kGlobal) return "the source is not a tensor parameter";
  if (!src->strides.empty()) return "the source tensor has explicit strides";
  size_t rank = src->shape.size();
  if (rank < 1 || rank > 5) return "TMA takes tensors of rank 1 to 5";
  if (src->dtype != dst->dtype) return "the copy converts between dtypes";
  if (PackedInMemory(*src)) return "the tensor packs two 4-bit values per byte, the tile one per byte";
  int64_t bytes = src->dtype.bytes();
  if (bytes != 1 && bytes != 2 && bytes != 4 && bytes != 8) return "the element type has no TMA encoding";
  // The tensor map's row pitch must be a multiple of 16 bytes: a static innermost size, or
  // a dynamic one the call promises to be a multiple of enough elements.
  int64_t inner = 0;
  if (AsConstInt(src->shape.back(), &inner)) {
    if (inner * bytes % 16) return "the tensor's rows are not a multiple of 16 bytes";
  } else if (!promise.Covers(As<Var>(src->shape.back())) || promise.elems * bytes % 16) {
    return "the tensor's innermost dimension is not static";
  }
  std::vector<int64_t> ext, dst_ext;
  if (!ConstExtents(copy->src, &ext) || !ConstExtents(copy->dst, &dst_ext)) return "the copied extents are not static";
  int64_t rows = 0, cols = 0;
  if (!TileShape(dst, &rows, &cols)) return "the shared tile's shape is not static";
  for (size_t i = 0; i < copy->dst.ranges.size(); ++i) {
    int64_t lo = -1, dim = 0;
    AsConstInt(dst->shape[i], &dim);
    if (!AsConstInt(copy->dst.ranges[i].min, &lo) || lo != 0 || dst_ext[i] != dim) {
      return "the copy does not fill the whole shared tile";
    }
  }
  if (ext.back() != cols) return "the copied rows are not contiguous in the tensor";
  int64_t outer = 1, non_unit = 0;
  for (size_t i = 0; i + 1 < ext.size(); ++i) {
    outer *= ext[i];
    non_unit += ext[i] != 1;
    if (ext[i] > kMaxBox) return "a box extent exceeds 256";
  }
  if (outer != rows || non_unit > 1) return "the copied region does not line up with the tile's rows";
  if (panelled) {
    if ((bytes != 2 && bytes != 1) || ((cols * bytes) % 128 && cols * bytes != 64)) {
      return "a wgmma panel tile needs 16- or 8-bit elements in rows of a multiple of 128 bytes (or of 64)";
    }
  } else if (cols > kMaxBox || cols * bytes % 16) {
    return "the tile's rows must be at most 256 elements and a multiple of 16 bytes";
  }
  // TMA writes only to 128-byte aligned shared addresses (1024 for a 128-byte swizzle, per
  // 64-column panel), and the pipeline stacks its stages back to back: a 16-byte tile would
  // put stage 1 at a misaligned address (a GPU fault).
  if (panelled && rows % 8) return "a wgmma panel tile needs a multiple of 8 rows (1024-byte swizzle atoms)";
  if (rows * cols * bytes % 128) return "the tile is not a multiple of 128 bytes (each stage must start 128-byte aligned)";
  return "";
}

Stmt LowerTmaLoad(const CopyOp* copy, bool panelled, const Expr& bar, int64_t* bytes) {
  const Buffer& src = copy->src.buffer;
  size_t rank = src->shape.size();
  std::vector<int64_t> ext;
  ConstExtents(copy->src, &ext);
  int64_t cols = ext.back();
  // wgmma panels: 64 columns in SWIZZLE_128B, or a 32-column tile in SWIZZLE_64B
  // (cuda::WgmmaOperandOffset).
  int64_t box_inner = panelled ? WgmmaPanelElems(cols, src->dtype.bytes()) : cols;
  TmaSwizzle swizzle = !panelled                              ? TmaSwizzle::kNone
                       : box_inner * src->dtype.bytes() == 64 ? TmaSwizzle::kB64
                                                              : TmaSwizzle::kB128;
  // The descriptor: the tensor, the swizzle, then the box innermost first.
  std::vector<Expr> desc_args{AddressOf(src, std::vector<Expr>(rank, MakeInt(0))),
                              MakeInt(static_cast<int64_t>(swizzle))};
  int64_t box_elems = 1;
  for (size_t j = 0; j < rank; ++j) {
    int64_t e = j == 0 ? box_inner : ext[rank - 1 - j];
    desc_args.push_back(MakeInt(e));
    box_elems *= e;
  }
  Expr desc = Call::Make(DType::Handle(), "tma_descriptor", desc_args);
  std::vector<Expr> dst_idx;
  for (const Range& r : copy->dst.ranges) dst_idx.push_back(r.min);
  std::vector<Stmt> loads;
  for (int64_t p = 0; p < cols / box_inner; ++p) {
    std::vector<Expr> at = dst_idx;
    at.back() = at.back() + MakeInt(p * box_inner);
    std::vector<Expr> args{desc, AddressOf(copy->dst.buffer, at), bar};
    for (size_t j = 0; j < rank; ++j) {
      Expr c = copy->src.ranges[rank - 1 - j].min;
      args.push_back(j == 0 && p ? c + MakeInt(p * box_inner) : c);
    }
    loads.push_back(Evaluate::Make(Call::Make(DType::Void(), "tma_load", args), copy->span));
    *bytes += box_elems * src->dtype.bytes();
  }
  return loads.size() == 1 ? loads[0] : Seq::Make(loads, copy->span);
}

}  // namespace tl::transform::cuda
