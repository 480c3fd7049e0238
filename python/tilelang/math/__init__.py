"""Integer helpers with upstream's names: ``tilelang.math.cdiv``, ``next_power_of_2``."""
from __future__ import annotations


def cdiv(a: int, b: int) -> int:
    """ceil(a / b) for integers."""
    return -(-a // b)


def next_power_of_2(x: int) -> int:
    """The smallest power of 2 >= x (1 for x <= 1)."""
    return 1 if x <= 1 else 1 << (int(x) - 1).bit_length()


__all__ = ["cdiv", "next_power_of_2"]
