// SPDX-License-Identifier: Apache-2.0
/// \file One declaration per pass. Each is registered under the name in its comment.
#pragma once

#include "tl/transform/pass.h"

namespace tl::transform {

/// "simplify": arithmetic simplification of every expression; drops guards and loops
/// that are provably redundant (see arith::Simplify). Safe anywhere in a pipeline.
ir::PrimFunc Simplify(const ir::PrimFunc& f, PassContext& ctx);

/// "guard-global-access": user element accesses to global tensors that may be out of
/// range read zero / skip the write, as T.copy does. Runs before tile-op lowering.
ir::PrimFunc GuardGlobalAccess(const ir::PrimFunc& f, PassContext& ctx);

/// "lower-tile-ops": replaces T.copy / fill / reduce / atomic by whole-tile loops with
/// edge guards, on both targets. After it no tile-op node is left; GEMMs are lowered before
/// it by each target ("cpu-lower-gemm": a call into the CPU tile-GEMM library).
/// Precondition: regions were checked by the front end.
ir::PrimFunc LowerTileOps(const ir::PrimFunc& f, PassContext& ctx);

/// One tile op (copy, fill, reduce, atomic; not a GEMM) as the loop nests lower-tile-ops
/// makes of it (T.Parallel nests with edge guards).
ir::Stmt LowerTileOpToLoops(const ir::Stmt& op);

/// "lower-buffer-views": T.reshape / T.view buffers (declared by "tl.buffer_view" markers)
/// are replaced by their storage: element accesses are re-indexed through the row-major
/// linear position, and tile ops that touch a view become loop nests first. Runs first.
ir::PrimFunc LowerBufferViews(const ir::PrimFunc& f, PassContext& ctx);

/// "legalize-index-width": accesses to global tensors that may hold 2^31 elements or more
/// get int64 indices (their terms widened before they are combined); index guards and
/// grid sizes that may pass 2^31 are computed in 64 bits. Pass config
/// "tl.config_index_bitwidth" ("32" or "64") overrides. Runs last, on final indices.
ir::PrimFunc LegalizeIndexWidth(const ir::PrimFunc& f, PassContext& ctx);

/// One function per top-level T.Kernel, in program order, each with all of f's
/// parameters and named "<name>_<k>"; f itself when it has one kernel. Launched one after
/// another on one stream they run in order, as the kernels of f must. Host statements
/// between kernels are a CompileError.
std::vector<ir::PrimFunc> SplitKernels(const ir::PrimFunc& f);

/// The tensor parameters f may write (stores, tile-op destinations, atomics, taken
/// addresses), by name, in parameter order. Read by the PyTorch custom-op wrapper to
/// declare which inputs an op mutates.
std::vector<std::string> WrittenParams(const ir::PrimFunc& f);

/// One fragment's register layout as the CUDA lowering chose it: for element (i, j) at
/// i * cols + j, the first thread holding it, that thread's register, and how many threads
/// hold a copy (row vectors are replicated over the lanes of a row); -1 / 0 if none.
struct FragmentTable {
  std::string name, layout, origin;
  int64_t rows = 0, cols = 0, threads = 0, locals = 0;
  std::vector<int64_t> thread, local, replicas;
};

/// The register fragments of f (one T.Kernel) and their layouts, for ctx.config's
/// "tl.target_arch"; fragments kept in shared memory are not listed.
std::vector<FragmentTable> DescribeFragmentLayouts(const ir::PrimFunc& f, PassContext& ctx);

/// "raise-parallel-copies": in a T.Pipelined body, a T.Parallel nest that only copies a
/// global box into a whole shared tile becomes that tile copy (so the pipeliner prefetches it).
/// Switch tl.raise_parallel_copies: on for the CPU target, off for CUDA (a remark) for now.
ir::PrimFunc RaiseParallelCopies(const ir::PrimFunc& f, PassContext& ctx);

/// "check-tile-bounds": an unconditional access to a tile (shared, fragment, local) whose
/// index certainly leaves it (linear in loops and block indices of constant ranges) is a
/// CompileError at its line. Global tensors are guarded instead (guard-global-access).
ir::PrimFunc CheckTileBounds(const ir::PrimFunc& f, PassContext& ctx);

/// "hoist-pipelined-allocations": shared tiles allocated inside a T.Pipelined body are
/// allocated once before the loop (pipelining loads a stage in a prologue outside it).
ir::PrimFunc HoistPipelinedAllocations(const ir::PrimFunc& f, PassContext& ctx);

/// "report-layout-annotations": T.annotate_layout is not applied (the compiler chooses
/// tile layouts); each annotated tile is named in a remark, and the annotation dropped.
ir::PrimFunc ReportLayoutAnnotations(const ir::PrimFunc& f, PassContext& ctx);

/// "report-packed-tensors": each 4-bit global tensor (two values per byte) is checked (an
/// even last dimension) and named in a remark saying how its elements are read and written.
ir::PrimFunc ReportPackedTensors(const ir::PrimFunc& f, PassContext& ctx);

/// "cpu-emulate-threads": kernels with thread-level code (T.get_thread_binding, per-thread
/// locals, T.warp_reduce_*, T.shfl_*) run their threads in lockstep on the CPU: each
/// thread-dependent statement becomes a loop over the block's threads. What lockstep
/// cannot express (thread-dependent loop bounds, ...) is a CompileError at its line.
ir::PrimFunc CpuEmulateThreads(const ir::PrimFunc& f, PassContext& ctx);

/// The CPU pipeline, in order (see pipeline_cpu.cc for why each pass is where it is).
ir::PrimFunc LowerForCpu(const ir::PrimFunc& f, PassContext& ctx);

// ---- CUDA (src/transform/cuda/) ------------------------------------------------------

/// "cuda-bind-threads": wraps each kernel body in a kThreadBinding loop binding the flat
/// thread index `tx`, which later CUDA passes use to spread work over threads.
ir::PrimFunc CudaBindThreads(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-lower-fragments": layout inference for fragments (the mma accumulator layout of
/// T.gemm, propagated through T.Parallel and fragment copies), then rewrites register
/// fragments to per-thread arrays and T.gemm to gemm_ss; other fragments move to shared
/// memory. Conflicting layouts are a CompileError naming both operations.
ir::PrimFunc CudaLowerFragments(const ir::PrimFunc& f, PassContext& ctx);

/// "normalize-role-branches": `if tid >= 128: P else: C` in a kernel that programs its
/// barriers on two warpgroups becomes `with T.ws(1): P` and `with T.ws(0): C`.
ir::PrimFunc NormalizeRoleBranches(const ir::PrimFunc& f, PassContext& ctx);

/// "stage-ws-pipelines": a T.Pipelined loop with num_stages >= 2 in a kernel with T.ws blocks: the tiles it loads
/// from global memory and the barriers that hand them over get one copy per stage, each
/// barrier's waits on its own stage's phases (stage_ws_pipelines.cc), as upstream does.
ir::PrimFunc StageWsPipelines(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-forward-shared-copies": a copy between two whole shared tiles (a fragment kept
/// in shared memory, say) is dropped when nothing writes either while the destination is
/// read; its reads read the source.
ir::PrimFunc CudaForwardSharedCopies(const ir::PrimFunc& f, PassContext& ctx);
/// sm_90a: a GEMM accumulator's store to global after its pipelined loop through a shared tile.
ir::PrimFunc CudaStageAccumulatorStores(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-pipeline": T.Pipelined loops whose body starts with global->shared copies become
/// num_stages-deep cp.async pipelines over staged shared buffers; others run in order.
ir::PrimFunc CudaPipeline(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-lower-copies": remaining global<->shared copies as vectorized loops spread over
/// the threads, with edge predicates.
ir::PrimFunc CudaLowerCopies(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-partition-parallel": every remaining T.Parallel nest spread over the threads.
ir::PrimFunc CudaPartitionParallel(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-vectorize-loops": a T.vectorized copy between two buffers as one 4-, 8- or
/// 16-byte tl::copy per group of elements provably consecutive and aligned in both
/// (vectorize_loops.cc); any other T.vectorized loop stays element by element, with a remark.
ir::PrimFunc CudaVectorizeLoops(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-plan-shared-memory": places the shared buffers in the dynamic arena so that
/// buffers never live at the same time may share bytes (live intervals over the final
/// statement order; cp.async targets stay live until a wait for all copies). Records each
/// offset as T.attr("tl.shared_offset", offset) before the buffer's Allocate. Runs last
/// before cuda-insert-barriers, which orders the reuse; codegen reads the offsets.
ir::PrimFunc CudaPlanSharedMemory(const ir::PrimFunc& f, PassContext& ctx);

/// "cuda-insert-barriers": __syncthreads where shared-memory accesses of different
/// statements conflict (RAW, WAR, WAW), including around loop back edges. Buffers whose
/// planned bytes overlap count as the same memory.
ir::PrimFunc CudaInsertBarriers(const ir::PrimFunc& f, PassContext& ctx);

/// The CUDA pipeline (see pipeline_cuda.cc).
ir::PrimFunc LowerForCuda(const ir::PrimFunc& f, PassContext& ctx);

/// The CUDA pipeline's first passes, up to (not including) cuda-lower-fragments: what layout
/// inference sees (DescribeFragmentLayouts runs it too).
ir::PrimFunc PrepareForCudaFragments(const ir::PrimFunc& f, PassContext& ctx);

}  // namespace tl::transform
