// SPDX-License-Identifier: Apache-2.0
/// \file T.im2col as TMA im2col loads (sm_90a), for warp-specialized pipelines.
///
/// The front end lowers T.im2col to a T.Parallel nest over the (block_M, block_K) tile,
/// which every target runs; its outer loop carries the parameters as "tl.im2col.*"
/// annotations. Where cuda-warp-specialize makes the nest a producer, the tile is loaded
/// instead with the tensor-map im2col mode of a 4-D NHWC tensor: one box per wgmma panel
/// (channels per pixel = the panel's columns), pixels per column = block_M, traversal
/// stride = the convolution's, pixel box corners from the padding and the filter's
/// extent, so the hardware walks the output pixels of the tile (across rows and images)
/// and reads each at the k-tile's filter tap, with zeros in the padding.
///
/// Row m of the tile is output pixel m0 + m (m0 = nhw_step * block_M) of the flattened
/// N x OH x OW; column k is channel (k0 + k) % C of filter tap (k0 + k) / C, k0 = c_step *
/// block_K (taps in (kh, kw) order). A k-tile must stay within one tap: C a multiple of
/// block_K. In the IR a load is
///   tma_load_im2col(desc, smem, bar, c, w, h, n, off_w, off_h)
/// with desc = tma_im2col_descriptor(address_of(img[0, 0, 0, 0]), swizzle, channels,
/// pixels, stride, lower_w, lower_h, upper_w, upper_h); codegen turns each descriptor into
/// a `__grid_constant__` parameter whose tensor map the runtime encodes at launch.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// One T.im2col nest and its parameters.
struct Im2colNest {
  const ir::For* loop = nullptr;  ///< the annotated outer loop
  ir::Buffer image;               ///< the NHWC tensor
  ir::Buffer tile;                ///< the shared tile the nest fills, whole
  ir::Expr nhw_step, c_step;      ///< which tile (may use an enclosing loop's variable)
  int64_t kernel = 0, stride = 0, dilation = 0, pad = 0;
  int64_t rows = 0, cols = 0;     ///< block_M, block_K
};

/// `s` as an im2col nest: a loop with the front end's annotations whose body stores only
/// to one shared tile, at [outer, inner] (the whole tile). nullopt otherwise.
std::optional<Im2colNest> AsIm2colNest(const ir::Stmt& s);

/// Why TMA cannot load the nest's tile ("" when it can). `panelled`: the tile is a wgmma
/// operand in panel layout.
std::string TmaIm2colUnfit(const Im2colNest& n, bool panelled, const std::vector<ir::Param>& params);

/// The loads of the nest's tile into `dst` (the tile, or a stage of it) for tile
/// coordinates `nhw_step`, `c_step`, completing on the mbarrier at `bar`; adds their bytes
/// to `*bytes`. Only for nests TmaIm2colUnfit accepts.
ir::Stmt LowerTmaIm2col(const Im2colNest& n, bool panelled, const ir::Region& dst, const ir::Expr& nhw_step,
                        const ir::Expr& c_step, const ir::Expr& bar, int64_t* bytes);

}  // namespace tl::transform::cuda
