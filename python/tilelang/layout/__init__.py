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

    def thread_extent(self) -> int:
        """How many threads hold the fragment (the largest thread index + 1, times replicas)."""
        import itertools

        top = max(int(self.forward_thread_fn(*at)) for at in itertools.product(*(range(d) for d in self.shape)))
        return (top + 1) * self.replicate

    def repeat(self, repeats, repeat_on_thread: bool = False, lower_dim_first: bool = True) -> "Fragment":
        """The fragment tiled `repeats[d]` times along each dimension d: the copies go to new
        threads (repeat_on_thread) or to more registers of the same threads; the copies are
        numbered with the last dimension fastest when lower_dim_first."""
        if isinstance(repeats, int):
            repeats = [repeats]
        repeats = [int(r) for r in repeats]
        if len(repeats) != len(self.shape):
            raise ValueError(f"Fragment.repeat: {len(repeats)} repeats for a {len(self.shape)}-d fragment")
        base, base_thread, base_index = self.shape, self.forward_thread_fn, self.forward_fn
        order = range(len(base) - 1, -1, -1) if lower_dim_first else range(len(base))
        frag_len = max(int(base_index(*at)[0]) for at in _all_indices(base)) + 1
        threads = self.thread_extent() // self.replicate

        def copy_number(idx):
            n, stride = 0, 1
            for d in order:
                n += stride * (idx[d] // base[d])
                stride *= repeats[d]
            return n

        def inner(idx):
            return [i % b for i, b in zip(idx, base)]

        def thread(*idx):
            t = base_thread(*inner(idx))
            return t + threads * copy_number(idx) if repeat_on_thread else t

        def index(*idx):
            i = base_index(*inner(idx))
            return i if repeat_on_thread else [i[0] + frag_len * copy_number(idx)]

        return Fragment([b * r for b, r in zip(base, repeats)], forward_fn=index, forward_thread_fn=thread,
                        replicate=self.replicate)


def _all_indices(shape):
    import itertools

    return itertools.product(*(range(d) for d in shape))


def make_gemm_fragment_8x8() -> Fragment:
    """The 8x8 register tile of an MMA / ldmatrix: thread 4*i + j//2 holds element (i, j) in
    register j % 2."""
    return Fragment((8, 8), forward_fn=lambda i, j: [j % 2], forward_thread_fn=lambda i, j: j // 2 + 4 * i)


def make_gemm_fragment_8x8_transposed() -> Fragment:
    """The transposed 8x8 MMA register tile: thread 4*j + i//2 holds (i, j) in register i % 2."""
    return Fragment((8, 8), forward_fn=lambda i, j: [i % 2], forward_thread_fn=lambda i, j: i // 2 + 4 * j)


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

from .swizzle_mode import SwizzleMode  # noqa: E402,F401
from . import swizzle  # noqa: E402,F401

__all__ = ["Layout", "Fragment", "make_swizzled_layout", "make_wgmma_swizzled_layout", "make_volta_swizzled_layout",
           "make_full_bank_swizzled_layout", "make_half_bank_swizzled_layout", "make_quarter_bank_swizzled_layout",
           "make_linear_layout", "make_gemm_fragment_8x8", "make_gemm_fragment_8x8_transposed", "SwizzleMode"]
