"""``tilelang.rocm``: this compiler has no ROCm/HIP backend (CPU and CUDA only)."""
from . import target  # noqa: F401
