"""``tilelang.transform.simplify``: this compiler's `simplify` pass (constant folding and
algebraic simplification of every expression) applied to a @T.prim_func, as upstream's
apply_simplify / @simplify_prim_func apply TVM's Simplify. Every compilation runs the pass
anyway, so this changes what `func.script()` shows, not what the kernel computes."""
from __future__ import annotations

import copy
import functools


def apply_simplify(func, inline_let: bool = False):
    """A copy of `func` with its body simplified and, as upstream's (whose Simplify runs with
    simplify_arguments), without the tensor parameters its body never uses: a GEMV built
    without its bias takes (A, B, C). (`inline_let` is accepted; let-bindings are kept as
    written, which computes the same values.)"""
    from .. import _tl

    node = getattr(func, "node", None)
    if not isinstance(node, _tl.PrimFunc):
        raise TypeError(f"apply_simplify takes a @T.prim_func kernel, got {type(func).__name__}")
    out = copy.copy(func)
    out.node = _tl.run_pass("drop-unused-params", _tl.run_pass("simplify", node))
    kept = set(out.node.param_names)
    if len(kept) != len(func.params):
        old_names = [p.name if hasattr(p, "name") else p.node.var_name for p in func.params]
        index = {}  # old parameter index -> new one
        for i, name in enumerate(old_names):
            if name in kept:
                index[i] = len(index)
        out.params = [p for i, p in enumerate(func.params) if i in index]
        out.out_params = [index[i] for i in getattr(func, "out_params", []) if i in index]
        out.workspace_params = [index[i] for i in getattr(func, "workspace_params", []) if i in index]
    return out


def simplify_prim_func(func):
    """Decorates a function that returns a @T.prim_func so that it returns it simplified."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return apply_simplify(func(*args, **kwargs))

    return wrapper
