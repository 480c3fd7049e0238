"""Targets: "cpu" (aliases "llvm", "c"), "cuda" ("cuda -arch=sm_90a", {"kind": "cuda",
"arch": "sm_80"}), and "auto"."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

_CPU_ALIASES = ("cpu", "llvm", "c")


@dataclass(frozen=True)
class Target:
    kind: str               # "cpu" or "cuda"
    arch: str | None = None  # "sm_90a", ... (None: the current device's)

    def __str__(self):
        return self.kind if not self.arch else f"{self.kind} -arch={self.arch}"


# Targets entered with `with tilelang.tvm.target.Target("c"):` (innermost last): what
# "auto" and None mean inside the block.
_scoped: list = []


def parse(target) -> Target:
    """A Target from a string or dict; "auto" is resolved by `resolve`."""
    if (target is None or target == "auto") and _scoped:
        target = _scoped[-1]
    if target is None:
        target = os.environ.get("TILELANG_DEFAULT_TARGET", "auto")
    if hasattr(target, "tilelang_target"):  # a tilelang.tvm.target.Target
        target = target.tilelang_target
    if isinstance(target, Target):
        return target
    if isinstance(target, str) and target.strip().startswith("{"):
        target = json.loads(target)
    arch = None
    if isinstance(target, dict):
        kind = str(target.get("kind", "auto")).lower()
        arch = target.get("arch")
    else:
        parts = str(target).split()
        kind = parts[0].lower() if parts else "auto"
        for p in parts[1:]:
            if p.startswith("-arch="):
                arch = p[len("-arch="):]
            elif p.startswith("-mcpu="):
                arch = p[len("-mcpu="):]
    if kind in _CPU_ALIASES:
        return Target("cpu")
    if kind in ("cuda", "auto"):
        if arch is not None and not str(arch).startswith("sm_"):
            raise ValueError(f"CUDA arch must look like 'sm_80' or 'sm_90a', got {arch!r}")
        return Target(kind, arch)
    raise ValueError(f"unknown target {target!r}; expected 'auto', 'cpu' (or 'llvm', 'c') or 'cuda'")


def cuda_usable() -> bool:
    from .. import _tl

    ok, _ = _tl.cuda_available()
    return ok


def resolve(target, args=()) -> Target:
    """Resolves "auto": the device of tensor arguments when there are some, else CUDA when
    a GPU is usable, else the CPU."""
    t = parse(target)
    if t.kind != "auto":
        return t
    tensors = [a for a in args if hasattr(a, "shape") and hasattr(a, "dtype")]
    if tensors:
        return Target("cuda") if any(_is_cuda_tensor(a) for a in tensors) else Target("cpu")
    return Target("cuda") if cuda_usable() else Target("cpu")


def _is_cuda_tensor(a) -> bool:
    if type(a).__module__.startswith("torch"):
        return bool(getattr(a, "is_cuda", False))
    dev = getattr(a, "__dlpack_device__", None)
    if dev is not None:
        try:
            return dev()[0] in (2, 13)  # kDLCUDA, kDLCUDAManaged
        except Exception:  # noqa: BLE001
            return False
    return False
