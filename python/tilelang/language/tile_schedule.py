"""``T.PersistentTileScheduler``: which output tile a persistent block works on next.

A persistent kernel launches one block (a "worker") per SM and loops over the tiles of an
M x N tile grid: worker w takes the tiles numbered w, w + num_workers, w + 2 num_workers, ...
in a linear order, until the numbers run past the grid. The scheduler turns a tile number
into (m, n) and, when stateful, keeps the worker's current tile in four T.alloc_var scalars
(`{name}_m_idx`, `{name}_n_idx`, `{name}_linear_idx`, `{name}_current_iter`) that
`init` / `next_tile` update and `valid()` tests, for a `while sched.valid():` loop.

The linear order, as upstream defines it: the grid is first reshaped by `cluster_size` along
M (m counts clusters of rows); one axis is the fast one (M when `column_major`, else N); the
other is cut into panels of `swizzle_size` tiles, and each panel is swept fast axis first,
within the panel's (possibly narrower, last) width, before the next panel starts. With
`swizzle_size=1` that is plain column-major (or row-major) order. Everything is integer
arithmetic on the tile number, so the same program runs on every target.
"""
from __future__ import annotations

import numbers

from . import builder as _b
from .values import PrimExpr, as_expr


def _int(v):
    return v if isinstance(v, numbers.Integral) else as_expr(v, "int32")


class PersistentTileScheduler:
    """Upstream's persistent tile scheduler (see the module docstring)."""

    def __init__(self, num_m_tiles, num_n_tiles, num_workers=None, swizzle_size: int = 1, column_major: bool = True,
                 cluster_size: int = 1, stateful: bool = True, name: str | None = None):
        from . import ceildiv

        _b.require_kernel("T.PersistentTileScheduler")
        for what, v in (("swizzle_size", swizzle_size), ("cluster_size", cluster_size)):
            if not isinstance(v, numbers.Integral) or v < 1:
                raise _b._UserError(f"T.PersistentTileScheduler: {what} must be a positive int, got {v!r}")
        if num_workers is None:
            num_workers = _resident_workers(cluster_size)
        self.num_workers = _int(num_workers)
        self.swizzle_size = int(swizzle_size)
        self.cluster_size = int(cluster_size)
        self.column_major = bool(column_major)
        m = ceildiv(_int(num_m_tiles), self.cluster_size) if self.cluster_size > 1 else _int(num_m_tiles)
        n = _int(num_n_tiles)
        self.total_tiles = m * n
        self._fast, self._slow = (m, n) if self.column_major else (n, m)
        self.stateful = bool(stateful)
        if self.stateful:
            prefix = name or "sched"
            self._state = {k: self._scalar(f"{prefix}_{k}") for k in ("m_idx", "n_idx", "linear_idx", "current_iter")}

    @staticmethod
    def _scalar(name):
        from . import alloc_var

        _b.current().pending_name = name
        return alloc_var("int32", 0)

    def _need_state(self, what):
        if not self.stateful:
            raise _b._UserError(f"T.PersistentTileScheduler(stateful=False) has no {what}; use coord(tile_id)")

    def _get(self, key):
        self._need_state(key)
        return as_expr(self._state[key][0], "int32")

    def _set(self, key, value):
        from .. import _tl

        buf = self._state[key]
        zero = as_expr(0, "int32").node
        _b.emit(_tl.store(buf.node, [zero], as_expr(value, "int32").node, _b.current_span()))

    # ---- the decode: tile number -> (m, n) ---------------------------------------------

    def coord(self, tile_id):
        """(m, n) of tile number `tile_id` (m: the cluster row when cluster_size > 1; the
        caller adds the block's rank in its cluster)."""
        from . import max as _max, min as _min

        t = as_expr(tile_id, "int32")
        per_panel = self._fast * self.swizzle_size
        panel = t // per_panel
        first = panel * self.swizzle_size  # the panel's first index along the slow axis
        # the last panel may be narrower; at least 1, so a number past the grid divides safely
        width = _max(1, _min(self.swizzle_size, self._slow - first)) if self.swizzle_size > 1 else 1
        within = t - panel * per_panel
        fast = within // width if self.swizzle_size > 1 else within
        slow = first + within % width if self.swizzle_size > 1 else first
        return (fast, slow) if self.column_major else (slow, fast)

    # ---- the stateful walk -------------------------------------------------------------

    @property
    def m_idx(self) -> PrimExpr:
        return self._get("m_idx")

    @property
    def n_idx(self) -> PrimExpr:
        return self._get("n_idx")

    @property
    def linear_idx(self) -> PrimExpr:
        return self._get("linear_idx")

    @property
    def current_iter(self) -> PrimExpr:
        """How many tiles this worker has finished (0 on its first)."""
        return self._get("current_iter")

    def update_current_idx(self, linear_idx):
        m, n = self.coord(linear_idx)
        self._set("m_idx", m)
        self._set("n_idx", n)

    def init(self, worker_id):
        """Starts the worker `worker_id` (its block index, or cluster index) at its first tile."""
        self._need_state("init()")
        self._set("current_iter", 0)
        self._set("linear_idx", worker_id)
        self.update_current_idx(self.linear_idx)

    def next_tile(self):
        """Moves the worker num_workers tiles on."""
        self._need_state("next_tile()")
        self._set("current_iter", self.current_iter + 1)
        self._set("linear_idx", self.linear_idx + self.num_workers)
        self.update_current_idx(self.linear_idx)

    def valid(self) -> PrimExpr:
        """Whether the worker's current tile is inside the grid."""
        return self.linear_idx < self.total_tiles


def _resident_workers(cluster_size):
    """One worker per SM of the GPU (per cluster): upstream's default. Without a GPU to ask,
    the caller must say how many."""
    try:
        from ..carver.arch.driver.cuda_driver import get_num_sms

        return get_num_sms() // cluster_size
    except Exception as e:  # noqa: BLE001 - no driver, no device: say what to pass instead
        raise _b._UserError("T.PersistentTileScheduler: num_workers defaults to the GPU's SM count, which is "
                            f"unknown here ({e}); pass num_workers= (the number of blocks launched)") from None
