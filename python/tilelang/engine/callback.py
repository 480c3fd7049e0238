"""Hooks that rewrite generated source before it is compiled.

``@register_cuda_postproc_callback`` registers ``f(code, target) -> code``: every CUDA kernel
compiled afterwards is compiled from ``f``'s result (so it also shows in
``kernel.get_kernel_source()``). The cubin cache is keyed by the source text, so a
rewritten source is compiled afresh rather than taken from an earlier build.
HIP and Metal hooks are accepted and never called: this compiler has no such backends."""
from __future__ import annotations

from typing import Callable

_hooks: dict = {}


def _register(kind, func, override):
    if kind in _hooks and not override:
        raise ValueError(f"a {kind} post-processing callback is already registered (pass override=True)")
    _hooks[kind] = func
    return func


def _decorator(kind):
    def register(func: Callable | bool = None, override: bool = True):
        if callable(func):
            return _register(kind, func, override)
        # @register_xxx_postproc_callback(override=False) or (False)
        if isinstance(func, bool):
            override = func
        return lambda f: _register(kind, f, override)

    register.__name__ = f"register_{kind}_postproc_callback"
    return register


def register_cuda_postproc(func: Callable, override: bool = True):
    return _register("cuda", func, override)


def register_hip_postproc(func: Callable, override: bool = True):
    return _register("hip", func, override)


def register_c_postproc(func: Callable, override: bool = True):
    return _register("c", func, override)


register_cuda_postproc_callback = _decorator("cuda")
register_hip_postproc_callback = _decorator("hip")
register_c_postproc_callback = _decorator("c")


def postprocess(kind: str, code: str, target=None) -> str:
    """`code` through the registered hook of `kind` (unchanged when none is)."""
    hook = _hooks.get(kind)
    if hook is None:
        return code
    out = hook(code, target)
    if not isinstance(out, str):
        raise TypeError(f"the {kind} post-processing callback returned {type(out).__name__}, not the source str")
    return out
