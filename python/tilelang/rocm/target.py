"""``tilelang.rocm.target``: HIP availability, which is always False here: this compiler
generates code for the CPU and for CUDA only, whatever is installed on the machine."""
from __future__ import annotations


def check_hip_availability() -> bool:
    """Whether kernels can be compiled for HIP by this compiler: never."""
    return False


def determine_target(*args, **kwargs):
    """No HIP target can be determined: there is no HIP backend."""
    return None
