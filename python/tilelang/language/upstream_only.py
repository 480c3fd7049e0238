"""Names upstream TileLang 0.1.15 exports from ``tilelang.language`` that this compiler does
not build, each refused with its reason when called (at the user's line inside a kernel).

A program that only mentions them (``if arch >= 100: T.tcgen05_gemm(...)``, an import list)
runs; one that calls them learns why and what to write instead, never an AttributeError.
Grouped by why:
  - Blackwell (sm_100 / sm_120) instructions: tensor memory, tcgen05, cluster launch control,
    2-SM TMA, block-scaled GEMMs; this compiler generates code for sm_80 / sm_90 and the CPU;
  - copies between the shared memories of a cluster's blocks (T.copy_cluster);
  - upstream's instruction-level API (emitter classes and one-PTX-instruction calls on TVM
    buffers), whose work the tile operations do here;
  - 2:4 sparse tensor-core GEMMs;
  - grid-wide barriers (a cooperative launch).
"""
from __future__ import annotations

from . import builder as _b

_BLACKWELL = (
    "is a Blackwell (sm_100 / sm_120) feature; this compiler generates code for sm_80 and sm_90 GPUs "
    "and the CPU")
_CLUSTERS = ("is part of upstream's cluster API this compiler does not build (it launches clusters with "
             "T.ClusterKernel, syncs them with T.cluster_sync and arrives on other blocks' mbarriers, but does "
             "not copy between the blocks' shared memories)")
_INSTRUCTION_LEVEL = (
    "is upstream's instruction-level API (one PTX instruction per call, on TVM buffers), which this "
    "compiler does not have; write the tile operation (T.gemm, T.copy, T.wgmma_gemm, T.tma_copy), which it "
    "lowers to the same instructions")
_SPARSE = ("is an instruction-level 2:4 sparse tensor-core GEMM, which this compiler does not support (the tile "
           "operator T.gemm_sp is supported)")
_GRID = ("is a barrier across the whole grid, which needs a cooperative launch (every block resident at "
         "once) that this compiler does not make; end the kernel there and launch a second one for the rest")

_TVM_INTERNAL = ("is a TVM-internal construct (TVM's IR nodes, packed-function calls, runtime stacks and "
                 "legacy fragment intrinsics) that this compiler's own IR does not have; write the kernel with "
                 "T.* tile operations, T.call_extern or T.import_source")
_WS_SCHEDULE = ("is upstream's explicit warp-specialization schedule API, which this compiler does not have: it "
                "warp-specializes T.Pipelined loops itself on sm_90a (tl.disable_warp_specialized turns that off), "
                "and a program can give warpgroups their own code with T.ws")
_BARRIER_IDS = ("is the older mbarrier API by barrier id, which this compiler does not have; use "
                "T.alloc_barrier, T.mbarrier_arrive, T.mbarrier_arrive_expect_tx and T.mbarrier_wait_parity")
_FRAMES = ("exposes upstream's front-end frames and let stack, which this compiler's front end does not have "
           "(T.get_thread_binding and T.get_block_binding give the launch's indices)")

