"""``wgmma_macro_generator``: names only; this compiler builds wgmma descriptors itself."""
from ..._unsupported import EMITTER_WHY, unsupported_class, unsupported_function

WGMMATensorCoreIntrinEmitter = unsupported_class("WGMMATensorCoreIntrinEmitter", EMITTER_WHY)
compute_gmma_descriptor = unsupported_function(
    "compute_gmma_descriptor", "wgmma shared-memory descriptors are built by the compiler's own GEMM lowering "
    "from the layout it chose, and are not exposed to Python")
