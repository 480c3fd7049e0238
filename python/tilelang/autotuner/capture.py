"""``with tilelang.autotuner.set_autotune_inputs(a, b):`` — the tensors an autotuned kernel
is timed (and checked) on while tuning inside the block, instead of generated inputs."""
from __future__ import annotations

import threading

_local = threading.local()


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


class AutotuneInputsCapture:
    """Context manager made by set_autotune_inputs; nests (the innermost wins)."""

    __slots__ = ("tensors",)

    def __init__(self, tensors):
        self.tensors = list(tensors)

    def __enter__(self):
        _stack().append(self)
        return self

    def __exit__(self, exc_type, exc, tb):
        _stack().pop()
        return False


def set_autotune_inputs(*args) -> AutotuneInputsCapture:
    """set_autotune_inputs(a, b, c) or set_autotune_inputs([a, b, c]): the kernel's inputs
    (its non-output parameters, in order) for the tuning done inside the `with` block."""
    tensors = list(args[0]) if len(args) == 1 and isinstance(args[0], (list, tuple)) else list(args)
    return AutotuneInputsCapture(tensors)


def get_autotune_inputs():
    """The innermost set_autotune_inputs tensors, or None outside such a block."""
    s = _stack()
    return s[-1].tensors if s else None
