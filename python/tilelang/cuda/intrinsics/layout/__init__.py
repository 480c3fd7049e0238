from .mma_layout import get_swizzle_layout, make_mma_swizzle_layout  # noqa: F401
