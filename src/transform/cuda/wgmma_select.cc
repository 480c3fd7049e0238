// SPDX-License-Identifier: Apache-2.0
/// \file wgmma selection and operand layout (see wgmma_select.h).
#include "wgmma_select.h"

#include "../region_util.h"
#include "tl/arith/simplify.h"
#include "pass_helpers.h"
#include "tl/layout/fragment.h"
#include "tl/layout/shared.h"
#include "tl/target/cuda_target.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// A 2-D region of whole rows and the constant columns [*col0, *col0 + *width) of its tile
/// (rows x cols), or false.
/// With `stages`, of a stage of a staged tile too (leading dimensions of extent 1).
bool RowsWindow(const Region& r, int64_t* rows, int64_t* cols, int64_t* col0, int64_t* width, bool stages = false) {
  const size_t rank = r.ranges.size();
  if (rank < 2 || (rank > 2 && !stages) || r.buffer->shape.size() != rank || !r.buffer->strides.empty()) return false;
  for (size_t k = 0; k + 2 < rank; ++k) {
    if (!IsOne(r.ranges[k].extent)) return false;
  }
  const Range &rr = r.ranges[rank - 2], &cr = r.ranges[rank - 1];
  int64_t lo = -1, ext = 0;
  if (!AsConstInt(r.buffer->shape[rank - 2], rows) || !AsConstInt(r.buffer->shape[rank - 1], cols)) return false;
  if (!AsConstInt(rr.min, &lo) || lo != 0 || !AsConstInt(rr.extent, &ext) || ext != *rows) return false;
  return AsConstInt(cr.min, col0) && AsConstInt(cr.extent, width) && *col0 >= 0 && *width > 0 &&
         *col0 + *width <= *cols;
}

/// rows x cols of a whole 2-D tile region, or false. With `stages`, a stage of a staged
/// tile (leading dimensions of extent 1, at any index: `A_s[k % 2, :, :]` in a kernel that
/// stages its own tiles) counts as a whole tile: each stage is a contiguous tile in the
/// same panels (WgmmaOptions::stages).
bool WholeTile(const Region& r, int64_t* rows, int64_t* cols, bool stages = false) {
  const size_t rank = r.ranges.size();
  if (rank < 2 || r.buffer->shape.size() != rank || !r.buffer->strides.empty()) return false;
  if (rank > 2 && !stages) return false;
  for (size_t k = 0; k + 2 < rank; ++k) {
    if (!IsOne(r.ranges[k].extent)) return false;
  }
  for (size_t k = rank - 2; k < rank; ++k) {
    int64_t lo = -1, ext = 0, dim = -1;
    if (!AsConstInt(r.ranges[k].min, &lo) || lo != 0 || !AsConstInt(r.ranges[k].extent, &ext) ||
        !AsConstInt(r.buffer->shape[k], &dim) || ext != dim) {
      return false;
    }
  }
  AsConstInt(r.buffer->shape[rank - 2], rows);
  AsConstInt(r.buffer->shape[rank - 1], cols);
  return true;
}

bool Sixteen(DType t) { return t == DType::Float(16) || t == DType::BFloat16(); }

/// float16 operands into a float16 accumulator (wgmma .f16.f16.f16).
bool F16Accumulator(const GemmOp* op) {
  return op->a.buffer->dtype == DType::Float(16) && op->b.buffer->dtype == DType::Float(16) &&
         op->c.buffer->dtype == DType::Float(16);
}

