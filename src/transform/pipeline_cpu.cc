// SPDX-License-Identifier: Apache-2.0
/// \file The CPU pipeline. A block runs its tile ops as whole-tile loops, one after the
/// other; only kernels with thread-level code loop over their threads (in lockstep).
#include "tl/transform/passes.h"

namespace tl::transform {

ir::PrimFunc LowerForCpu(const ir::PrimFunc& f, PassContext& ctx) {
  // T.reshape / T.view become accesses of their storage before any pass looks at buffers.
  ir::PrimFunc out = RunPass("lower-buffer-views", f, ctx);
  // The emitter's ldmatrix loads: the element loads that fill the same registers.
  out = RunPass("lower-ldmatrix-operands", out, ctx);
  // A T.Parallel nest in a T.Pipelined body that only copies a global box into a shared
  // tile is that tile copy: the pipeliner prefetches it.
  out = RunPass("raise-parallel-copies", out, ctx);
  // Conversions with upstream's restrictions (stochastic rounding saturates).
  out = RunPass("check-target-features", out, ctx);
  // Reducers updated from T.Parallel nests of one shape accumulate in registers.
  out = RunPass("privatize-reducers", out, ctx);
  // `if tid >= 128: P else: C` in a kernel that programs its barriers: two T.ws blocks.
  out = RunPass("normalize-role-branches", out, ctx);
  // Its T.Pipelined loops with num_stages: their tiles and barriers one copy per stage.
  out = RunPass("stage-ws-pipelines", out, ctx);
  // A global tensor with an annotated storage order: its tile ops become element loops ...
  out = RunPass("expand-global-layout-tile-ops", out, ctx);
  out = RunPass("report-layout-annotations", out, ctx);
  out = RunPass("report-packed-tensors", out, ctx);
  // Thread-level code (the thread index, warp shuffles) runs its threads in lockstep.
  out = RunPass("cpu-emulate-threads", out, ctx);
  // Simplify first so that tile-op regions are in canonical form before lowering.
  out = RunPass("simplify", out, ctx);
  // A tile access that certainly leaves its tile is refused before anything is lowered.
  out = RunPass("check-tile-bounds", out, ctx);
  // The user's own element accesses to global tensors: safe at the edges, as tile ops are.
  out = RunPass("guard-global-access", out, ctx);
  // ... whose accesses, checked and guarded on logical indices, now address the storage.
  out = RunPass("apply-global-layouts", out, ctx);
  // Tiles wider than the tensors they meet, for every block, cut along a GEMM's M or N
  // (as on CUDA: the CPU's float64 checks run the cut program).
  out = RunPass("shrink-tiles-to-tensors", out, ctx);
  // T.gemm becomes a call into the CPU tile-GEMM library ...
  out = RunPass("cpu-lower-gemm", out, ctx);
  // ... and the other tile ops loops with edge guards; the guards are written naively ...
  out = RunPass("lower-tile-ops", out, ctx);
  // ... because this simplify proves most of them true (interior tiles) and drops them.
  out = RunPass("simplify", out, ctx);
  // 16-bit a * b + c as one fma, rounded once (nvcc's contraction, on both targets).
  out = RunPass("contract-half-fma", out, ctx);
  // Last, on the final index expressions: 64-bit offsets where a tensor may pass 2^31.
  out = RunPass("legalize-index-width", out, ctx);
  return out;
}

}  // namespace tl::transform
