"""``tilelang.cuda.intrinsics``: the MMA shared-memory swizzle; emitters import but raise."""
from .._unsupported import EMITTER_WHY, unsupported_class
from .layout.mma_layout import get_swizzle_layout, make_mma_swizzle_layout  # noqa: F401

TensorCoreIntrinEmitter = unsupported_class("TensorCoreIntrinEmitter", EMITTER_WHY)
TensorCoreIntrinEmitterWithLadderTransform = unsupported_class("TensorCoreIntrinEmitterWithLadderTransform", EMITTER_WHY)
TensorCoreIntrinEmitterSM120 = unsupported_class("TensorCoreIntrinEmitterSM120", EMITTER_WHY)
