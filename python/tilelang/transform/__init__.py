"""Pass configuration keys, as TileLang programs name them: ``pass_configs={
tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}``. Plain strings ("tl.enable_fast_math")
work too.

Every key upstream TileLang defines is a member here, so programs that name them compile.
Keys this compiler acts on are listed in ``ACTED_ON``; any other key (an upstream one or an
unknown string) is accepted and named in ``kernel.get_remarks()`` as having no effect."""
from __future__ import annotations

import enum


class PassConfigKey(str, enum.Enum):
    TL_SIMPLIFY = "tl.Simplify"
    TL_SIMPLIFY_TRANSITIVELY_PROVE_INEQUALITIES = "transitively_prove_inequalities"
    TL_SIMPLIFY_CONVERT_BOOLEAN_TO_AND_OF_ORS = "convert_boolean_to_and_of_ors"
    TL_SIMPLIFY_APPLY_CONSTRAINTS_TO_BOOLEAN_BRANCHES = "apply_constraints_to_boolean_branches"
    TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_PROVE_CONDITIONAL = "propagate_knowns_to_prove_conditional"
    TL_SIMPLIFY_PROPAGATE_KNOWNS_TO_SIMPLIFY_EXPRESSIONS = "propagate_knowns_to_simplify_expressions"
    TL_SIMPLIFY_ENABLE_LET_INLINE = "enable_simplify_let_inline"
    TL_DISABLE_BUFFER_INIT_CHECK = "tl.disable_buffer_init_check"
    TL_DISABLE_DATA_RACE_CHECK = "tl.disable_data_race_check"
    TL_DISABLE_PRELOWER_SEMANTIC_CHECK = "tl.disable_prelower_semantic_check"
    TL_DISABLE_WARP_SPECIALIZED = "tl.disable_warp_specialized"
    TL_ENABLE_FAST_MATH = "tl.enable_fast_math"
    TL_PTXAS_REGISTER_USAGE_LEVEL = "tl.ptxas_register_usage_level"
    TL_DEVICE_COMPILE_FLAGS = "tl.device_compile_flags"
    TL_EMIT_LINE_DIRECTIVES = "tl.emit_line_directives"
    TL_CONFIG_INDEX_BITWIDTH = "tl.config_index_bitwidth"
    TL_ENABLE_REDUCER_PLAN_VERBOSE = "tl.enable_reducer_plan_verbose"
    TL_LAYOUT_COST_MODEL = "tl.layout_cost_model"
    TL_REDUCER_FORCE_BASELINE = "tl.reducer_force_baseline"
    TL_DISABLE_TMA_LOWER = "tl.disable_tma_lower"
    TL_DISABLE_SAFE_MEMORY_ACCESS = "tl.disable_safe_memory_legalize"
    TL_DISABLE_VECTORIZE_256 = "tl.disable_vectorize_256"
    TL_ENABLE_ASYNC_COPY = "tl.enable_async_copy"
    TL_ENABLE_LOWER_LDGSTG = "tl.enable_lower_ldgstg"
    TL_ENABLE_LOWER_LDGSTG_PREDICATED = "tl.enable_lower_ldgstg_predicated"
    TL_ENABLE_VECTORIZE_PLANNER_VERBOSE = "tl.enable_vectorize_planner_verbose"
    TL_DISABLE_WGMMA = "tl.disable_wgmma"
    TL_DEBUG_MERGE_SHARED_MEMORY_ALLOCATIONS = "tl.debug_merge_shared_memory_allocations"
    TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE = "tl.enable_aggressive_shared_memory_merge"
    TL_DISABLE_SHARED_MEMORY_REUSE = "tl.disable_shared_memory_reuse"
    TL_DISABLE_SHUFFLE_ELECT = "tl.disable_shuffle_elect"
    TL_DISABLE_LOOP_UNSWITCHING = "tl.disable_loop_unswitching"
    TL_LOOP_UNSWITCHING_ALLOW_NON_TRIVIAL_ELSE = "tl.loop_unswitching_allow_non_trivial_else"
    TL_IF_STMT_BINDING_INLINE_REPLAYABLE_BINDS = "tl.if_stmt_binding_inline_replayable_binds"
    TL_DISABLE_THREAD_STORAGE_SYNC = "tl.disable_thread_storage_sync"
    TL_FORCE_LET_INLINE = "tl.force_let_inline"
    TL_AST_PRINT_ENABLE = "tl.ast_print_enable"
    TL_LAYOUT_VISUALIZATION_ENABLE = "tl.layout_visualization_enable"
    TL_LAYOUT_VISUALIZATION_FORMATS = "tl.layout_visualization_formats"
    TL_STORAGE_REWRITE_DETECT_INPLACE = "tl.storage_rewrite_detect_inplace"
    TIR_ENABLE_EQUIV_TERMS_IN_CSE = "tir.enable_equiv_terms_in_cse_tir"
    TIR_DISABLE_CSE = "tirx.disable_cse_tir"
    TIR_SIMPLIFY = "tirx.Simplify"
    TIR_DISABLE_STORAGE_REWRITE = "tirx.disable_storage_rewrite"
    TIR_DISABLE_VECTORIZE = "tirx.disable_vectorize"
    TIR_USE_ASYNC_COPY = "tirx.use_async_copy"
    TIR_ENABLE_DEBUG = "tirx.enable_debug"
    TIR_MERGE_STATIC_SMEM = "tirx.merge_static_smem"
    TIR_ADD_LOWER_PASS = "tirx.add_lower_pass"
    TIR_NOALIAS = "tirx.noalias"
    CUDA_KERNELS_OUTPUT_DIR = "cuda.kernels_output_dir"
    TL_DISABLE_OUT_OF_BOUND_WARNING = "tl.disable_out_of_bound_warning"
    TL_ENABLE_DUMP_IR = "tl.enable_dump_ir"
    TL_DUMP_IR_DIR = "tl.dump_ir_path"
    TL_PASS_PROFILE = "tl.pass_profile"
    TL_PASS_PROFILE_THRESHOLD_MS = "tl.pass_profile_threshold_ms"

    def __str__(self):
        return self.value


