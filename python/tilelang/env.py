"""Environment settings: cache location, verbosity, where the device headers are."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from pathlib import Path

_FALSE = ("0", "false", "False", "FALSE", "off", "no", "")

# None: follow TILELANG_DISABLE_CACHE; True/False: set by enable_cache()/disable_cache().
_cache_enabled_override = None
_private_root = None
_private_lock = threading.Lock()


def cache_dir() -> str:
    d = os.environ.get("TILELANG_CACHE_DIR")
    return d if d else str(Path.home() / ".cache" / "tilelang")


def is_cache_enabled() -> bool:
    """Whether compiled kernels are looked up in and stored to the disk cache."""
    if _cache_enabled_override is not None:
        return _cache_enabled_override
    return os.environ.get("TILELANG_DISABLE_CACHE", "0") in _FALSE


def enable_cache() -> None:
    global _cache_enabled_override
    _cache_enabled_override = True


def disable_cache() -> None:
    global _cache_enabled_override
    _cache_enabled_override = False


_thread_state = threading.local()


class private_cache:  # noqa: N801 - used as a context manager
    """Within it, this thread's compiles use a fresh private folder (as with the cache
    disabled): the fallback when the cache folder cannot be written."""

    def __enter__(self):
        self._was = getattr(_thread_state, "private", False)
        _thread_state.private = True
        return self

    def __exit__(self, *exc):
        _thread_state.private = self._was
        return False


def cache_writable() -> bool:
    """Whether the cache folder can be created and written (probed by writing a file)."""
    try:
        os.makedirs(cache_dir(), exist_ok=True)
        fd, path = tempfile.mkstemp(dir=cache_dir(), prefix=".probe-")
        os.close(fd)
        os.unlink(path)
        return True
    except OSError:
        return False


def kernel_cache_dir() -> str:
    """Where the next compile keeps its files: the shared disk cache, or, with the cache
    disabled, a fresh private folder (removed when the process exits) that no other
    compile reads."""
    if is_cache_enabled() and not getattr(_thread_state, "private", False):
        return cache_dir()
    global _private_root
    with _private_lock:
        if _private_root is None:
            _private_root = tempfile.mkdtemp(prefix="tilelang-nocache-")
            atexit.register(shutil.rmtree, _private_root, True)
        return tempfile.mkdtemp(dir=_private_root)


def print_on_compilation() -> bool:
    return os.environ.get("TILELANG_PRINT_ON_COMPILATION", "1") not in ("0", "false", "False", "")


def template_dir() -> str:
    """The folder of tl_cpu.h: installed with the package, or the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates" / "tl" / "cpu", here.parent.parent / "templates" / "tl" / "cpu"):
        if (candidate / "tl_cpu.h").exists():
            return str(candidate)
    raise RuntimeError(f"cannot find the CPU device headers (tl_cpu.h) near {here}; reinstall tilelang")


# Upstream-style settings object: `from tilelang.env import env; env.TILELANG_CACHE_DIR`.
from ._environment import Environment, env  # noqa: E402,F401
