"""Layouts, as TileLang programs name them (`tilelang.layout`, `T.Layout`, `T.Fragment`).

This compiler chooses tile layouts itself: shared GEMM operands are XOR-swizzled for
conflict-free copies and tensor-core loads (or laid out for wgmma), fragments get the
layout of the GEMM or register strip that uses them. Layout objects given to
`T.annotate_layout` for a tile are accepted so that programs written for TileLang run
unchanged; the compiler's remarks (`kernel.get_remarks()`) say that the annotation was not
applied, and every access goes through the compiler's own layout, so results do not depend
on it. On a global tensor a `T.Layout` is the tensor's storage order.

The objects themselves are upstream's: index functions with an algebra (output shape,
linearized index, repeat, expand, equality) answered by the C++ core (layout/index_map.h).
"""
from __future__ import annotations

from .layout import Layout  # noqa: F401
from .fragment import Fragment  # noqa: F401
from .swizzle import (  # noqa: F401
    make_full_bank_swizzled_layout, make_fully_replicated_layout_fragment, make_gemm_fragment_8x8,
    make_gemm_fragment_8x8_transposed, make_half_bank_swizzled_layout, make_linear_layout,
    make_quarter_bank_swizzled_layout, make_swizzled_layout, make_tcgen05mma_swizzled_layout,
    make_volta_swizzled_layout, make_wgmma_swizzled_layout,
)
from .swizzle_mode import SwizzleMode  # noqa: E402,F401
from . import swizzle  # noqa: E402,F401

__all__ = ["Layout", "Fragment", "make_swizzled_layout", "make_wgmma_swizzled_layout", "make_volta_swizzled_layout",
           "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout", "make_quarter_bank_swizzled_layout",
           "make_linear_layout", "make_gemm_fragment_8x8", "make_gemm_fragment_8x8_transposed",
           "make_fully_replicated_layout_fragment", "make_tcgen05mma_swizzled_layout", "SwizzleMode"]
