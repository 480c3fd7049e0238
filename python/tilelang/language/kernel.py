"""``tilelang.language.kernel``: the checks of ``T.Kernel``'s arguments."""
from __future__ import annotations

import numbers


def _normalize_threads(threads) -> list:
    """The block's thread extents as [x, y, z]: None means 128 threads; an int or 1 to 3
    ints are padded with 1s. Non-positive extents are rejected (a block of no threads
    would launch nothing)."""
    if threads is None:
        threads = [128]
    elif isinstance(threads, numbers.Integral):
        threads = [threads]
    threads = list(threads)
    if not 1 <= len(threads) <= 3:
        raise ValueError(f"T.Kernel: threads takes 1 to 3 extents, got {threads}")
    if any(not isinstance(t, numbers.Integral) for t in threads):
        raise ValueError(f"T.Kernel: threads must be compile-time ints, got {threads}")
    if any(t <= 0 for t in threads):
        raise ValueError(f"T.Kernel: threads must be positive, got {threads}")
    return [int(t) for t in threads] + [1] * (3 - len(threads))
