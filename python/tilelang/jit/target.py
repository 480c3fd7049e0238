"""Target strings: "cpu" (aliases "llvm", "c"), "cuda" (with -arch), "auto"."""
from __future__ import annotations

import os

_CPU_ALIASES = ("cpu", "llvm", "c")


def normalize(target, args=()) -> str:
    """The target kind to compile for. "auto" follows the arguments' device when there are
    arguments, else a usable GPU, else the CPU."""
    if target is None:
        target = os.environ.get("TILELANG_DEFAULT_TARGET", "auto")
    if isinstance(target, dict):
        target = target.get("kind", "auto")
    kind = str(target).split()[0].lower()
    if kind in _CPU_ALIASES:
        return "cpu"
    if kind == "auto":
        for a in args:
            if _is_cuda_tensor(a):
                return "cuda"
        return "cpu"
    if kind == "cuda":
        return "cuda"
    raise ValueError(f"unknown target {target!r}; expected 'auto', 'cpu' (or 'llvm', 'c') or 'cuda'")


def _is_cuda_tensor(a) -> bool:
    return type(a).__module__.startswith("torch") and getattr(a, "is_cuda", False)
