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

_REFUSED = {
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
        "make_blockscaled_gemm_layout"),
    _CLUSTERS: (
        "copy_cluster",),
    _INSTRUCTION_LEVEL: (
        "TensorCoreIntrinEmitterWithLadderTransform", "WGMMATensorCoreIntrinEmitter",
        "WGMMADescriptorParams", "ptx_mma", "ptx_mma_sm70", "ptx_ldmatrix", "ptx_wgmma_ss", "ptx_wgmma_rs",
        "wgmma_mma", "warpgroup_arrive", "warpgroup_commit_batch", "warpgroup_wait", "warpgroup_fence_operand",
        "alloc_descriptor", "alloc_wgmma_desc", "initialize_wgmma_descriptor", "increase_descriptor_offset",
        "compute_gmma_descriptor", "get_ldmatrix_offset", "mma_store_index_map", "make_mma_swizzle_layout",
        "get_swizzle_layout", "create_tma_descriptor", "tma_load", "ptx_cp_async_bulk", "ptx_cp_async_barrier"),
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
