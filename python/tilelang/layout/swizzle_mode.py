"""``tilelang.layout.SwizzleMode``: the shared-memory swizzle widths of TMA, wgmma and
tcgen05, with the descriptor field codes of each (PTX ISA)."""
from __future__ import annotations

import enum


class SwizzleMode(enum.IntEnum):
    NONE = 0
    SWIZZLE_32B = 1
    SWIZZLE_64B = 2
    SWIZZLE_128B = 3

    def is_none(self) -> bool:
        return self is SwizzleMode.NONE

    def is_swizzle_32b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_32B

    def is_swizzle_64b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_64B

    def is_swizzle_128b(self) -> bool:
        return self is SwizzleMode.SWIZZLE_128B

    def swizzle_byte_size(self) -> int:
        """The width of one swizzle pattern in bytes (1 for no swizzle)."""
        return (1, 32, 64, 128)[int(self)]

    def swizzle_atom_size(self) -> int:
        """The width in 16-byte vectors (1 for no swizzle)."""
        return 1 if self.is_none() else self.swizzle_byte_size() // 16

    def smem_alignment(self) -> int:
        """The shared-memory base alignment the pattern needs, in bytes."""
        return (128, 256, 512, 1024)[int(self)]

    def wgmma_layout_type(self) -> int:
        """The layout field of a wgmma shared-memory descriptor."""
        return (0, 3, 2, 1)[int(self)]

    def tcgen05_layout_type(self) -> int:
        """The swizzle field of a tcgen05 shared-memory descriptor."""
        return (0, 6, 4, 2)[int(self)]

    @staticmethod
    def from_ordinal(ordinal: int) -> "SwizzleMode":
        return SwizzleMode(int(ordinal))
