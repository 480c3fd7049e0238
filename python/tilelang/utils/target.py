"""``tilelang.utils.target``: which target "auto" means on this machine (upstream's names)."""
from __future__ import annotations


def determine_target(target="auto", return_object: bool = False):
    """The target a kernel compiled for `target` gets: "auto" is CUDA where a usable GPU is
    present, else the CPU; a named target is normalized ("llvm" and "c" are the CPU). Its
    string ("cuda", "cuda -arch=sm_90a", "cpu"), or the target object with return_object."""
    from ..jit.target import resolve

    t = resolve(target)
    return t if return_object else str(t)


def target_is_cuda(target) -> bool:
    return str(target).split()[0] == "cuda"
