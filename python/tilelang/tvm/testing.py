"""``tvm.testing``: the requirement decorators of tilelang.testing."""
from ..testing import (  # noqa: F401
    requires_cuda, requires_cuda_compute_version, requires_gpu, requires_llvm, requires_metal, requires_package,
    requires_rocm,
)
