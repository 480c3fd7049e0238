"""The XOR swizzle of MMA operand tiles in shared memory.

A row of the tile is cut into 16-byte vectors; within each group of `swizzle_bytes`, vector
c of row r moves to c ^ f(r), so that the 8 rows an ldmatrix reads hit 8 different banks.
This is the same pattern this compiler applies to GEMM operands by itself; the function is
given for programs that build layouts from it."""
from __future__ import annotations

from ....language.dtypes import dtype as _dtype


def get_swizzle_layout(row_idx, col_idx, row_size, dtype, swizzle_bytes=None):
    """(tile of the column, row, swizzled column) of element (row_idx, col_idx) in rows of
    `row_size` elements of `dtype`; works on ints and on kernel expressions."""
    bits = _dtype(dtype).bits
    row_bytes = bits * int(row_size) // 8
    if row_bytes % 32 != 0:
        raise ValueError(f"get_swizzle_layout: a row of {row_bytes} bytes is not a multiple of 32 bytes")
    if swizzle_bytes is None:
        swizzle_bytes = min(128, row_bytes)
    per_vec = 128 // bits                   # elements in one 16-byte vector
    vecs = int(swizzle_bytes) // 16         # vectors in one swizzle pattern (2, 4 or 8)
    col_vec, in_vec = col_idx // per_vec, col_idx % per_vec
    tile, c = col_vec // vecs, col_vec % vecs
    src = (row_idx % 8) // (8 // vecs)      # rows sharing an XOR mask
    return tile, row_idx, (c ^ src) * per_vec + in_vec


def make_mma_swizzle_layout(shared_buf, is_smooth: bool = False):
    """A T.Layout for a shared tile: the swizzle above on its last two dimensions, or the
    identity when the rows are not a multiple of 64 bytes (or is_smooth). Like every layout
    given to T.annotate_layout here, it is a hint (see tilelang.layout)."""
    from ....language import Layout

    shape = [int(d) for d in shared_buf.shape]
    bits = _dtype(shared_buf.dtype).bits
    if is_smooth or shape[-1] * bits % 512 != 0:
        return Layout(shape, lambda *idx: list(idx))

    def forward(*idx):
        i, j = idx[-2:]
        return [*idx[:-2], *get_swizzle_layout(i, j, shape[-1], shared_buf.dtype)]

    return Layout(shape, forward)