# Our older spelling of TL_DISABLE_SAFE_MEMORY_ACCESS's value (upstream: "tl.disable_safe_memory_legalize").
_ALIASES = {"tl.disable_safe_memory_access": "tl.disable_safe_memory_legalize"}

# Keys the compiler reads (src/transform, jit/cuda_backend.py); "tl.target_arch" is internal.
ACTED_ON = {
    "tl.enable_fast_math": "CUDA: NVRTC --use_fast_math",
    "tl.config_index_bitwidth": "index width of global offsets (legalize-index-width)",
    "tl.loop_terms_apart": "1: an address inside unrolled loops (T.unroll, T.vectorized, at most 16 constant trips) keeps the innermost such loops' terms apart, so that nvcc folds their steps into immediate offsets: 64-bit global offsets widen the loop terms and the others as two values, the loop terms last (legalize-index-width), and CUDA prints an element's address as the address the loops start from plus the loop terms (on by default; 0: one offset)",
    "tl.target_arch": "the CUDA arch (set by the JIT)",

    # tilelang/lower.py (docs/export.md)
    "tl.enable_dump_ir": "the IR after each pass, one numbered file each",
    "tl.dump_ir_path": "the folder for tl.enable_dump_ir",
    "tl.pass_profile": "per-pass wall times printed to stderr",
    "tl.pass_profile_threshold_ms": "only passes slower than this are printed",
}


