"""``tilelang.layout.swizzle``: the swizzled shared layouts, under upstream's module name."""
from . import (  # noqa: F401
    make_full_bank_swizzled_layout, make_half_bank_swizzled_layout, make_linear_layout,
    make_quarter_bank_swizzled_layout, make_swizzled_layout, make_volta_swizzled_layout, make_wgmma_swizzled_layout,
    make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed,
)
