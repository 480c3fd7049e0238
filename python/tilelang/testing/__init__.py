"""Test helpers with upstream TileLang's names, so its tests run unchanged:

    @tilelang.testing.requires_cuda
    @tilelang.testing.requires_cuda_compute_version_ge(9, 0)
    def test_x(): ...

    if __name__ == "__main__":
        tilelang.testing.main()

The skip decisions are made when the module is imported (no GPU: every requires_cuda* test is
skipped with its reason). pytest is imported on first use, so `import tilelang` never needs it.
"""
from __future__ import annotations

import functools
import importlib.util
import inspect
import os
import random
import sys

import numpy as np

from ..utils.tensor import torch_assert_close  # noqa: F401
from .perf_regression import process_func, regression  # noqa: F401
from ..utils.target import determine_target, target_is_cuda  # noqa: F401,E402

__all__ = [
    "requires_package", "requires_cuda", "requires_llvm", "requires_cpu", "requires_metal", "requires_rocm",
    "requires_cdna", "requires_cuda_or_cdna", "requires_gfx950", "requires_torch", "main",
    "requires_cuda_compute_version", "process_func", "regression", "set_random_seed", "torch_assert_close",
] + [f"requires_cuda_compute_version_{op}" for op in ("ge", "gt", "le", "lt", "eq")]


@functools.lru_cache(maxsize=None)
def cuda_compute_version() -> tuple:
    """(major, minor) of GPU 0, or (0, 0) when no CUDA device is usable."""
    try:
        from .. import _tl

        ok, _ = _tl.cuda_available()
        if not ok or _tl.device_count() < 1:
            return (0, 0)
        arch = _tl.device_arch(0)  # "sm_90"
        digits = "".join(c for c in arch if c.isdigit())
        return (int(digits[:-1]), int(digits[-1])) if len(digits) >= 2 else (0, 0)
    except Exception:  # noqa: BLE001 - no driver, no device: nothing CUDA runs
        return (0, 0)


def _cuda_usable() -> bool:
    return cuda_compute_version() != (0, 0)


def _package_available(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


class _Requirement:
    """A decorator that skips its test (function or class) with a reason when `ok` is False.
    `.marks()` gives the pytest marks, as upstream's (TVM's) requirement objects do."""

    def __init__(self, ok, reason):
        self._ok, self.reason = ok, reason

    @property
    def ok(self) -> bool:
        return bool(self._ok() if callable(self._ok) else self._ok)

    def marks(self):
        import pytest

        return [pytest.mark.skipif(not self.ok, reason=self.reason)]

    def __call__(self, func):
        return _compose(func, self.marks())


def _compose(func, marks):
    for m in marks:
        func = m(func)
    return func


requires_cuda = _Requirement(_cuda_usable, "Requires a usable CUDA device (none found)")
requires_gpu = requires_cuda
requires_llvm = _Requirement(True, "")  # the CPU target ("llvm" is its alias) is always there
requires_cpu = requires_llvm
requires_metal = _Requirement(False, "Requires Metal: this compiler has no Metal target")
requires_rocm = _Requirement(False, "Requires ROCm: this compiler has no ROCm/HIP target")
requires_cdna = requires_rocm
requires_gfx950 = requires_rocm
requires_cuda_or_cdna = requires_cuda
requires_torch = _Requirement(lambda: _package_available("torch"), "Requires the package torch")


def requires_package(*packages):
    """Skips the test unless every named package can be imported."""
    missing = lambda: [p for p in packages if not _package_available(p)]  # noqa: E731
    return _Requirement(lambda: not missing(), f"Requires the package(s) {', '.join(packages)}")


_MODES = {
    "ge": lambda a, b: a >= b, "gt": lambda a, b: a > b, "le": lambda a, b: a <= b,
    "lt": lambda a, b: a < b, "eq": lambda a, b: a == b,
}


def requires_cuda_compute_version(major_version, minor_version=0, mode="ge"):
    """Runs the test only on a CUDA device whose compute capability compares with
    (major_version, minor_version) as `mode` says ("ge", "gt", "le", "lt", "eq"). Without a
    GPU the test is skipped (it requires CUDA too)."""
    if mode not in _MODES:
        raise ValueError(f"requires_cuda_compute_version: mode must be one of {sorted(_MODES)}, got {mode!r}")
    want = (int(major_version), int(minor_version))

    def ok():
        have = cuda_compute_version()
        return have != (0, 0) and _MODES[mode](have, want)

    have = cuda_compute_version()
    reason = (f"Requires CUDA compute {mode} {want[0]}.{want[1]}, but have {have[0]}.{have[1]}"
              if have != (0, 0) else requires_cuda.reason)
    req = _Requirement(ok, reason)
    return req.__call__


def requires_cuda_compute_version_ge(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "ge")


def requires_cuda_compute_version_gt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "gt")


def requires_cuda_compute_version_eq(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "eq")


def requires_cuda_compute_version_lt(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "lt")


def requires_cuda_compute_version_le(major_version, minor_version=0):
    return requires_cuda_compute_version(major_version, minor_version, "le")


def main():
    """Runs pytest on the file that calls it (``if __name__ == "__main__": tilelang.testing.main()``),
    passing the command line's arguments on; exits with pytest's status."""
    import pytest

    test_file = inspect.getsourcefile(sys._getframe(1))
    sys.exit(pytest.main([os.path.abspath(test_file)] + sys.argv[1:]))


def set_random_seed(seed: int = 42) -> None:
    """Seeds Python's, numpy's and (when installed) torch's generators."""
    random.seed(seed)
    np.random.seed(seed)
    if "torch" in sys.modules or _package_available("torch"):
        import torch

        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
