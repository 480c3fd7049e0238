// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA pipeline: ldmatrix + mma.sync + cp.async (the sm_80 path, which runs on
/// Hopper too), and wgmma for the GEMMs that fit it on sm_90a.
#include "tl/transform/passes.h"

namespace tl::transform {

ir::PrimFunc PrepareForCudaFragments(const ir::PrimFunc& f, PassContext& ctx) {
  // Layout annotations are reported, not applied: the passes below choose every layout.
  // T.reshape / T.view become accesses of their storage before any pass looks at buffers.
  ir::PrimFunc out = RunPass("lower-buffer-views", f, ctx);
  // The emitter's ldmatrix loads: kept for the code generator (tl.emitter_ldmatrix, on), else element loads.
  out = RunPass("lower-ldmatrix-operands", out, ctx);
  // A T.Parallel nest in a T.Pipelined body that only copies a global box into a shared
  // tile is that tile copy: the pipeliner prefetches it.
  out = RunPass("raise-parallel-copies", out, ctx);
  // sm_90a: a GEMM accumulator stored after its loop goes through a shared tile (stmatrix
  // and one TMA store) where the loop's dead tiles have the bytes.
  out = RunPass("cuda-stage-accumulator-stores", out, ctx);
  // Conversions with upstream's restrictions (stochastic rounding: saturating, sm_100a).
  out = RunPass("check-target-features", out, ctx);
  // Reducers updated from T.Parallel nests of one shape accumulate in registers.
  out = RunPass("privatize-reducers", out, ctx);
  // `if tid >= 128: P else: C` in such a kernel is the two T.ws blocks it means.
  out = RunPass("normalize-role-branches", out, ctx);
  // Its T.Pipelined loops with num_stages: their tiles and barriers one copy per stage.
  out = RunPass("stage-ws-pipelines", out, ctx);
  // A kernel that programs its barriers (T.ws, T.alloc_barrier) keeps its own schedule:
  // its warpgroups split as the automatic warp specialization's would, no pipelining added.
  out = RunPass("cuda-explicit-warp-specialize", out, ctx);
  // A global tensor with an annotated storage order: its tile ops become element loops ...
  out = RunPass("expand-global-layout-tile-ops", out, ctx);
  // Tiles a pipelined loop stages must exist before it (its prologue loads them).
  out = RunPass("hoist-pipelined-allocations", out, ctx);
  // A short loop that offsets fragment rows by its variable: one copy per step, so the
  // register walks below see constant offsets.
  out = RunPass("cuda-unroll-fragment-offsets", out, ctx);
  out = RunPass("report-layout-annotations", out, ctx);
  out = RunPass("report-packed-tensors", out, ctx);
  // Canonical regions first: layout inference matches fragment indices structurally.
  out = RunPass("simplify", out, ctx);
  // A tile access that certainly leaves its tile is refused before anything is lowered.
  out = RunPass("check-tile-bounds", out, ctx);
  // The user's own element accesses to global tensors: safe at the edges, as tile ops are.
  out = RunPass("guard-global-access", out, ctx);
  // ... whose accesses, checked and guarded on logical indices, now address the storage.
  out = RunPass("apply-global-layouts", out, ctx);
  // Tiles wider than the tensors they meet, for every block, cut along a GEMM's N
  // (after the guards: a copy from a tensor with a safe value is a loop by now).
  out = RunPass("shrink-tiles-to-tensors", out, ctx);
  // Every later pass spreads work over threads through the binding of `tx`.
  return RunPass("cuda-bind-threads", out, ctx);
}

ir::PrimFunc LowerForCuda(const ir::PrimFunc& f, PassContext& ctx) {
  ir::PrimFunc out = PrepareForCudaFragments(f, ctx);
  // Fragment layouts must be known before copies are lowered: copies of register
  // fragments walk each thread's registers, the rest become shared-memory copies.
  out = RunPass("cuda-lower-fragments", out, ctx);
  // A fragment kept in shared memory that only copies a shared tile reads that tile.
  out = RunPass("cuda-forward-shared-copies", out, ctx);
  // T.tma_copy: TMA boxes into tiles whose layouts are known now.
  out = RunPass("cuda-lower-explicit-tma", out, ctx);
  // Pipelining needs the producer copies still as tile ops (it stages their buffers and
  // lowers them itself). On sm_90a a pipelined loop whose copies TMA can do gets a
  // producer warpgroup and mbarriers; the others get the cp.async pipeline.
  out = RunPass("cuda-warp-specialize", out, ctx);
  out = RunPass("cuda-pipeline", out, ctx);
  out = RunPass("cuda-lower-copies", out, ctx);
  // Whatever tile ops are left (fills, reductions, atomics, casting copies) become
  // T.Parallel loop nests, the same target-neutral lowering the CPU uses ...
  out = RunPass("lower-tile-ops", out, ctx);
  // ... and those nests, with the user's own, are spread over the threads.
  out = RunPass("cuda-partition-parallel", out, ctx);
  // Drop provably true edge predicates before barriers: fewer statements to analyse.
  out = RunPass("simplify", out, ctx);
  // A short loop of the emitter's warp MMA steps: printed unrolled (constant addresses).
  out = RunPass("cuda-unroll-mma-steps", out, ctx);
  // T.vectorized copies: one 4-, 8- or 16-byte access per group of elements.
  out = RunPass("cuda-vectorize-loops", out, ctx);
  // sm_90+: a register walk's float atomics into global memory, two or four at a time.
  out = RunPass("cuda-vectorize-atomics", out, ctx);
  // Element conversions of a register walk: two registers per packed conversion.
  out = RunPass("cuda-pair-conversions", out, ctx);
  // Shared buffers never live together share bytes. Liveness needs the final statement
  // order, and the barriers that make reuse safe are placed next, from this plan.
  out = RunPass("cuda-plan-shared-memory", out, ctx);
  // Last: barriers depend on the final statement order.
  out = RunPass("cuda-insert-barriers", out, ctx);
  // 16-bit a * b + c as one fma, rounded once (nvcc's contraction, on both targets).
  out = RunPass("contract-half-fma", out, ctx);
  // On the final index expressions: 64-bit offsets where a tensor may pass 2^31.
  out = RunPass("legalize-index-width", out, ctx);
  // T.annotate_min_blocks_per_sm: a marker the code generator reads into __launch_bounds__.
  out = RunPass("cuda-launch-bounds", out, ctx);
  return out;
}

}  // namespace tl::transform