/// T.wgmma_gemm's windows (WgmmaUnfit): whole rows of a tile, or of a stage of a staged
/// tile (leading dimensions of extent 1), and the columns [c0, c0 + width) with a constant
/// width and c0 possibly symbolic (`A_s[:, j * 16 : (j + 1) * 16]`), of a tile whose rows are
/// 128-byte multiples (panels of 128 bytes) or 64 bytes (one panel, the 64-byte swizzle).
/// The window must start on a panel or lie inside one, which is proved from c0:
/// c0 % panel == 0, or width divides the panel and c0 % width == 0, or a constant c0.
bool PanelWindow(const Region& r, int64_t eb, int64_t* rows, int64_t* cols, int64_t* width) {
  const size_t rank = r.ranges.size();
  if (rank < 2 || r.buffer->shape.size() != rank || !r.buffer->strides.empty()) return false;
  for (size_t k = 0; k + 2 < rank; ++k) {
    if (!IsOne(r.ranges[k].extent)) return false;
  }
  int64_t lo = -1, ext = 0;
  const Range &rr = r.ranges[rank - 2], &cr = r.ranges[rank - 1];
  if (!AsConstInt(r.buffer->shape[rank - 2], rows) || !AsConstInt(r.buffer->shape[rank - 1], cols)) return false;
  if (!AsConstInt(rr.min, &lo) || lo != 0 || !AsConstInt(rr.extent, &ext) || ext != *rows) return false;
  if (!AsConstInt(cr.extent, width) || *width <= 0 || *width > *cols) return false;
  if ((*cols * eb) % 128 != 0 && *cols * eb != 64) return false;
  const int64_t panel = layout::WgmmaPanelElems(*cols, eb);
  int64_t c0 = 0;
  if (AsConstInt(cr.min, &c0)) {
    return c0 >= 0 && c0 + *width <= *cols && (c0 % panel == 0 || c0 % panel + *width <= panel);
  }
  arith::Analyzer an;
  auto divides = [&](int64_t d) { return an.CanProve(EQ(FloorMod(cr.min, MakeInt(d, cr.min->dtype)), MakeInt(0, cr.min->dtype))); };
  return divides(panel) || (panel % *width == 0 && divides(*width));
}

}  // namespace

WgmmaOptions WgmmaOptionsOf(const PassContext& ctx) {
  WgmmaOptions o;
  o.fp8 = ConfigOn(ctx, "tl.enable_wgmma_fp8", /*default_on=*/true);
  // on since the H200 checked windowed operands (the CUDA suite; upstream's sparse MLA
  // forward against its reference, 1.8x faster with its gathers prefetched)
  o.windows = ConfigOn(ctx, "tl.enable_wgmma_windows", /*default_on=*/true);
  // off until a GPU run has checked wgmma on a stage of a 3-D tile (the other GEMMs on
  // such stages keep the mma.sync path the H200 runs have checked)
  o.stages = ConfigOn(ctx, "tl.enable_wgmma_stages", /*default_on=*/false);
  o.tf32_mma = ConfigOn(ctx, "tl.enable_tf32_mma", /*default_on=*/true);
  o.f16_acc_mma = ConfigOn(ctx, "tl.mma_f16_accumulators", /*default_on=*/true);
  o.f16_acc = ConfigOn(ctx, "tl.wgmma_f16_accumulators", /*default_on=*/true);
  // (checked on the H100 in the thirty-fifth session: tests/cuda/wgmma_test.cu's in-panel
  // cases, the GPU suite, upstream's sparse MLA backward test; that kernel 0.1523 -> 0.1468 ms)
  o.split_in_panel = ConfigOn(ctx, "tl.wgmma_split_in_panel", /*default_on=*/true);
  return o;
}

