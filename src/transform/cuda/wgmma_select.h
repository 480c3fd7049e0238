// SPDX-License-Identifier: Apache-2.0
/// \file Instruction selection for T.gemm on Hopper: when wgmma applies.
#pragma once

#include <string>

#include "tl/ir/stmt.h"
#include "tl/transform/pass.h"

namespace tl::transform::cuda {

/// Optional wgmma paths, from the pass configs (WgmmaOptionsOf).
struct WgmmaOptions {
  bool fp8 = false;      ///< float8 operands ("tl.enable_wgmma_fp8", on unless set to False)
  bool windows = false;  ///< column windows of shared operands ("tl.enable_wgmma_windows", on)
  bool stages = false;   ///< a stage X[s, :, :] of a 3-D shared tile ("tl.enable_wgmma_stages", off)
  /// Not a wgmma path, but the other tensor-core switch layout inference needs: mma.sync's
  /// tf32 instructions ("tl.enable_tf32_mma", on), without which a tfloat32 register A
  /// cannot be read in place (gemm_rs_tf32 has no loop fallback).
  bool tf32_mma = true;
  /// mma.sync m16n8k16 with a float16 accumulator for float16 operands
  /// ("tl.mma_f16_accumulators", on since an H200 run checked it): else multiply-add loops.
  bool f16_acc_mma = true;
  /// wgmma .f16.f16.f16: float16 operands into a float16 accumulator, half the accumulator
  /// registers ("tl.wgmma_f16_accumulators", on; 0 sends such GEMMs to mma.sync).
  bool f16_acc = true;
  /// Warpgroups splitting N of an N-major B inside one 128-byte panel (each warpgroup's N
  /// dividing 64: its descriptor starts part-way along the panel's rows), as upstream's
  /// sparse MLA backward's dQ-tail GEMM needs ("tl.wgmma_split_in_panel"; on: checked on
  /// the H100 by tests/cuda/wgmma_test.cu; off, such GEMMs take mma.sync).
  bool split_in_panel = true;
};

/// The options the pass configs of `ctx` set.
WgmmaOptions WgmmaOptionsOf(const PassContext& ctx);

/// Why `op` cannot use wgmma (tl::gemm_ss_wgmma) in a block of `threads` threads on
/// `arch`, or "" when it can. wgmma needs sm_90a; 16-bit A and B (float16 ones may
/// accumulate into float16 with `options.f16_acc`, N per warpgroup a multiple of 16), both whole shared
/// tiles whose contiguous dimension is a multiple of 64 elements (one 128-byte swizzle
/// panel) and whose other dimension is a multiple of 8; a float32 accumulator of M x N
/// with M a multiple of 64 and one warp per 16 rows (warpgroup g owns rows 64g..64g+63,
/// which keeps the mma.sync accumulator layout with warps M/16 x 1); N and K multiples of
/// 8 and 16. With `a_in_registers`, A is a register fragment in that accumulator layout
/// (tl::gemm_rs_wgmma) and only B's shared layout is constrained.
/// Fewer warpgroups than 64-row blocks each take several (interleaved rows, one m64 wgmma
/// per block); more warpgroups than 64-row blocks split N between them (*warpgroups_n of them, each
/// with N / *warpgroups_n columns, whole 64-column panels of an N-major B); not with a
/// register A. GemmWarpPolicy.FullRow splits N too once the rows run out, as upstream's does.
/// float8 operands (k32 steps, K-major A and B only) only with `options.fp8`. With
/// `options.windows`, a K-major shared operand (A as M x K, B as N x K) may be a window of
/// whole rows and the columns [c0, c0 + K) of a wider tile, c0 on a 128-byte panel (upstream's
/// MLA kernels multiply Q_shared[:, :512] and Q_shared[:, 512:]): the operand starts at
/// that panel and the tile's own panel stride is unchanged. An M- or N-major operand (A as
/// K x M, B as K x N) may be such a window too when its width is whole panels (the sparse MLA
/// kernels' P x V reads KV_shared[stage, :, :256] as K x N). With `options.stages`, the window
/// may be of a stage of a staged tile.
std::string WgmmaUnfit(const ir::GemmOp* op, int64_t threads, const target::CudaTarget& target,
                       bool a_in_registers = false,
                       int64_t* warpgroups_n = nullptr, WgmmaOptions options = {});

}  // namespace tl::transform::cuda