_REFUSED = {
    _TVM_INTERNAL: (
        "Any", "IntImm", "StringImm", "Shuffle", "TVMBackendAllocWorkspace", "TVMBackendFreeWorkspace",
        "anylist_getitem", "anylist_resetitem", "anylist_setitem_call_cpacked", "anylist_setitem_call_packed",
        "call_cpacked", "call_cpacked_lowered", "call_intrin", "call_llvm_intrin", "call_llvm_pure_intrin",
        "call_packed", "call_packed_lowered", "call_pure_extern", "end_profile_intrinsic", "start_profile_intrinsic",
        "lookup_param", "q_multiply_shift", "q_multiply_shift_per_axis", "ret", "tvm_access_ptr", "tvm_bmma_sync",
        "tvm_fill_fragment", "tvm_load_matrix_sync", "tvm_mma_sync", "tvm_stack_alloca", "tvm_stack_make_array",
        "tvm_stack_make_shape", "tvm_storage_sync", "tvm_store_matrix_sync", "tvm_struct_get", "tvm_struct_set",
        "tvm_thread_invariant", "tvm_throw_last_error", "tvm_tuple", "tvm_warp_activemask", "tvm_warp_shuffle",
        "tvm_warp_shuffle_down", "tvm_warp_shuffle_up", "undef", "vectorcombine", "vectorhigh", "vectorlow",
        "vscale", "allocate", "PartialFragment", "BaseTileScheduler"),
    _WS_SCHEDULE: (
        "WSID", "WSInstr", "WSOpRef", "WSPipeline", "WSRole", "WSSchedule", "WSScope", "WSSync", "WSSyncKind",
        "annotate_ws_pipeline_depth", "annotate_ws_schedule", "ws_op"),
    _BARRIER_IDS: (
        "create_barriers", "ptx_arrive_barrier", "ptx_arrive_barrier_expect_tx", "ptx_init_barrier_thread_count",
        "ptx_fence_barrier_init", "ptx_wait_barrier"),
    _FRAMES: ("KernelLaunchFrame", "get_let_value", "has_let_value"),
    _BLACKWELL: (
        "TCGEN05DescriptorParams", "TCGEN05TensorCoreIntrinEmitter", "TensorCoreIntrinEmitterSM120",
        "alloc_tcgen05_instr_desc", "alloc_tcgen05_instruction_desc", "alloc_tcgen05_smem_desc", "alloc_tmem",
        "deallocate_tmem", "clc_get_first_ctaid_x", "clc_get_first_ctaid_y", "clc_get_first_ctaid_z",
        "clc_is_canceled", "clc_try_cancel", "clc_try_cancel_multicast", "compute_umma_descriptor",
        "initialize_tcgen05_descriptor", "ptx_tcgen05_mma_blockscaled_ss", "ptx_tcgen05_mma_ss",
        "ptx_tcgen05_mma_ts", "tcgen05_after_thread_sync", "tcgen05_before_thread_sync", "tcgen05_cp_warpx4",
        "tcgen05_gemm", "tcgen05_gemm_blockscaled", "tcgen05_gemm_sp", "tcgen05_mma", "tcgen05_mma_arrive",
        "tcgen05_mma_blockscaled", "tcgen05_sf_warp_transpose", "tma_load_2sm", "tma_gather4",
        "tma_gather4_bytes", "tma_scatter4", "gemm_blockscaled", "mma_gemm_blockscaled",
        "make_blockscaled_gemm_layout", "ptx_mma_block_scale"),
    _CLUSTERS: (
        "copy_cluster",),
    _INSTRUCTION_LEVEL: (
        "TensorCoreIntrinEmitterWithLadderTransform", "WGMMATensorCoreIntrinEmitter",
        "WGMMADescriptorParams", "ptx_mma", "ptx_mma_sm70", "ptx_ldmatrix", "ptx_wgmma_ss", "ptx_wgmma_rs",
        "wgmma_mma", "warpgroup_arrive", "warpgroup_commit_batch", "warpgroup_wait", "warpgroup_fence_operand",
        "alloc_descriptor", "alloc_wgmma_desc", "initialize_wgmma_descriptor", "increase_descriptor_offset",
        "compute_gmma_descriptor", "get_ldmatrix_offset", "mma_store_index_map", "make_mma_swizzle_layout",
        "get_swizzle_layout", "create_tma_descriptor", "tma_load", "ptx_cp_async_bulk", "ptx_cp_async_barrier",
        "mma_fill", "mma_store"),
    _SPARSE: (
        "SparseTensorCoreIntrinEmitter", "WGSparseTensorCoreIntrinEmitter", "wgmma_gemm_sp",
        "ptx_mma_sp", "ptx_wgmma_sp_ss", "ptx_wgmma_sp_rs"),
    _GRID: ("sync_grid",),
}


def _refused(name: str, reason: str):
    def refuse(*args, **kwargs):
        raise _b._UserError(f"T.{name} {reason}")

    refuse.__name__ = refuse.__qualname__ = name
    refuse.__doc__ = f"Not built by this compiler: T.{name} {reason}."
    return refuse


__all__ = []
for _reason, _names in _REFUSED.items():
    for _name in _names:
        globals()[_name] = _refused(_name, _reason)
        __all__.append(_name)
del _reason, _names, _name


class KernelLaunchFrame:
    """Not built here: upstream's launch frame (``T.KernelLaunchFrame.Current()``)."""

    def __init__(self, *args, **kwargs):
        raise _b._UserError(f"T.KernelLaunchFrame {_FRAMES}")

    @classmethod
    def Current(cls):  # noqa: N802 - upstream's name
        raise _b._UserError(f"T.KernelLaunchFrame.Current {_FRAMES}")
