"""Device descriptions with upstream TileLang's names: ``get_arch("cuda")``, ``CUDA(target)``,
``CPU(target)``, ``auto_infer_current_arch()`` and the ``is_*_arch`` predicates.

A CUDA description reads the GPU when one is usable. Without one it still works when the
target names an arch (``CUDA("cuda -arch=sm_90a")``): the values are then the nominal ones of
that arch's flagship data-center part (``from_device`` is False), e.g. 132 SMs and 227 KB of
opt-in shared memory for sm_90 (H100 SXM)."""
from __future__ import annotations

import os
import re

from . import driver  # noqa: F401

__all__ = [
    "TileDevice", "CUDA", "CPU", "get_arch", "auto_infer_current_arch", "check_sm_version", "is_cpu_arch",
    "is_cuda_arch", "is_volta_arch", "is_ampere_arch", "is_ada_arch", "is_hopper_arch", "has_mma_support",
    "is_tensorcore_supported_precision", "driver",
]


class TileDevice:
    """What a schedule needs to know about a device."""

    def __init__(self) -> None:
        self.reg_cap = 0            # 32-bit registers per block
        self.smem_cap = 0           # shared memory per block, bytes
        self.compute_max_core = 0   # SMs (GPU) or cores (CPU)
        self.warp_size = 0
        self.sm_partition = 0
        self.transaction_size = [0, 0]  # bytes
        self.max_smem_usage = 0
        self.bandwidth = [0, 0]     # MB/s, only their ratio matters
        self.platform = "unknown"
        self.compute_capability = "unknown"
        self.l2_cache_size_bytes = 0

    def get_avaliable_tensorintrin_shapes(self):  # upstream's spelling
        raise NotImplementedError(f"{type(self).__name__} has no tensor instructions")


_SM = re.compile(r"^sm_(\d+)[a-z]?$")


def check_sm_version(arch: str) -> int:
    """90 for "sm_90" or "sm_90a"; -1 for anything that is not an SM arch."""
    m = _SM.match(str(arch))
    return int(m.group(1)) if m else -1


# Nominal values per compute capability, used when no GPU is present:
# (name, SMs, opt-in shared memory per block in bytes, L2 bytes).
_NOMINAL = {
    70: ("Tesla V100", 80, 96 * 1024, 6 << 20),
    75: ("Tesla T4", 40, 64 * 1024, 4 << 20),
    80: ("A100", 108, 163 * 1024, 40 << 20),
    86: ("A10", 72, 99 * 1024, 6 << 20),
    89: ("L40S", 142, 99 * 1024, 96 << 20),
    90: ("H100 SXM", 132, 227 * 1024, 50 << 20),
    100: ("B200", 148, 227 * 1024, 126 << 20),
}


def _nominal(sm: int):
    keys = [k for k in sorted(_NOMINAL) if k <= sm]
    return _NOMINAL[keys[-1] if keys else 70]


class CUDA(TileDevice):
    """A CUDA GPU: `target` is "cuda", "cuda -arch=sm_80", a dict or a tilelang Target."""

    def __init__(self, target="cuda"):
        super().__init__()
        from ...jit.target import parse

        t = parse(target if not isinstance(target, CUDA) else target.target)
        if t.kind not in ("cuda", "auto"):
            raise ValueError(f"CUDA(target): expected a CUDA target, got {target!r}")
        self.target = t
        props = driver.get_cuda_device_properties(0)
        arch = t.arch or (f"sm_{props.major}{props.minor}" if props is not None else None)
        if arch is None:
            raise RuntimeError("CUDA(target): no usable CUDA device and the target names no arch; "
                               "pass e.g. 'cuda -arch=sm_90a'")
        self.arch = arch
        self.sm_version = check_sm_version(arch)
        self.platform = "CUDA"
        self.warp_size = 32
        self.reg_cap = 65536
        self.sm_partition = 4
        self.transaction_size = [32, 128]
        self.bandwidth = [750, 12080]
        self.compute_capability = str(self.sm_version)
        same_arch = props is not None and props.major * 10 + props.minor == self.sm_version
        self.from_device = same_arch
        if same_arch:
            self.name = props.name
            self.compute_max_core = props.multi_processor_count
            self.smem_cap = props.shared_memory_per_block_optin
            self.l2_cache_size_bytes = props.L2_cache_size
            self.reg_cap = props.regs_per_block
        else:
            self.name, self.compute_max_core, self.smem_cap, self.l2_cache_size_bytes = _nominal(self.sm_version)
        self.max_smem_usage = 2 * self.smem_cap
        self.available_tensor_instructions = None

    @property
    def num_sms(self) -> int:
        return self.compute_max_core

    def get_avaliable_tensorintrin_shapes(self):
        self.available_tensor_instructions = (("mma", [16, 16]), ("wmma", [16, 16]))
        return [shape for _, shape in self.available_tensor_instructions]

    def __repr__(self):
        return f"CUDA({self.target})"


