"""``tilelang.cuda.intrinsics.sparse_layout``: the 2:4 structured-sparse format T.gemm_sp reads
(upstream's names): which values of a group are kept, and how many dense elements one metadata
element describes. The format itself is described in ``tilelang.language.sparse_gemm``."""
from __future__ import annotations

from ...language import sparse_gemm as _sp
from ...language.dtypes import canonical as _canonical
from ...language.dtypes import dtype

# a value dtype -> (values kept, group size)
GROUP_CONFIG: dict = {dtype(name): pair for name, pair in _sp.GROUP.items()}
GROUP_CONFIG[dtype("float8_e4m3")] = _sp.GROUP["float8_e4m3fn"]


def _name(d, what):
    name = _canonical(str(d))
    if what == "a_dtype" and name not in _sp.GROUP:
        raise ValueError(f"{what} must be one of {', '.join(_sp.GROUP)}, got {d}")
    if what == "meta_dtype" and name not in _sp.META_BITS:
        raise ValueError(f"{what} must be an 8, 16 or 32-bit integer dtype, got {d}")
    return name


def get_e_factor(a_dtype, meta_dtype) -> int:
    """How many a_dtype elements of a dense row one meta_dtype element describes."""
    return _sp.e_factor(_name(a_dtype, "a_dtype"), _name(meta_dtype, "meta_dtype"))


def get_e_replicate_factor(a_dtype) -> int:
    """How many consecutive threads share one metadata value in the sparse MMA's operand layout
    (upstream's figure: 1 for 8-bit values, 2 for wider ones)."""
    return 1 if dtype(_name(a_dtype, "a_dtype")).bits <= 8 else 2


__all__ = ["GROUP_CONFIG", "get_e_factor", "get_e_replicate_factor"]
