// SPDX-License-Identifier: Apache-2.0
/// \file T.im2col nests as TMA im2col loads (see tma_im2col.h).
#include "tma_im2col.h"

#include "copy_lowering.h"
#include "tma_copy.h"
#include "wgmma_select.h"
#include "tl/ir/functor.h"
#include "../region_util.h"
#include "tl/layout/shared.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The stores of a nest.
struct StoreCollector : IRVisitor {
  std::vector<const BufferStore*> stores;
  void Visit_(const BufferStore* op) override {
    stores.push_back(op);
    IRVisitor::Visit_(op);
  }
};

const Expr* Annotation(const For* loop, const std::string& name) {
  auto it = loop->annotations.find("tl.im2col." + name);
  return it == loop->annotations.end() ? nullptr : &it->second;
}

/// TMA's limits for an im2col box of a 4-D tensor (cuTensorMapEncodeIm2col).
constexpr int64_t kMaxChannels = 256, kMaxPixels = 1024, kMaxCorner = 127, kMinCorner = -128, kMaxStride = 8;

int64_t UpperCorner(const Im2colNest& n) { return n.pad - (n.kernel - 1) * n.dilation; }

}  // namespace

std::optional<Im2colNest> AsIm2colNest(const Stmt& s) {
  const auto* loop = As<For>(s);
  if (!loop) return std::nullopt;
  const Expr* image = Annotation(loop, "image");
  const auto* inner = loop ? As<For>(loop->body) : nullptr;
  if (!image || !inner) return std::nullopt;
  Im2colNest n;
  n.loop = loop;
  const auto* addr = As<Call>(*image);
  const auto* at = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
  if (!at) return std::nullopt;
  n.image = at->buffer;
  for (auto [name, field] : {std::pair<const char*, int64_t*>{"kernel", &n.kernel}, {"stride", &n.stride},
                             {"dilation", &n.dilation}, {"pad", &n.pad}}) {
    const Expr* v = Annotation(loop, name);
    if (!v || !AsConstInt(*v, field)) return std::nullopt;
  }
  const Expr *nhw = Annotation(loop, "nhw_step"), *c = Annotation(loop, "c_step");
  if (!nhw || !c) return std::nullopt;
  n.nhw_step = *nhw;
  n.c_step = *c;
  int64_t lo0 = -1, lo1 = -1;
  if (!AsConstInt(loop->min, &lo0) || !AsConstInt(inner->min, &lo1) || lo0 || lo1 ||
      !AsConstInt(loop->extent, &n.rows) || !AsConstInt(inner->extent, &n.cols)) {
    return std::nullopt;
  }
  StoreCollector stores;
  stores.Visit(s);
  for (const BufferStore* st : stores.stores) {
    if (n.tile && st->buffer != n.tile) return std::nullopt;
    n.tile = st->buffer;
    if (st->indices.size() != 2 || As<Var>(st->indices[0]) != loop->var.get() ||
        As<Var>(st->indices[1]) != inner->var.get()) {
      return std::nullopt;
    }
  }
  if (!n.tile || n.tile->scope != Scope::kShared || n.tile->shape.size() != 2) return std::nullopt;
  int64_t r = 0, cl = 0;
  if (!AsConstInt(n.tile->shape[0], &r) || !AsConstInt(n.tile->shape[1], &cl) || r != n.rows || cl != n.cols) {
    return std::nullopt;
  }
  return n;
}

