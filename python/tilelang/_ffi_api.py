"""``tilelang._ffi_api``: upstream's table of C++ functions reached through TVM's FFI.

This compiler's C++ core is reached through ``tilelang._tl`` instead, with its own
functions. The names below are those upstream's tests call; they import, and raise
NotImplementedError (naming the function and why) when called."""
from __future__ import annotations


def _not_here(name, why):
    def f(*args, **kwargs):
        raise NotImplementedError(f"tilelang._ffi_api.{name} is not provided by this compiler: {why}")

    f.__name__ = name
    return f


_TCGEN05 = "there is no tcgen05 (Blackwell) GEMM lowering here, so no tcgen05 instruction descriptors"
get_tcgen5_instr_desc = _not_here("get_tcgen5_instr_desc", _TCGEN05)
get_tcgen5_blockscaled_instr_desc = _not_here("get_tcgen5_blockscaled_instr_desc", _TCGEN05)
