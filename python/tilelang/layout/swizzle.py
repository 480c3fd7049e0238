"""The shared-memory layouts upstream's programs name (``tilelang.layout.swizzle``), as index
functions: each maps a tile's (..., row, column) to the (..., row, column) where the element
is stored. The leading dimensions of a stacked tile are kept (the 2-D layout, expanded).

The bank swizzles permute 16-byte chunks inside each run of W bytes (W = 128, 64 or 32: full,
half and quarter bank), XOR-ing the chunk number with the number of the 128-byte line it is
in, as the wgmma / TMA swizzle modes do. On a tile these are hints (the compiler chooses
its own layouts: see tilelang.layout); the functions serve layout algebra, tools and tests."""
from __future__ import annotations

from .layout import Layout
from .fragment import Fragment


def _tile_info(buffer, what):
    """(leading dims, rows, cols, element bytes) of a buffer-like object with a static shape."""
    from ..language.dtypes import dtype as _dtype

    buf = getattr(buffer, "buffer", buffer)  # a region / load of a tile: its buffer
    shape = getattr(buf, "shape", None)
    if shape is None:
        raise TypeError(f"{what}: expected a tile (T.alloc_shared, tvm.tirx.decl_buffer), got {type(buffer).__name__}")
    try:
        dims = [int(d) for d in shape]
    except (TypeError, ValueError):
        raise ValueError(f"{what}: the tile needs a static shape, got {list(shape)}") from None
    if not dims:
        raise ValueError(f"{what}: the tile has no dimensions")
    bits = _dtype(str(buf.dtype)).bits
    if len(dims) == 1:
        return None, 1, dims[0], bits / 8
    return dims[:-2], dims[-2], dims[-1], bits / 8


def _bank_swizzle(rows, cols, elem_bytes, width, what):
    """The W-byte bank swizzle of a rows x cols tile, as a function of (row, column)."""
    vec = int(16 // elem_bytes)           # elements per 16-byte chunk
    chunks = width // 16                  # chunks per W-byte run
    line = int(128 // elem_bytes)         # elements per 128-byte line
    group = vec * chunks
    if (rows * cols) % group:
        raise ValueError(f"{what}: a {rows} x {cols} tile of {elem_bytes:g}-byte elements is not a whole number of "
                         f"{width}-byte swizzle runs")

    def forward(i, j):
        e = i * cols + j
        chunk = (e // vec) % chunks
        moved = (e // group) * group + (chunk ^ ((e // line) % chunks)) * vec + e % vec
        return [moved // cols, moved % cols]

    return forward


def _layout(buffer, kind, make_2d):
    try:
        leading, rows, cols, elem_bytes = _tile_info(buffer, f"make_{kind}_layout")
    except ValueError:
        # A tile of symbolic shape: the layout is a hint by name only (no index function),
        # as every tile layout is to this compiler (see tilelang.layout).
        shape = getattr(getattr(buffer, "buffer", buffer), "shape", None)
        return Layout(shape, None, kind=kind)
    forward = make_2d(rows, cols, elem_bytes)
    if leading is None:  # a 1-D tile: one row
        lay = Layout((cols,), lambda j: [forward(0, j)[1]], kind=kind)
        lay._trusted = True
        return lay
    lay = Layout((rows, cols), forward, kind=kind)
    lay._trusted = True
    if leading:
        lay = lay.expand(leading)
        lay.kind = kind
    return lay


def _bank(kind, width):
    def make(rows, cols, elem_bytes):
        return _bank_swizzle(rows, cols, elem_bytes, width, f"make_{kind}_layout")

    return make


def _identity(rows, cols, elem_bytes):
    return lambda i, j: [i, j]


def _widest(rows, cols, elem_bytes):
    """The widest bank swizzle whose runs fit the tile's rows; none (row-major) otherwise."""
    for width in (128, 64, 32):
        if (cols * elem_bytes) % width == 0:
            return _bank_swizzle(rows, cols, elem_bytes, width, "make_swizzled_layout")
    return _identity(rows, cols, elem_bytes)


def make_full_bank_swizzled_layout(buffer) -> Layout:
    """The 128-byte swizzle (wgmma / TMA SWIZZLE_128B)."""
    return _layout(buffer, "full_bank_swizzled", _bank("full_bank_swizzled", 128))


def make_half_bank_swizzled_layout(buffer) -> Layout:
    """The 64-byte swizzle (SWIZZLE_64B)."""
    return _layout(buffer, "half_bank_swizzled", _bank("half_bank_swizzled", 64))


def make_quarter_bank_swizzled_layout(buffer) -> Layout:
    """The 32-byte swizzle (SWIZZLE_32B)."""
    return _layout(buffer, "quarter_bank_swizzled", _bank("quarter_bank_swizzled", 32))


def make_swizzled_layout(buffer, k_major: bool = True, allow_pad: bool = True) -> Layout:
    """The widest bank swizzle the tile's rows allow (row-major when none does)."""
    return _layout(buffer, "swizzled", _widest)


def make_wgmma_swizzled_layout(buffer, continuity: int = None, k_major: bool = True) -> Layout:
    """The swizzle wgmma reads a K-major operand tile in: the widest bank swizzle that fits."""
    return _layout(buffer, "wgmma_swizzled", _widest)


def make_tcgen05mma_swizzled_layout(buffer, continuity: int = None, k_major: bool = True) -> Layout:
    raise NotImplementedError("make_tcgen05mma_swizzled_layout: there is no tcgen05 (Blackwell) GEMM lowering here")


def make_volta_swizzled_layout(buffer, is_a: bool = True, k_inner: bool = True) -> Layout:
    """Volta's (sm_70) operand layout: named only (no sm_70 lowering here); row-major."""
    return _layout(buffer, "volta_swizzled", _identity)


def make_linear_layout(buffer) -> Layout:
    """Row-major: each element where it is."""
    return _layout(buffer, "linear", _identity)


def make_gemm_fragment_8x8() -> Fragment:
    """The 8x8 register tile of an MMA / ldmatrix: thread 4*i + j//2 holds element (i, j) in
    register j % 2."""
    return Fragment((8, 8), forward_thread_fn=lambda i, j: j // 2 + 4 * i, forward_index_fn=lambda i, j: [j % 2])


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transposed 8x8 MMA register tile: thread 4*j + i//2 holds (i, j) in register i % 2."""
    return Fragment((8, 8), forward_thread_fn=lambda i, j: i // 2 + 4 * j, forward_index_fn=lambda i, j: [i % 2])


def make_fully_replicated_layout_fragment(buffer, threads: int) -> Fragment:
    """Every thread holds the whole tile, in row-major registers."""
    buf = getattr(buffer, "buffer", buffer)
    shape = [int(d) for d in buf.shape]
    strides = [1] * len(shape)
    for d in range(len(shape) - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    threads = int(threads)
    return Fragment(shape, forward_thread_fn=lambda *a: a[-1] if threads > 1 else 0, replicate=threads,
                    forward_index_fn=lambda *idx: [sum(i * s for i, s in zip(idx, strides))])
