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


# Cluster queries (upstream's T.get_cluster_*): plain arithmetic on the block indices, so they
# mean the same on every target. A cluster is a cluster_dims-shaped tile of the grid; without
# cluster_dims every block is its own cluster.

def _cluster_dims(what):
    from . import _launch

    _launch(what)  # (in a kernel body, as the block queries)
    return _b.current().cluster_dims


def _axis(what, dim):
    from . import _check_dim

    _check_dim(what, dim)
    return int(dim)


def get_cluster_dims():
    """The launch's cluster shape [x, y, z] ([1, 1, 1] without clusters)."""
    return list(_cluster_dims("T.get_cluster_dims"))


def get_cluster_size():
    """Blocks per cluster (the product of the cluster's dimensions)."""
    x, y, z = _cluster_dims("T.get_cluster_size")
    return x * y * z


def get_cluster_id(dim=0):
    """This block's cluster along grid dimension `dim`: the block index there divided by the
    cluster's extent there (0 along a dimension the kernel does not launch)."""
    from . import get_block_binding
    dim = _axis("T.get_cluster_id", dim)
    c = _cluster_dims("T.get_cluster_id")[dim]
    block = get_block_binding(dim)
    return block if c == 1 or isinstance(block, numbers.Integral) else block // c


def get_cluster_ids():
    """This block's cluster along each launched grid dimension."""
    from . import _launch
    vars_, _, _ = _launch("T.get_cluster_ids")
    return [get_cluster_id(d) for d in range(len(vars_))]


def get_cluster_extent(dim=0):
    """The number of clusters along grid dimension `dim` (the grid's extent there over the
    cluster's, rounded up): an int for a static grid, else an expression."""
    from . import get_block_extent
    dim = _axis("T.get_cluster_extent", dim)
    c = _cluster_dims("T.get_cluster_extent")[dim]
    g = get_block_extent(dim)
    if isinstance(g, numbers.Integral):
        return -(-g // c)
    return g if c == 1 else (g + (c - 1)) // c


def get_cluster_extents():
    """The number of clusters along each of the 3 grid dimensions."""
    return [get_cluster_extent(d) for d in range(3)]
