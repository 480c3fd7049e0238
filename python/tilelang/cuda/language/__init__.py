"""``tilelang.cuda.language``: only the emitter names of ``intrinsics`` (see tilelang.cuda)."""
from . import intrinsics  # noqa: F401
