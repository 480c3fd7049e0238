"""``wgmma_macro_generator``: the wgmma shared-memory descriptor fields of a swizzled tile
(``compute_gmma_descriptor``). The emitter class is a name only: this compiler issues its
wgmma instructions from its own GEMM lowering (templates/tl/cuda/wgmma.h)."""
from __future__ import annotations

from dataclasses import dataclass

from ....layout.swizzle_mode import SwizzleMode
from ..._unsupported import EMITTER_WHY, unsupported_class

WGMMATensorCoreIntrinEmitter = unsupported_class("WGMMATensorCoreIntrinEmitter", EMITTER_WHY)

# The swizzle width each named layout maker stands for.
_KIND_MODES = {
    "full_bank_swizzled": SwizzleMode.SWIZZLE_128B,
    "half_bank_swizzled": SwizzleMode.SWIZZLE_64B,
    "quarter_bank_swizzled": SwizzleMode.SWIZZLE_32B,
}


@dataclass(frozen=True)
class GmmaDescriptorParams:
    """The layout-dependent fields of a wgmma matrix descriptor. The byte offsets are in the
    descriptor's own unit, 16 bytes (the fields hold address bits 4 and up)."""

    swizzle_mode: SwizzleMode
    leading_byte_offset: int
    stride_byte_offset: int


def _elem_bytes(buffer) -> int:
    from ....language.dtypes import canonical, dtype

    bits = dtype(canonical(buffer.dtype)).bits
    if bits % 8:
        raise ValueError(f"compute_gmma_descriptor: {buffer.dtype} elements are not whole bytes")
    return bits // 8


def _mode_of(layout, row_bytes: int) -> SwizzleMode:
    kind = getattr(layout, "kind", None)
    if kind in _KIND_MODES:
        return _KIND_MODES[kind]
    if kind in ("swizzled", "wgmma_swizzled"):
        # The widest swizzle whose pattern fits the tile's rows.
        for mode in (SwizzleMode.SWIZZLE_128B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_32B):
            if row_bytes % mode.swizzle_byte_size() == 0:
                return mode
    raise ValueError(f"compute_gmma_descriptor: {layout!r} is not a 32-, 64- or 128-byte swizzled layout "
                     f"(make_full_bank_swizzled_layout and its half and quarter variants)")


def compute_gmma_descriptor(layout, buffer, transposed=False) -> GmmaDescriptorParams:
    """The swizzle mode, leading and stride byte offsets of the wgmma descriptor that reads
    `buffer` (2-D, or stacked 2-D tiles: the last two dimensions count) in `layout`.

    `transposed` False: the operand is K-major, its contiguous (last) dimension is K.
    `transposed` True: it is MN-major, the contiguous dimension is M (or N).

    A swizzled tile is stored as column panels as wide as the swizzle (W bytes), each
    [rows][W] and swizzled in atoms of 8 rows. Following the PTX ISA's rules for the
    swizzled canonical layouts:
      K-major:  SBO = the step between 8-row groups along M/N = 8 W bytes; LBO is not used by
                the hardware for swizzled K-major layouts and is set to 1.
      MN-major: SBO = the step between 8-row groups along K = 8 W bytes; LBO = the step
                between panels along M/N (rows x W bytes), or 0 when the tile is one panel.
    """
    shape = tuple(getattr(buffer, "shape", ()) or ())
    try:
        dims = tuple(int(d) for d in shape)
    except (TypeError, ValueError):
        raise ValueError(f"compute_gmma_descriptor: {buffer!r} needs a static shape")
    if len(dims) < 2:
        raise ValueError(f"compute_gmma_descriptor: {buffer!r} is not a 2-D tile")
    rows, cols = dims[-2], dims[-1]
    row_bytes = cols * _elem_bytes(buffer)
    mode = _mode_of(layout, row_bytes)
    width = mode.swizzle_byte_size()
    if row_bytes % width or rows % 8:
        raise ValueError(f"compute_gmma_descriptor: a {rows} x {cols} tile of {buffer.dtype} does not fill whole "
                         f"{width}-byte swizzle atoms (rows of a multiple of {width} bytes, rows a multiple of 8)")
    sbo = 8 * width // 16
    if not transposed:
        return GmmaDescriptorParams(mode, 1, sbo)
    lbo = 0 if row_bytes == width else rows * width // 16
    return GmmaDescriptorParams(mode, lbo, sbo)


__all__ = ["GmmaDescriptorParams", "WGMMATensorCoreIntrinEmitter", "compute_gmma_descriptor"]
