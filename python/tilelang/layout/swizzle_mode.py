"""``tilelang.layout.SwizzleMode``: the shared-memory swizzle widths of TMA, wgmma and
tcgen05, with the descriptor field codes of each (PTX ISA)."""
from __future__ import annotations


class _Members(type):
    """Lets `for m in SwizzleMode` walk the four modes, as over an enum."""

    def __iter__(cls):
        return iter(cls._members)

    def __len__(cls):
        return len(cls._members)


class SwizzleMode(metaclass=_Members):
    """One of four singleton values (NONE, SWIZZLE_32B, SWIZZLE_64B, SWIZZLE_128B). Not an int
    and not an enum.Enum, like upstream's (an FFI object): code compares modes with == or
    `is`, and `int(mode)` is its ordinal. (pytest then names parameters that are modes by
    position, `mode0`, as with upstream's package.)"""

    __slots__ = ("_ordinal", "_name")
    _members: tuple = ()

    def __init__(self, ordinal: int, name: str):
        self._ordinal, self._name = ordinal, name

    @property
    def name(self) -> str:
        return self._name

    @property
    def value(self) -> int:
        return self._ordinal

    def __int__(self) -> int:
        return self._ordinal

    __index__ = __int__

    def __eq__(self, other) -> bool:
        return isinstance(other, SwizzleMode) and other._ordinal == self._ordinal

    def __hash__(self) -> int:
        return hash(("SwizzleMode", self._ordinal))

    def __repr__(self) -> str:
        return f"SwizzleMode.{self._name}"

    __str__ = __repr__

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
        return SwizzleMode._members[int(ordinal)]


SwizzleMode.NONE = SwizzleMode(0, "NONE")
SwizzleMode.SWIZZLE_32B = SwizzleMode(1, "SWIZZLE_32B")
SwizzleMode.SWIZZLE_64B = SwizzleMode(2, "SWIZZLE_64B")
SwizzleMode.SWIZZLE_128B = SwizzleMode(3, "SWIZZLE_128B")
SwizzleMode._members = (SwizzleMode.NONE, SwizzleMode.SWIZZLE_32B, SwizzleMode.SWIZZLE_64B, SwizzleMode.SWIZZLE_128B)
