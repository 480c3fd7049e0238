"""``tilelang.cuda.intrinsics``: the MMA shared-memory swizzle and the warp-level mma.sync emitter
(TensorCoreIntrinEmitter); the other emitters import but raise."""
from .._unsupported import EMITTER_WHY, unsupported_class
from .layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout  # noqa: F401

from .macro.mma_macro_generator import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform  # noqa: F401
TensorCoreIntrinEmitterSM120 = unsupported_class("TensorCoreIntrinEmitterSM120", EMITTER_WHY)
