"""The compiled-kernel disk cache: ``clear_cache()``, ``enable_cache()``,
``disable_cache()``, ``is_cache_enabled()``.

Compiled kernels (CPU shared libraries, CUDA cubins) are kept under
``$TILELANG_CACHE_DIR`` (default ``~/.cache/tilelang``), keyed by everything that changes
the binary. Each entry is verified when it is looked up; a missing, truncated or changed
file is rebuilt and reported once as a :class:`TileLangCacheWarning`.
``TILELANG_DISABLE_CACHE=1`` (or ``disable_cache()``) compiles every kernel afresh into a
private folder that nothing else reads.
"""
from __future__ import annotations

import os
import shutil
import threading
import warnings

from ..env import cache_dir, disable_cache, enable_cache, is_cache_enabled  # noqa: F401

__all__ = ["clear_cache", "cache_dir", "enable_cache", "disable_cache", "is_cache_enabled", "TileLangCacheWarning"]

# The folders this package writes under the cache dir (one per target).
_TARGET_DIRS = ("cpu", "cuda")


class TileLangCacheWarning(UserWarning):
    """A cache entry was unusable (missing, truncated or changed on disk) and was rebuilt."""


def clear_cache() -> None:
    """Deletes every compiled kernel in the disk cache. Kernels already loaded in this
    process keep working; the next compile of any kernel builds it again."""
    root = cache_dir()
    for name in _TARGET_DIRS:
        path = os.path.join(root, name)
        if os.path.isdir(path):
            shutil.rmtree(path, ignore_errors=True)


_reported = set()
_reported_lock = threading.Lock()


def report_cache_warnings(messages, stacklevel=3) -> None:
    """Shows each message about a rebuilt entry as a TileLangCacheWarning, once per
    process (two threads that found the same damaged entry report it once)."""
    for m in messages:
        with _reported_lock:
            if m in _reported:
                continue
            _reported.add(m)
        warnings.warn(m, TileLangCacheWarning, stacklevel=stacklevel)
