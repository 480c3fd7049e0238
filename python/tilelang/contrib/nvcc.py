"""``tilelang.contrib.nvcc``: the CUDA version and compute capability, as this compiler sees
them. We compile CUDA with NVRTC (not the nvcc program), so the CUDA version is NVRTC's."""
from __future__ import annotations

import os
import re


def get_cuda_version(cuda_path=None) -> tuple:
    """The CUDA toolkit version that compiles our kernels, e.g. (12, 8): NVRTC's version."""
    from .. import _tl
    from ..jit.cuda_backend import _search_dirs

    dirs = ([cuda_path] if cuda_path else []) + list(_search_dirs())
    ok, desc = _tl.find_cuda_compiler(dirs)
    m = re.search(r"nvrtc (\d+)\.(\d+)", desc or "")
    if not ok or not m:
        raise RuntimeError(f"Cannot read the CUDA version: {desc}")
    return int(m.group(1)), int(m.group(2))


def parse_compute_version(compute_version) -> tuple[int, int]:
    """"9.0" -> (9, 0)."""
    try:
        major, minor = str(compute_version).split(".")[:2]
        return int(major), int(minor)
    except ValueError as err:
        raise RuntimeError(f"Compute version parsing error: {compute_version!r}") from err


def get_target_compute_version(target=None) -> str:
    """The compute capability ("9.0") of the target's arch: from `target`, else the target in
    scope (`with Target(...)`), else TILELANG_CUDA_ARCH, else the current GPU."""
    from ..jit import target as _t

    arch = None
    if target is not None:
        arch = getattr(target, "arch", None) or _t.parse(target).arch
    elif _t._scoped and _t._scoped[-1].arch:
        arch = _t._scoped[-1].arch
    if not arch:
        from ..jit.cuda_backend import default_arch

        try:
            arch = os.environ.get("TILELANG_CUDA_ARCH") or default_arch()
        except Exception as err:  # no device and no arch given
            raise ValueError("No CUDA architecture was specified or GPU detected; give a target "
                             "such as 'cuda -arch=sm_90' or set TILELANG_CUDA_ARCH") from err
    digits = str(arch).removeprefix("sm_").rstrip("af")
    if not digits.isdigit() or len(digits) not in (2, 3):
        raise ValueError(f"Unsupported arch: {arch}")
    return f"{digits[:-1]}.{digits[-1]}"


def get_target_arch(compute_version) -> str:
    """(9, 0) or "9.0" -> "90a" (arch-specific features from Hopper on), (8, 0) -> "80"."""
    major, minor = parse_compute_version(compute_version) if isinstance(compute_version, str) else compute_version
    return f"{major * 10 + minor}" + ("a" if major >= 9 else "")
