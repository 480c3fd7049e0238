"""Thread-block clusters (sm_90): ``T.ClusterKernel``, ``T.Kernel(..., cluster_dims=...)``,
the block's rank in its cluster and the cluster-wide barrier.

A launch with ``cluster_dims`` carries a ``tl.cluster_dims`` marker (x, y, z) at the top of
its body; the CUDA code generator declares the kernel with ``__cluster_dims__``, so the driver
launches the grid in clusters of that shape (the grid must divide into them). The cluster
intrinsics are CUDA instructions: the CPU target refuses them at the user's line (its blocks
run one after another, so blocks of one cluster cannot wait for each other there); a cluster
launch without them runs on the CPU unchanged (the grouping only places blocks on the GPU).
"""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder as _b
from .values import PrimExpr, const

CLUSTER_DIMS_ATTR = "tl.cluster_dims"
# The portable cluster size: larger clusters need a non-portable opt-in per kernel.
MOST_BLOCKS_PER_CLUSTER = 8


def normalize_cluster_dims(cluster_dims):
    """(x, y, z) from an int or a list of 1 to 3 positive ints; None for no clusters (None or
    a single block), as upstream normalizes them."""
    if cluster_dims is None:
        return None
    dims = [cluster_dims] if isinstance(cluster_dims, numbers.Integral) else cluster_dims
    if not isinstance(dims, (list, tuple)) or not 1 <= len(dims) <= 3 or \
            not all(isinstance(d, numbers.Integral) and not isinstance(d, bool) and d >= 1 for d in dims):
        raise _b._UserError(f"cluster_dims must be a positive int or a list of 1 to 3 positive ints, "
                            f"got {cluster_dims!r}")
    dims = [int(d) for d in dims] + [1] * (3 - len(dims))
    if dims[0] * dims[1] * dims[2] > MOST_BLOCKS_PER_CLUSTER:
        raise _b._UserError(f"cluster_dims {tuple(dims)}: at most {MOST_BLOCKS_PER_CLUSTER} blocks per cluster "
                            f"(the portable cluster size), got {dims[0] * dims[1] * dims[2]}")
    return None if dims == [1, 1, 1] else dims


def check_grid_divides(grid, dims):
    """A static grid extent must be a multiple of the cluster's along it (the driver refuses
    the launch otherwise); a dynamic one is checked by the driver at launch."""
    for axis, (g, c) in enumerate(zip(list(grid) + [1] * (3 - len(grid)), dims)):
        if isinstance(g, numbers.Integral) and g % c:
            raise _b._UserError(f"cluster_dims {tuple(dims)}: the grid's extent {g} along {'xyz'[axis]} is not a "
                                f"multiple of the cluster's {c}")


def emit_cluster_marker(dims):
    """The launch marker, first in the kernel body."""
    _b.emit(_tl.attr(CLUSTER_DIMS_ATTR, [const(d, "int32").node for d in dims], _b.current_span()))


def _call(name, what, dtype="void"):
    _b.require_kernel(what)
    return _tl.call(dtype, name, [])


def block_rank_in_cluster():
    """This block's rank in its cluster (x fastest), 0 .. cluster size - 1."""
    return PrimExpr(_call("block_rank_in_cluster", "T.block_rank_in_cluster", "int32"))


def cluster_arrive():
    """This thread arrives on the cluster barrier, releasing its earlier writes (every thread of
    the warp runs it)."""
    _b.emit(_tl.evaluate(_call("cluster_arrive", "T.cluster_arrive"), _b.current_span()))


def cluster_arrive_relaxed():
    """``T.cluster_arrive`` without ordering memory."""
    _b.emit(_tl.evaluate(_call("cluster_arrive_relaxed", "T.cluster_arrive_relaxed"), _b.current_span()))


def cluster_wait():
    """Waits until every thread of the cluster has arrived (acquiring their writes)."""
    _b.emit(_tl.evaluate(_call("cluster_wait", "T.cluster_wait"), _b.current_span()))


def cluster_sync():
    """Every thread of every block of the cluster meets here (arrive, then wait)."""
    _b.emit(_tl.evaluate(_call("cluster_sync", "T.cluster_sync"), _b.current_span()))
