"""``mma_macro_generator``: names only; T.gemm emits mma instructions itself (see tilelang.cuda)."""
from .. import TensorCoreIntrinEmitter, TensorCoreIntrinEmitterWithLadderTransform  # noqa: F401
