"""``tvm.ir.assert_structural_equal`` for @T.prim_func kernels."""
from __future__ import annotations


def structural_equal(a, b, map_free_vars=False) -> bool:
    from .. import _tl

    return bool(_tl.structural_equal(getattr(a, "node", a), getattr(b, "node", b)))


def assert_structural_equal(a, b, map_free_vars=False):
    if not structural_equal(a, b):
        raise ValueError(f"the two kernels differ structurally:\n{getattr(a, 'node', a)}\n---\n{getattr(b, 'node', b)}")
