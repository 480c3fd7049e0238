"""Names of upstream's CUDA internals that import here but cannot be used (see tilelang.cuda)."""
from __future__ import annotations


def unsupported_class(name: str, why: str):
    """A class that raises NotImplementedError, naming itself and why, when constructed."""

    def __init__(self, *args, **kwargs):
        raise NotImplementedError(f"{name} is not provided by this compiler: {why}")

    return type(name, (), {"__init__": __init__, "__doc__": f"Not provided here: {why}"})


def unsupported_function(name: str, why: str):
    def f(*args, **kwargs):
        raise NotImplementedError(f"{name} is not provided by this compiler: {why}")

    f.__name__ = name
    f.__doc__ = f"Not provided here: {why}"
    return f


EMITTER_WHY = ("upstream's warp-level MMA emitters build TIR intrinsic calls; here T.gemm chooses and emits "
               "the tensor-core instructions (mma, wgmma) itself")
