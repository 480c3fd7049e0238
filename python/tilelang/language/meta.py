"""``T.meta_class`` and ``T.inline``: objects that help build a kernel (tile schedulers and
the like) and keep their state in T.alloc_var buffers. A storing method is inlined into the
kernel like a @T.macro, with ``self`` bound; the others stay plain Python that builds and
returns expressions (upstream's names and split)."""
from __future__ import annotations

import ast
import inspect
import textwrap

from . import Macro


class _InlineMethod(Macro):
    """``@T.inline`` on a method: its body is inlined like a @T.macro's wherever a kernel calls
    it, with ``self`` bound (state lives in T.alloc_var buffers held by the object)."""

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        bound = Macro(self.func)
        bound.bound_args = (obj,)
        return bound


def inline(func):
    """``@T.inline``: the method is inlined at each call from kernel code (see _InlineMethod)."""
    return _InlineMethod(func)


def _stores_into_subscript(func) -> bool:
    """Whether `func` assigns to a subscript (``self.x[0] = ...``): a method that writes kernel
    state, which meta_class inlines. Unknown source: assume it does."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return True
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else [])
        if any(isinstance(t, ast.Subscript) for tgt in targets for t in ast.walk(tgt)):
            return True
    return False


def meta_class(cls):
    """``@T.meta_class``: a class of helpers that exist while a kernel is built (tile
    schedulers and the like), holding T.alloc_var buffers as state. Its methods that store
    into a subscript are inlined into the kernel (T.inline); the others stay plain Python
    that builds and returns expressions."""
    cls._is_meta_class = True
    for name, attr in list(cls.__dict__.items()):
        if name.startswith("__") or isinstance(attr, (Macro, staticmethod, classmethod, property)):
            continue
        if inspect.isfunction(attr) and _stores_into_subscript(attr):
            setattr(cls, name, _InlineMethod(attr))
    return cls
