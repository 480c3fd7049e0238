"""Upstream's MMA emitter classes: they import, and raise NotImplementedError when built."""
from .._unsupported import EMITTER_WHY, unsupported_class
from ..intrinsics import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterSM120  # noqa: F401
from ..intrinsics.layout.mma_layout import get_swizzle_layout  # noqa: F401
from ..intrinsics.macro.wgmma_macro_generator import WGMMATensorCoreIntrinEmitter  # noqa: F401

from ...language import wait_wgmma, wgmma_gemm  # noqa: F401,E402  (T.wgmma_gemm, T.wait_wgmma)

TCGEN05TensorCoreIntrinEmitter = unsupported_class("TCGEN05TensorCoreIntrinEmitter", EMITTER_WHY)
wgmma_mma = wgmma_gemm  # upstream's other name
