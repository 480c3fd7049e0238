"""CUDA device attributes by number (the values of cudaDeviceAttr / CUdevice_attribute)."""
from __future__ import annotations

from dataclasses import dataclass


class cudaDeviceAttrNames:  # noqa: N801 - upstream's name
    cudaDevAttrMaxThreadsPerBlock = 1
    cudaDevAttrMaxSharedMemoryPerBlock = 8
    cudaDevAttrWarpSize = 10
    cudaDevAttrMaxRegistersPerBlock = 12
    cudaDevAttrClockRate = 13
    cudaDevAttrMultiProcessorCount = 16
    cudaDevAttrL2CacheSize = 38
    cudaDevAttrMaxThreadsPerMultiProcessor = 39
    cudaDevAttrComputeCapabilityMajor = 75
    cudaDevAttrComputeCapabilityMinor = 76
    cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81
    cudaDevAttrMaxRegistersPerMultiprocessor = 82
    cudaDevAttrMaxSharedMemoryPerBlockOptin = 97
    cudaDevAttrMaxPersistingL2CacheSize = 108


def _require_device(device_id: int, what: str):
    from tilelang import _tl

    ok, why = _tl.cuda_available()
    if not ok:
        raise RuntimeError(f"{what}: no usable CUDA device ({why})")
    if not 0 <= int(device_id) < _tl.device_count():
        raise RuntimeError(f"{what}: device_id must be in [0, {_tl.device_count()}), got {device_id}")
    return _tl


def get_device_attribute(attr: int, device_id: int = 0) -> int:
    """The value of CUDA device attribute number `attr` (see cudaDeviceAttrNames)."""
    tl = _require_device(device_id, f"get_device_attribute({attr})")
    return int(tl.device_attribute(int(device_id), int(attr)))


@dataclass
class CudaDeviceProperties:
    name: str
    major: int
    minor: int
    multi_processor_count: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    regs_per_block: int
    warp_size: int
    L2_cache_size: int  # noqa: N815 - the field name torch and upstream use
    persisting_l2_cache_max_size: int


def get_cuda_device_properties(device_id: int = 0) -> CudaDeviceProperties | None:
    """The main properties of a GPU, or None without one."""
    try:
        a = lambda k: get_device_attribute(k, device_id)  # noqa: E731
        names = cudaDeviceAttrNames
        return CudaDeviceProperties(
            get_device_name(device_id), a(names.cudaDevAttrComputeCapabilityMajor),
            a(names.cudaDevAttrComputeCapabilityMinor), a(names.cudaDevAttrMultiProcessorCount),
            a(names.cudaDevAttrMaxSharedMemoryPerBlock), a(names.cudaDevAttrMaxSharedMemoryPerBlockOptin),
            a(names.cudaDevAttrMaxRegistersPerBlock), a(names.cudaDevAttrWarpSize), a(names.cudaDevAttrL2CacheSize),
            a(names.cudaDevAttrMaxPersistingL2CacheSize))
    except RuntimeError:
        return None


def get_device_name(device_id: int = 0) -> str | None:
    """The GPU's name (through torch when installed, else its arch, e.g. 'NVIDIA sm_90')."""
    tl = _require_device(device_id, "get_device_name")
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_name(device_id)
    except ImportError:
        pass
    return f"NVIDIA {tl.device_arch(int(device_id))}"


def _scaled(value: int, format: str, what: str) -> int:  # noqa: A002 - upstream's parameter name
    if format == "bytes":
        return value
    if format == "kb":
        return value // 1024
    if format == "mb":
        return value // (1024 * 1024)
    raise ValueError(f"{what}: format must be 'bytes', 'kb' or 'mb', got {format!r}")


def get_shared_memory_per_block(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    """Static shared memory per block (48 KB on current GPUs)."""
    return _scaled(get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxSharedMemoryPerBlock, device_id),
                   format, "get_shared_memory_per_block")


def get_max_dynamic_shared_size_bytes(device_id: int = 0, format: str = "bytes") -> int:  # noqa: A002
    """The most (dynamic) shared memory one block may opt in to."""
    return _scaled(get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id),
                   format, "get_max_dynamic_shared_size_bytes")


def get_persisting_l2_cache_max_size(device_id: int = 0) -> int:
    return get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxPersistingL2CacheSize, device_id)


def get_num_sms(device_id: int = 0) -> int:
    """The number of streaming multiprocessors of the GPU."""
    return get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMultiProcessorCount, device_id)


def get_registers_per_block(device_id: int = 0) -> int:
    return get_device_attribute(cudaDeviceAttrNames.cudaDevAttrMaxRegistersPerBlock, device_id)