std::string TmaIm2colUnfit(const Im2colNest& n, bool panelled, const std::vector<Param>& params) {
  const Buffer& img = n.image;
  bool is_param = false;
  for (const Param& p : params) is_param |= p.buffer.get() == img.get();
  if (!is_param || img->scope != Scope::kGlobal) return "the image is not a tensor parameter";
  if (!img->strides.empty()) return "the image has explicit strides";
  if (img->shape.size() != 4) return "the image is not 4-D (NHWC)";
  if (img->dtype != n.tile->dtype) return "the image and the tile differ in dtype";
  if (PackedInMemory(*img)) return "the image packs two 4-bit values per byte, the tile one per byte";
  int64_t bytes = img->dtype.bytes();
  if (bytes != 1 && bytes != 2 && bytes != 4) return "the element type has no TMA encoding";
  int64_t channels = 0;
  if (!AsConstInt(img->shape[3], &channels)) return "the channel count is not static";
  if (channels % n.cols) {
    return "the channel count " + std::to_string(channels) + " is not a multiple of block_K " +
           std::to_string(n.cols) + " (a k-tile would span two filter taps)";
  }
  if (channels * bytes % 16) return "a pixel's channels are not a multiple of 16 bytes";
  if (panelled) {
    if ((bytes != 2 && bytes != 1) || ((n.cols * bytes) % 128 && n.cols * bytes != 64)) {
      return "a wgmma panel tile needs 16- or 8-bit elements in rows of a multiple of 128 bytes (or of 64)";
    }
    if (n.rows % 8) return "a wgmma panel tile needs a multiple of 8 rows";
  } else if (n.cols > kMaxChannels || n.cols * bytes % 16) {
    return "the tile's rows must be at most 256 elements and a multiple of 16 bytes";
  }
  if (n.rows > kMaxPixels) return "block_M exceeds TMA's 1024 pixels per column";
  if (n.rows * n.cols * bytes % 128) return "the tile is not a multiple of 128 bytes";
  if (n.stride > kMaxStride) return "the stride exceeds TMA's traversal stride of 8";
  if (-n.pad < kMinCorner || UpperCorner(n) < kMinCorner || UpperCorner(n) > kMaxCorner) {
    return "the padding or the filter's extent is outside the pixel box corners TMA takes ([-128, 127])";
  }
  if ((n.kernel - 1) * n.dilation > 65535) return "the filter's extent exceeds TMA's 16-bit im2col offsets";
  return "";
}

Stmt LowerTmaIm2col(const Im2colNest& n, bool panelled, const Region& dst, const Expr& nhw_step, const Expr& c_step,
                    const Expr& bar, int64_t* bytes) {
  const Buffer& img = n.image;
  const int64_t elem = img->dtype.bytes();
  const int64_t box_inner = panelled ? layout::WgmmaPanelElems(n.cols, elem) : n.cols;
  TmaSwizzle swizzle = !panelled ? TmaSwizzle::kNone : box_inner * elem == 64 ? TmaSwizzle::kB64 : TmaSwizzle::kB128;
  const int64_t upper = UpperCorner(n);
  Expr desc = Call::Make(DType::Handle(), "tma_im2col_descriptor",
                         {AddressOf(img, std::vector<Expr>(4, MakeInt(0))), MakeInt(static_cast<int64_t>(swizzle)),
                          MakeInt(box_inner), MakeInt(n.rows), MakeInt(n.stride), MakeInt(-n.pad), MakeInt(-n.pad),
                          MakeInt(upper), MakeInt(upper)});
  // Output pixel m0 = nhw_step * block_M of N x OH x OW starts at input pixel
  // (oh * S - P, ow * S - P) of its image; k0 = c_step * block_K is channel k0 % C of tap
  // k0 / C = kh * K + kw, read at offset (kw * D, kh * D) from there.
  DType t = nhw_step->dtype;
  auto dim = [&](size_t d) { return Cast::Make(t, img->shape[d]); };
  auto c = [&](int64_t v) { return MakeInt(v, t); };
  auto out_extent = [&](const Expr& in) {
    return FloorDiv(in + c(2 * n.pad - n.dilation * (n.kernel - 1) - 1), c(n.stride)) + c(1);
  };
  Expr oh = out_extent(dim(1)), ow = out_extent(dim(2));
  Expr m0 = nhw_step * c(n.rows);
  Expr w = c(n.stride) * FloorMod(m0, ow) - c(n.pad);
  Expr h = c(n.stride) * FloorMod(FloorDiv(m0, ow), oh) - c(n.pad);
  Expr img_n = FloorDiv(m0, ow * oh);
  Expr k0 = Cast::Make(t, c_step) * c(n.cols);
  Expr tap = FloorDiv(k0, dim(3));
  Expr channel = FloorMod(k0, dim(3));
  Expr off_w = c(n.dilation) * FloorMod(tap, c(n.kernel)), off_h = c(n.dilation) * FloorDiv(tap, c(n.kernel));
  std::vector<Expr> at;
  for (const Range& r : dst.ranges) at.push_back(r.min);
  std::vector<Stmt> loads;
  for (int64_t p = 0; p < n.cols / box_inner; ++p) {
    std::vector<Expr> panel = at;
    panel.back() = panel.back() + MakeInt(p * box_inner);
    loads.push_back(Evaluate::Make(
        Call::Make(DType::Void(), "tma_load_im2col",
                   {desc, AddressOf(dst.buffer, panel), bar, p ? channel + c(p * box_inner) : channel, w, h, img_n,
                    off_w, off_h}),
        n.loop->span));
    *bytes += n.rows * box_inner * elem;
  }
  return loads.size() == 1 ? loads[0] : Seq::Make(loads, n.loop->span);
}

}  // namespace tl::transform::cuda