# Keys only the CUDA target reads (src/transform/cuda/warp_specialize.cc): on the CPU they
# have no effect, and the remark says so.
ACTED_ON_CUDA = {
    "tl.disable_warp_specialized": "no producer warpgroup (cp.async pipelines)",
    "tl.disable_tma_lower": "no TMA loads, hence no warp specialization, and no TMA stores",
    "tl.disable_tma_store": "no TMA stores, T.tma_copy's included",
    "tl.vectorize_parallel_copies": "0: a T.Parallel element copy into a tensor along its innermost loop stays element by element per thread (on by default: 16 bytes per group, one vector store each)",
    "tl.prefer_async_copies": "T.Parallel(prefer_async=True) element copies into shared tiles are issued as cp.async, the program's own groups (on by default); 0: they are lowered as other T.Parallel copies (a remark says so)",
    "tl.vectorize_parallel_elementwise": "0: a T.Parallel element-wise computation into a tensor or shared tile along its innermost loop stays element by element per thread (on by default: 16 bytes of elements per thread at a time, loads and store through registers; 1.20x on an fp16 axpy on the H200, on par with upstream)",
    "tl.stmatrix_stores": "1: an mma accumulator copied whole into a 16-bit shared tile is stored with stmatrix.x4, 8 elements per lane per instruction (sm_90+; on by default)",
    "tl.group_register_walks": "0: register walks (T.Parallel over a register fragment, its copies) access shared tiles and tensors element by element, not in 4-16-byte groups (CUDA; on by default)",
    "tl.auto_tma_store": "0: a T.copy of a whole shared tile into a global tensor is stored by the threads, not TMA (sm_90+; on by default)",
    "tl.min_blocks_per_sm": "the second argument of __launch_bounds__ (T.annotate_min_blocks_per_sm)",
    "tl.device_compile_flags": "extra NVRTC options (a string, split as a shell would, or a list), after ours",
    "tl.tma_cache_hint": "the L2 cache policy every TMA load of a kernel carries: none (no hint), evict_normal (upstream's), evict_first or evict_last",
    "tl.raster_panel": "block rasterization panel width for kernels whose source has no T.use_swizzle (0: the plain block order; unset: 8 for 2-D GEMM grids wider than 8)",
    "tl.mma_f16_accumulators": "T.gemm of float16 tiles into a float16 accumulator on mma.sync m16n8k16 .f16 (on by default; 0: multiply-add loops, a remark says so)",
    # ours, on unless set to False (src/transform/cuda/wgmma_select.cc, jit/cuda_backend.py)
    "tl.enable_wgmma_fp8": "float8 GEMMs on Hopper's k32 wgmma",
    "tl.enable_dynamic_alignment": "a variant for dynamic row lengths that are multiples of 16 (jit/cuda_backend.py)",
    "tl.enable_float8_hw_convert": "float8 conversions with sm_89+'s cvt instructions (TL_FLOAT8_HW_CVT)",
    "tl.enable_native_half_arith": "16-bit float + - * as native add/sub/mul.rn.f16/bf16 (templates/tl/cuda/types.h)",
    "tl.contract_half_fma": "16-bit float a * b + c as one fma rounded once, on both targets, as nvcc contracts float (src/transform/contract_half_fma.cc)",
    "tl.enable_staging_swizzle": "XOR-swizzle shared tiles no GEMM reads whose accesses allow it (shared_plan.h StagingTiles)",
    "tl.enable_tf32_mma": "T.gemm on tfloat32 tiles with mma.sync m16n8k8 tf32 (templates/tl/cuda/tile_ops.h)",
    "tl.shrink_tiles": "tiles wider than the tensors they are loaded from and stored to, for every block, cut along a GEMM's N (on; src/transform/shrink_tiles.cc)",
    "tl.gemm_live_columns": "wgmma over only the columns of B that lie inside its tensor for every block (on; src/transform/cuda/gemm_live_columns.cc)",
    "tl.wgmma_split_in_panel": "warpgroups splitting N of an N-major wgmma B inside one 64-column panel (src/transform/cuda/wgmma_select.cc)",
    "tl.enable_wgmma_windows": "wgmma on column windows of K-major shared tiles (src/transform/cuda/wgmma_select.cc)",
    "tl.enable_gather_pipeline": "element copies into shared tiles of a T.Pipelined loop prefetched by cp.async (gather_copy.h)",
    "tl.pipeline_early_refill": "a cp.async pipeline whose stages are read only by its first statements (copies into registers), or one that gathers rows, refills each stage right after its last reader: one more stage of loads in flight",
    "tl.pipeline_single_stage": "T.Pipelined(num_stages=1) loads the next iteration into each single tile as cp.async right after its last reader, as upstream does (src/transform/cuda/pipeline_async.cc; on by default, false: loads in order)",
    "tl.ws_skip_masked_steps": "a warp-specialized loop whose whole body is under `if mask[k]:` takes stages only for the k-tiles the mask keeps (on by default; false: every step takes its stage)",
    "tl.unroll_fragment_offsets": "a short serial loop whose T.Parallel nests offset a fragment by its variable is unrolled (src/transform/cuda/unroll_fragment_offsets.cc; on by default)",
    "tl.range_register_tiles": "register tiles used only under a branch on a range of whole warps laid out over those threads (layout::ThreadRangeLayout); on by default",
    "tl.mma_column_vectors": "a vector read as V[j] in a T.Parallel over an mma accumulator C[i, j] held in registers as the accumulator's columns (layout::MmaColumnsLayout) instead of in shared memory; on by default",
    "tl.stage_accumulator_stores": "sm_90a: a float32 GEMM accumulator stored to a 16-bit tensor after its pipelined loop goes through a shared tile (stmatrix, then one TMA store) where the loop's dead tiles have the bytes (src/transform/cuda/stage_accumulator_stores.cc); on by default (measured on an H100: fp16 8192^3 1.69 -> 1.59 ms); a remark names each copy",
    "tl.raise_parallel_copies": "a T.Parallel nest in a T.Pipelined body that only copies a global box into a whole shared tile becomes that tile copy, so the loop prefetches it (src/transform/raise_parallel_copies.cc); on by default (a remark names each nest raised, or with the switch off each it would raise)",
    "tl.emitter_ldmatrix": "TensorCoreIntrinEmitter.ldmatrix_a / ldmatrix_b of 16-bit tiles as one ldmatrix per micro tile (the ldmatrix_operand intrinsic; src/transform/lower_ldmatrix_operands.cc); on by default, off makes them element loads with a remark",
    "tl.unroll_mma_steps": "a serial loop of at most 8 constant steps that issues the TensorCoreIntrinEmitter's mma and no rolled loop is printed with #pragma unroll (src/transform/cuda/unroll_mma_steps.cc; on by default, a remark names each)",
    # ours, off unless set (measurement switches and paths not yet checked on a GPU)
    "tl.ws_mma_sync": "warp-specialize a pipelined loop whose GEMMs all run on mma.sync (none on wgmma), which otherwise keeps the cp.async pipeline: more blocks per SM (src/transform/cuda/warp_specialize_plan.cc MmaSyncOnly)",
    "tl.pipeline_refill_per_copy": "a cp.async pipeline whose copies are read last by different statements refills each copy's stage after its own last reader and waits for each before its first reader (src/transform/cuda/pipeline_async.cc; off: no gain measured on the H100 for a dequantizing GEMM; loops that gather rows never take it)",
    "tl.pipeline_refill_first": "a cp.async pipeline with one refill point refills the next stage before it waits for the stage a step reads, behind a second barrier, as upstream's code does (off: slower on the H100 for upstream's two-stage emitter GEMM, 0.427 against 0.409 ms)",
    "tl.ws_barrier_groups": "a full/empty barrier pair per group of copies with the same first and last use",
    "tl.ws_softmax_overlap": "on by default (0 turns it off): a warp-specialized attention loop (QK^T, softmax, P V) issues step k + 1's QK^T before step k's P V and runs the softmax while P V does, as FlashAttention-3, with K and V in barrier pairs of their own (src/transform/cuda/warp_specialize_overlap.cc)",
    "tl.ws_softmax_mask_skip": "with tl.ws_softmax_overlap: a mask added to the scores after Q K^T (a causal mask) runs only in the steps where it can change a score, under a guard on the block and the step (src/transform/cuda/warp_specialize_mask.cc; on by default, 0 adds it in every step)",
    "tl.ws_softmax_overlap_pin": "with tl.ws_softmax_overlap: a branch on the softmax's last result before the wait for P V, which ptxas otherwise schedules early (templates/tl/cuda/wgmma.h schedule_after); measured slower on the H100, off by default",
    "tl.ws_tile_loop": "warp specialization of a pipelined loop inside a persistent kernel's tile loop (both roles run the tile loop; stages and phases count on across tiles: src/transform/cuda/warp_specialize_tiles.cc); off by default until it has run on a GPU (such kernels keep the cp.async pipeline)",
    "tl.auto_persistent": "off by default: a warp-specialized kernel whose grid has more blocks than the GPU has SMs is launched as one block per SM walking the grid's blocks in a tile loop (src/transform/cuda/warp_specialize_persistent.cc)",
    "tl.sm_count": "the GPU's SM count for tl.auto_persistent (the JIT sets it from the current device)",
    "tl.ws_extra_stages": "an experiment: this many stages added to a warp-specialized loop's num_stages (0 to 8)",
    "tl.ws_gemm_in_flight": "a warp-specialized GEMM loop keeps a k-tile's wgmmas in flight while it issues the next (automatic, with one extra stage, for k-tiles of at most 512 tensor-core cycles where the stage fits: src/transform/cuda/warp_specialize_gemm_order.cc; True forces it without the extra stage, False turns it off)",
    "tl.ws_gemm_in_flight_depth": "an experiment, not yet run on a GPU: how many k-tiles' wgmmas a GEMM loop in flight keeps outstanding (1 to 4, default 1); the automatic order adds that many stages",
    "tl.ws_multicast": "a warp-specialized loop whose tile is the same for two neighbouring blocks along an even grid axis launches them as a cluster of 2, each block loading half the tile by TMA multicast for both (src/transform/cuda/warp_specialize_multicast.cc; off by default: measured 1-5% slower on the H100; True where it can)",
    "tl.ws_gemm_adaptive": "tl.ws_gemm_in_flight, but the previous stage is released before waiting for a late one",
    "tl.ws_consumer_registers": "registers per consumer thread after setmaxnreg (default 240; 24..256, a multiple of 8)",
    "tl.ws_single_thread_producer": "the warp-specialized producer's loop in one thread, not one warp with an elected lane",
    "tl.ws_consumer_prologue": "the consumers, not the producer, load the tiles copied before the pipelined loop",
    "tl.disable_tma_im2col": "T.im2col in warp-specialized loops as element loops, not TMA im2col loads",
    "tl.wgmma_f16_accumulators": "T.gemm of float16 tiles into a float16 accumulator on Hopper with wgmma .f16.f16.f16 (on by default; 0: mma.sync with tl.mma_f16_accumulators)",
    "tl.enable_wgmma_stages": "wgmma on a stage X[s, :, :] of a 3-D shared tile (src/transform/cuda/wgmma_select.cc)",
}


def key_name(key) -> str:
    """The string form of a pass-config key (a PassConfigKey member or a str)."""
    return getattr(key, "value", None) or str(key)


def config_remarks(pass_configs, target_kind=None) -> list:
    """One remark per pass-config key the compiler does not act on for this target kind
    ("cuda" or "cpu"; None: either)."""
    out = []
    known = {m.value for m in PassConfigKey}
    for k, v in (pass_configs or {}).items():
        name = key_name(k)
        if name in ACTED_ON or (name in ACTED_ON_CUDA and target_kind != "cpu"):
            continue
        name = _ALIASES.get(name, name)
        what = "an upstream TileLang key" if name in known else "not a key upstream TileLang defines"
        out.append(f"pass config {name}={v}: accepted, no effect in this compiler ({what})")
    return out


from .simplify import apply_simplify, simplify_prim_func  # noqa: E402,F401  (upstream's names)
