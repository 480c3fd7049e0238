"""``tilelang.language.fp8``: which fp8 dtype a program should use on this platform.

Upstream picks the FNUZ variants on ROCm GPUs before gfx950. This compiler targets CUDA
(and the CPU) only, where fp8 is the OCP float8_e4m3fn / float8_e5m2, so that is the answer."""
from __future__ import annotations

from .dtypes import float8_e4m3fn, float8_e5m2


def determine_fp8_type(fp8_format: str = "e4m3", device=None) -> str:
    if fp8_format not in ("e4m3", "e5m2"):
        raise ValueError(f"Unsupported FP8 format: {fp8_format!r} (expected 'e4m3' or 'e5m2')")
    return float8_e4m3fn if fp8_format == "e4m3" else float8_e5m2


def determine_torch_fp8_type(fp8_format: str = "e4m3", device=None):
    import torch

    name = str(determine_fp8_type(fp8_format, device))
    t = getattr(torch, name, None)
    if t is None:
        raise RuntimeError(f"this torch ({torch.__version__}) has no dtype {name}")
    return t