class CPU(TileDevice):
    """The host CPU (the "cpu" / "llvm" target)."""

    def __init__(self, target="cpu"):
        super().__init__()
        self.target = target
        self.platform = "CPU"
        self.compute_max_core = os.cpu_count() or 1
        self.name = "cpu"

    def __repr__(self):
        return f"CPU({self.target})"


class CDNA(TileDevice):
    """AMD CDNA GPUs (upstream's "hip" target): this compiler has no HIP backend, so the
    name imports and building one raises."""

    def __init__(self, target="hip"):
        raise NotImplementedError("carver.arch.CDNA: this compiler has no HIP / ROCm backend (CPU and CUDA only)")


def get_arch(target="cuda") -> TileDevice:
    """The description of `target` ("cuda...", "cpu", "llvm", "c", or "auto")."""
    from ...jit.target import resolve

    t = resolve(target)
    if t.kind == "cpu":
        return CPU(t)
    return CUDA(t)


def auto_infer_current_arch() -> TileDevice:
    """The GPU when one is usable, else the CPU."""
    from ...jit.target import cuda_usable

    return get_arch("cuda") if cuda_usable() else get_arch("cpu")


def is_cpu_arch(arch) -> bool:
    return isinstance(arch, CPU)


def is_cuda_arch(arch) -> bool:
    return isinstance(arch, CUDA)


def is_volta_arch(arch) -> bool:
    return is_cuda_arch(arch) and 70 <= arch.sm_version < 80


def is_ampere_arch(arch) -> bool:
    return is_cuda_arch(arch) and 80 <= arch.sm_version < 89


def is_ada_arch(arch) -> bool:
    return is_cuda_arch(arch) and arch.sm_version == 89


def is_hopper_arch(arch) -> bool:
    return is_cuda_arch(arch) and arch.sm_version == 90


def has_mma_support(arch) -> bool:
    return is_cuda_arch(arch) and arch.sm_version >= 80


_VOLTA_TC = {("float16", "float32"), ("float16", "float16")}
_AMPERE_TC = _VOLTA_TC | {("bfloat16", "float32"), ("int8", "int32"), ("int4", "int32"), ("int2", "int32"),
                          ("int1", "int32")}
_ADA_TC = _VOLTA_TC | {("bfloat16", "float32"), ("int8", "int32"), ("float8_e5m2", "float32"),
                       ("float8_e4m3", "float32"), ("float8_e4m3fn", "float32")}


def is_tensorcore_supported_precision(in_dtype, accum_dtype, arch) -> bool:
    """Whether the tensor cores of `arch` multiply `in_dtype` accumulating in `accum_dtype`."""
    pair = (str(in_dtype), str(accum_dtype))
    if is_volta_arch(arch):
        return pair in _VOLTA_TC
    if is_ampere_arch(arch):
        return pair in _AMPERE_TC
    if is_ada_arch(arch) or is_hopper_arch(arch):
        return pair in _ADA_TC
    raise ValueError(f"is_tensorcore_supported_precision: unsupported architecture {arch!r}")
