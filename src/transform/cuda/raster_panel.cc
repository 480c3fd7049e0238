// SPDX-License-Identifier: Apache-2.0
/// \file Block rasterization (raster_panel.h). A kernel without a GEMM reads disjoint data
/// per block: the panel order gains nothing there and its index arithmetic (four divisions)
/// delays every block's first load, which shows in short element-wise kernels. Nor does a
/// GEMM whose tensors all fit in L2 together (Hopper: 50 MB), where every tile is read from
/// memory once in any order: upstream's FP8 GEMM, 4096^3 (48 MB), ran at 0.169-0.171 ms in
/// the plain order against 0.179 in panels on the H100; fp16 4096^3 (96 MB) 0.214 in panels
/// against 0.221 plain. A 3-D grid's planes (a batch, split-K's slices) count apiece: upstream's
/// split-K GEMM (4096^3, 4 slices of K, 128 MB of tensors, 32 MB a plane) 0.5905 ms plain
/// against 0.6062 in panels (upstream: 0.5888) on the H100.
#include "raster_panel.h"

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/target/cuda_attrs.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

int64_t RasterPanelWidth(const KernelLaunch* op, int64_t asked, int64_t tensor_bytes, int64_t l2_bytes,
                         std::vector<std::string>* remarks) {
  if (op->grid.size() < 2) return 0;
  int64_t marked = target::LaunchMarker(op->body, "threadblock_swizzle", -1);
  if (marked >= 0) return marked;  // T.use_swizzle(n), or tl.raster_panel (0: the plain order)
  if (asked >= 0) return asked;
  bool gemm = false;
  ForEachExpr(op->body, [&](const Expr& e) { gemm |= HasEffect(As<Call>(e), kGemm); });
  int64_t gx = 0;
  if (!gemm || (AsConstInt(op->grid[0], &gx) && gx <= 8)) return 0;
  // Blocks run plane by plane (blockIdx.z is the slowest index): a batch, or split-K's
  // slices of K, each reading its share of the tensors.
  int64_t planes = 1;
  for (size_t d = 2; d < op->grid.size(); ++d) {
    int64_t n = 0;
    planes *= AsConstInt(op->grid[d], &n) && n > 0 ? n : 1;
  }
  const int64_t per_plane = tensor_bytes >= 0 ? tensor_bytes / planes : -1;
  if (per_plane >= 0 && l2_bytes > 0 && per_plane <= l2_bytes) {
    remarks->push_back("block order: plain, the kernel's tensors (" + std::to_string(tensor_bytes >> 20) + " MB" +
                       (planes > 1 ? ", " + std::to_string(per_plane >> 20) + " MB a grid plane of " +
                                         std::to_string(planes) : std::string()) +
                       ") fit in the L2 (" + std::to_string(l2_bytes >> 20) +
                       " MB) together; tl.raster_panel or T.use_swizzle asks for panels");
    return 0;
  }
  return 8;
}

int64_t TensorBytes(const PrimFunc& f) {
  int64_t total = 0;
  for (const Param& p : f->params) {
    if (!p.buffer) continue;
    int64_t elements = 1;
    for (const Expr& e : p.buffer->shape) {
      int64_t n = 0;
      if (!AsConstInt(e, &n) || n < 0) return -1;
      elements *= n;
      if (elements > (int64_t(1) << 40)) return int64_t(1) << 43;  // (no overflow: far above any L2)
    }
    total += elements * p.buffer->dtype.bits / 8;
  }
  return total;
}

}  // namespace tl::transform::cuda
