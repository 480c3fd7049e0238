"""Layouts, as TileLang programs name them (`tilelang.layout`, `T.Layout`, `T.Fragment`).

This compiler chooses tile layouts itself: shared GEMM operands are XOR-swizzled for
conflict-free copies and tensor-core loads (or laid out for wgmma), fragments get the
layout of the GEMM or register strip that uses them. Layout objects given to
`T.annotate_layout` are accepted so that programs written for TileLang run unchanged;
the compiler's remarks (`kernel.get_remarks()`) say that the annotation was not applied.
Every access goes through the compiler's own layout, so results do not depend on it.
"""
from __future__ import annotations


class Layout:
    """A map from a tile's logical indices to a physical position: `Layout(shape, forward_fn)`
    with forward_fn(*indices) -> list of physical indices."""

    def __init__(self, shape, forward_fn=None, kind="custom"):
        self.shape = tuple(shape) if shape is not None else None
        self.forward_fn = forward_fn
        self.kind = kind

    def get_input_shape(self):
        return list(self.shape) if self.shape is not None else None

    def index(self, *indices):
        if self.forward_fn is None:
            raise ValueError(f"a {self.kind} layout has no index function here")
        return self.forward_fn(*indices)

    def __repr__(self):
        return f"Layout({self.kind}, shape={self.shape})"


class Fragment(Layout):
    """A register layout: which thread holds each element (`T.Fragment`)."""

    def __init__(self, shape, forward_fn=None, forward_thread_fn=None, replicate=1, forward_index_fn=None):
        super().__init__(shape, forward_fn or forward_index_fn, kind="fragment")
        self.forward_thread_fn = forward_thread_fn
        self.replicate = replicate


def _shape_of(buf):
    shape = getattr(buf, "shape", None)
    try:
        return tuple(int(d) for d in shape) if shape is not None else None
    except (TypeError, ValueError):
        return None


def _factory(kind):
    def make(buf, *args, **kwargs):
        return Layout(_shape_of(buf), kind=kind)

    make.__name__ = f"make_{kind}_layout"
    make.__doc__ = f"The {kind.replace('_', ' ')} layout of a shared tile (a hint: see the module comment)."
    return make


make_swizzled_layout = _factory("swizzled")
make_wgmma_swizzled_layout = _factory("wgmma_swizzled")
make_volta_swizzled_layout = _factory("volta_swizzled")
make_full_bank_swizzled_layout = _factory("full_bank_swizzled")
make_half_bank_swizzled_layout = _factory("half_bank_swizzled")
make_quarter_bank_swizzled_layout = _factory("quarter_bank_swizzled")
make_linear_layout = _factory("linear")

__all__ = ["Layout", "Fragment", "make_swizzled_layout", "make_wgmma_swizzled_layout", "make_volta_swizzled_layout",
           "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout", "make_quarter_bank_swizzled_layout",
           "make_linear_layout"]
