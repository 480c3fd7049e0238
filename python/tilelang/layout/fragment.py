"""``tilelang.layout.Fragment`` (``T.Fragment``): a register layout, saying which thread holds
each element of a tile and at which of its registers, with upstream's constructor:

- ``Fragment(shape, forward_fn=f)``: f(*indices) -> (thread, index);
- ``Fragment(shape, forward_thread_fn=t, forward_index_fn=x)``: the two separately;
- with ``replicate=r`` > 1 the thread function (or f) takes one more argument, the replica
  number in [0, r): each element is held by r threads.

The compiler chooses fragment layouts itself (see tilelang.layout); these objects describe
layouts for programs, tools (tilelang.tools.plot_layout) and tests."""
from __future__ import annotations

import itertools

from .layout import Layout, _exprs, _ints


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _all_indices(shape):
    return itertools.product(*(range(d) for d in shape))


class Fragment(Layout):
    def __init__(self, shape, forward_fn=None, forward_thread_fn=None, replicate=1, forward_index_fn=None):
        replicate = int(replicate)
        if replicate < 1:
            raise ValueError(f"Fragment: replicate must be >= 1, got {replicate}")
        if forward_fn is not None:
            both = forward_fn
            forward_thread_fn = lambda *idx: both(*idx)[0]  # noqa: E731
            if replicate > 1:
                forward_index_fn = lambda *idx: both(*idx, 0)[1]  # noqa: E731
            else:
                forward_index_fn = lambda *idx: both(*idx)[1]  # noqa: E731
        elif forward_thread_fn is None:
            raise ValueError("Fragment: give forward_fn (indices -> (thread, index)) or forward_thread_fn")
        super().__init__(shape, forward_index_fn, kind="fragment")
        self.forward_thread_fn = forward_thread_fn
        self.replicate_count = replicate  # (upstream's replicate(n) is a method)
        self._fmap = None

    # ---- evaluation on Python ints

    def _threads_at(self, at):
        """The threads holding the element at `at` (one per replica)."""
        if self.replicate_count == 1:
            return [int(self.forward_thread_fn(*at))]
        return [int(self.forward_thread_fn(*at, rep)) for rep in range(self.replicate_count)]

    def thread_extent(self) -> int:
        """How many threads the fragment spans (the largest thread index, over every element
        and replica, plus one)."""
        return max(max(self._threads_at(at)) for at in _all_indices(self.shape)) + 1

    def get_thread_size(self) -> int:
        return self.thread_extent()

    # ---- the symbolic map: [thread, *index] over the indices (and the replica number)

    def _fragment_map(self):
        if self._fmap is None:
            from .. import _tl
            from ..language.values import PrimExpr

            extents = _ints(self.shape, "this fragment operation")
            variables = [PrimExpr(_tl.IndexMap.input_var(d)) for d in range(len(extents))]
            rep = [PrimExpr(_tl.IndexMap.replica_var())] if self.replicate_count > 1 else []
            thread = _exprs(self.forward_thread_fn(*variables, *rep))
            if len(thread) != 1:
                raise ValueError(f"Fragment: the thread function must give one thread index, got {len(thread)}")
            index = _exprs(self.forward_fn(*variables)) if self.forward_fn is not None else []
            self._fmap = _tl.IndexMap([v.node for v in variables + rep], extents + [self.replicate_count] * len(rep),
                                      [e.node for e in thread + index])
        return self._fmap

    @property
    def thread(self):
        from ..language.values import PrimExpr

        return PrimExpr(self._fragment_map().outputs[0])

    def map_forward_thread(self, indices):
        from ..language.values import as_expr
        from .layout import _py_value, _wrap

        indices = list(indices)
        if self.replicate_count > 1 and len(indices) == len(self.shape):
            indices.append(0)
        return _py_value(_wrap(self._fragment_map().apply([as_expr(i, "int32").node for i in indices])[0]))

    def reshape(self, shape, rescale_num=1, rescale_den=1) -> "Fragment":
        """The fragment over another input shape of as many elements (Layout.reshape): each
        element keeps its thread and register."""
        from .layout import _flatten, _reshape_args, _unflatten

        new, old, _ = _reshape_args(self, shape, rescale_num, rescale_den, "Fragment.reshape")
        if new == old:
            return self
        thread, index, reps = self.forward_thread_fn, self.forward_fn, self.replicate_count

        def new_thread(*idx_rep):
            rest = idx_rep[len(new):]  # (the replica number, when replicated)
            return thread(*_unflatten(_flatten(idx_rep[:len(new)], new), old), *rest)

        return Fragment(tuple(new), forward_thread_fn=new_thread, replicate=reps,
                        forward_index_fn=lambda *idx: index(*_unflatten(_flatten(idx, new), old)))

    def is_equal(self, other) -> bool:
        """Same shape, replication, and thread and register of every element."""
        if not isinstance(other, Fragment) or list(self.shape) != list(other.shape):
            return False
        if self.replicate_count != other.replicate_count:
            return False
        return bool(self._fragment_map().equal(other._fragment_map()))

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
        frag_len = max(int(_as_list(base_index(*at))[0]) for at in _all_indices(base)) + 1
        threads = self.thread_extent()

        def copy_number(idx):
            n, stride = 0, 1
            for d in order:
                n += stride * (idx[d] // base[d])
                stride *= repeats[d]
            return n

        def inner(idx):
            return [i % b for i, b in zip(idx, base)]

        def thread(*idx_rep):
            idx, rep = idx_rep[:len(base)], idx_rep[len(base):]
            t = base_thread(*inner(idx), *rep)
            return t + threads * copy_number(idx) if repeat_on_thread else t

        def index(*idx):
            i = _as_list(base_index(*inner(idx)))
            return i if repeat_on_thread else [i[0] + frag_len * copy_number(idx)]

        return Fragment([b * r for b, r in zip(base, repeats)], forward_thread_fn=thread, forward_index_fn=index,
                        replicate=self.replicate_count)

    def replicate(self, replicate: int) -> "Fragment":
        """The fragment held `replicate` times over: replica r of the result is replica
        r % R of this fragment (R its replica count) on threads shifted by (r // R) times
        its thread size."""
        n = int(replicate)
        if n < 1:
            raise ValueError(f"Fragment.replicate: the factor must be >= 1, got {n}")
        base_thread, old, threads = self.forward_thread_fn, self.replicate_count, self.thread_extent()

        def thread(*idx_rep):
            idx, rep = idx_rep[:len(self.shape)], (idx_rep[len(self.shape):] or (0,))[0]
            t = base_thread(*idx, rep % old) if old > 1 else base_thread(*idx)
            return t + (rep // old) * threads

        if n == 1:
            return self
        return Fragment(self.shape, forward_thread_fn=thread, forward_index_fn=self.forward_fn,
                        replicate=old * n)

    def __repr__(self):
        return f"Fragment(shape={self.shape}, replicate={self.replicate_count})"
