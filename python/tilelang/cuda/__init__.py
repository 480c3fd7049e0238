"""``tilelang.cuda``: upstream's CUDA-specific helpers, as far as they map onto this compiler.

Provided: the MMA shared-memory swizzle (`intrinsics.get_swizzle_layout`,
`intrinsics.make_mma_swizzle_layout`), which are plain index arithmetic. Upstream's
warp-level MMA / wgmma / tcgen05 *emitters* and descriptor builders generate TIR
intrinsic calls that this compiler does not have (our T.gemm picks and emits the tensor-core
instructions itself); their names import, and raise NotImplementedError when used
(see docs/tvm-compat.md and COMPATIBILITY.md)."""
from . import intrinsics  # noqa: F401