std::string WgmmaUnfit(const GemmOp* op, int64_t threads, const target::CudaTarget& target, bool a_in_registers,
                       int64_t* warpgroups_n, WgmmaOptions options) {
  const bool allow_fp8 = options.fp8;
  if (!target.HasWgmma()) {
    return "the target is " + (target.Known() ? target.arch : std::string("unknown")) + ", not sm_90a";
  }
  const Buffer &a = op->a.buffer, &b = op->b.buffer, &c = op->c.buffer;
  if ((!a_in_registers && a->scope != Scope::kShared) || b->scope != Scope::kShared) {
    return "an operand is not in shared memory";
  }
  if (a_in_registers && op->trans_a) return "a register operand A cannot be transposed";
  const bool fp8 = a->dtype.IsFloat() && a->dtype.bits == 8;
  if (fp8) {
    // float8 wgmma (k32 steps) reads K-major A and B only: no transpose immediates.
    if (!allow_fp8) return "float8 wgmma is turned off (tl.enable_wgmma_fp8=False)";
    if (a->dtype != b->dtype || c->dtype != DType::Float(32)) {
      return "float8 wgmma here takes A and B of one float8 type into a float32 accumulator";
    }
    if (a_in_registers || op->trans_a || !op->trans_b) {
      return "float8 wgmma reads K-major tiles only: A as M x K from shared memory, B as N x K (transpose_B=True)";
    }
  } else if (!Sixteen(a->dtype) || a->dtype != b->dtype ||
             !(c->dtype == DType::Float(32) || (F16Accumulator(op) && options.f16_acc))) {
    return std::string("wgmma here takes float16/bfloat16 (or float8) operands into a float32 accumulator") +
           (F16Accumulator(op) ? " (float16 into float16 is turned off: tl.wgmma_f16_accumulators=0)"
                               : ", or float16 operands into a float16 one");
  }
  const int64_t eb = a->dtype.bytes(), kstep = fp8 ? 32 : 16;
  int64_t ar, ac, br, bc, m, n;
  int64_t a_col0 = 0, a_width = 0, b_col0 = 0, b_width = 0;
  // T.wgmma_gemm has no other path to fall back on: it takes stages of staged tiles, and
  // windows of them that start at a symbolic column or are narrower than a panel (below).
  const bool stages = options.stages || op->async_wgmma;
  const bool a_whole = WholeTile(op->a, &ar, &ac, stages), b_whole = WholeTile(op->b, &br, &bc, stages);
  if (!WholeTile(op->c, &m, &n)) return "an operand is not a whole 2-D tile";
  // A window of an operand's columns, starting on a 128-byte panel (WgmmaOptions::windows).
  auto window = [&](const Region& r, bool k_major, int64_t* rows, int64_t* cols, int64_t* col0, int64_t* width) {
    if (op->async_wgmma) {
      if (a_in_registers) return false;
      // (gemm_ss_wgmma_issue's KTileA / KTileB: the tile's rows of 128-byte multiples)
      if (k_major) return PanelWindow(r, eb, rows, cols, width);
      // An MN-major operand's window of whole 128-byte panels (upstream's seesaw sparse MLA:
      // P V on KV_s[stage, :, :D // 2]) is laid out as a tile of that width; the issue's
      // pointer is its first panel, as for a whole tile.
      if (!RowsWindow(r, rows, cols, col0, width, /*stages=*/true)) return false;
      return (*col0 * eb) % 128 == 0 && (*cols * eb) % 128 == 0 && (*width * eb) % 128 == 0;
    }
    // Whole 128-byte panels of the tile's rows: in the panel layout ([cols / panel][rows][panel])
    // they are laid out as a tile of that width would be, along K (a K-major operand) or
    // along M or N (an MN-major one, whose width must then be whole panels too).
    // (a window 64 bytes wide would take gemm_ss_wgmma's 64-byte swizzle, not its tile's panels)
    if (!options.windows || a_in_registers || !RowsWindow(r, rows, cols, col0, width, stages)) return false;
    const bool on_panels = (*col0 * eb) % 128 == 0 && (*cols * eb) % 128 == 0 && *width * eb != 64;
    return on_panels && (k_major || (*width * eb) % 128 == 0);
  };
  if ((!a_whole && !window(op->a, !op->trans_a, &ar, &ac, &a_col0, &a_width)) ||
      (!b_whole && !window(op->b, op->trans_b, &br, &bc, &b_col0, &b_width))) {
    if (op->async_wgmma) {
      return "an operand is neither a whole 2-D tile (or a stage of one) nor a window of whole rows: of a K-major "
             "operand, in a tile of 64-byte rows or rows of a multiple of 128 bytes, whose columns start on a "
             "swizzle panel or lie inside one; of an M- or N-major one, whole 128-byte panels";
    }
    return options.windows ? "an operand is neither a whole 2-D tile nor a window of whole rows whose columns "
                             "start on a 128-byte panel (and, along M or N, span whole panels)"
                           : "an operand is not a whole 2-D tile";
  }
  int64_t k = op->trans_a ? ar : (a_whole ? ac : a_width);
  // (a K-major B's window spans K; an N-major one's, N)
  if (!b_whole && op->trans_b && b_width != k) return "B's window is not A's K wide";
  if (!b_whole && !op->trans_b && b_width != n) return "B's window is not C's N wide";
  if (!a_whole && op->trans_a && a_width != m) return "A's window is not C's M tall";

  // Registers have no panels: only B's shared layout constrains a register A.
  if (a_in_registers) ar = ac = 64;
  const int64_t wgs = threads / 128;
  if (m <= 0 || m % 64 || threads % 128 || (wgs % (m / 64) && (m / 64) % wgs)) {
    return "wgmma needs one warp per 16 rows of C, or warpgroups along N as well (block_M = 64 x warpgroups "
           "along M; here M = " + std::to_string(m) + " with " + std::to_string(threads) + " threads)";
  }
  if (n % 8 || k % kstep) return "N must be a multiple of 8 and K of " + std::to_string(kstep);
  // More warpgroups than 64-row blocks split N; fewer each own several blocks.
  const int64_t wg_n = wgs % (m / 64) == 0 ? wgs / (m / 64) : 1;
  if (wg_n > 1) {
    // The extra warpgroups split N.
    std::string split = std::to_string(threads / 128) + " warpgroups for " + std::to_string(m) + " rows";
    if (a_in_registers) return split + " would split N, which a register operand A does not support here";
    int64_t cols = n / wg_n;
    // (an N-major B's part: whole 64-column panels, or with split_in_panel a part of one)
    const bool in_panel = options.split_in_panel && 64 % cols == 0;
    if (n % wg_n || cols % 8 || (!op->trans_b && cols % 64 && !in_panel)) {
      return split + " split N = " + std::to_string(n) + " into parts that are not " +
             (op->trans_b ? "multiples of 8"
                          : options.split_in_panel ? "whole 64-column panels of B or parts dividing one"
                                                   : "whole 64-column panels of B (tl.wgmma_split_in_panel is off)");
    }
  }
  // (a float16 accumulator's instructions come in widths of 16 columns: wgmma_f16_acc.h)
  if (F16Accumulator(op) && (n / wg_n) % 16) {
    return "a float16 accumulator needs each warpgroup's N a multiple of 16 (here " + std::to_string(n / wg_n) + ")";
  }
  if (warpgroups_n) *warpgroups_n = wg_n;
  // Rows of 128-byte multiples take 128-byte panels (three for a head dimension of 192);
  // a K-major operand whose whole K is 64 bytes (K = 32 of 16-bit, K = 64 of float8) takes
  // the 64-byte swizzle instead. Either way the planner aligns the tile to 1024 bytes.
  auto cols_fit = [&](int64_t c, bool k_major) {
    return (c * eb) % 128 == 0 || (k_major && c * eb == 64 && (k * eb == 64 || op->async_wgmma));
  };
  if (!cols_fit(ac, !op->trans_a) || !cols_fit(bc, op->trans_b) || ar % 8 || br % 8) {
    return "the contiguous dimension of each shared operand must be a multiple of 128 bytes (128-byte "
           "swizzle panels), or 64 bytes along K when that is all of K (64-byte swizzle), and the other one a "
           "multiple of 8";
  }
  return "";
}

}  // namespace tl::transform::cuda
