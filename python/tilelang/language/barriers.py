"""Hopper's barriers programmed by hand: ``T.alloc_barrier``, ``T.ws``, the mbarrier waits
and arrivals, ``T.tma_copy`` and the register and fence annotations that go with them.

A kernel that uses them runs its warpgroups' ``with T.ws(i):`` blocks as written; the
compiler adds no pipelining or warp specialization of its own there (the C++ passes decide
and say so in the remarks). These functions only build the IR and check the arguments:
  - an mbarrier array is a shared uint64 tile followed by a ``tl.barrier_init`` marker
    holding each barrier's arrive count (the targets initialize it once per block);
  - ``T.ws(i)`` is ``if`` over the warpgroup's thread range whose body starts with a
    ``tl.ws`` marker (so the passes can tell it from a user's ``if tx < 128:``);
  - ``T.tma_copy`` is a ``tl.tma_copy`` marker naming the barrier, then the copy.
"""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder as _b
from .hints import not_applied as _hints
from .values import Buffer, BufferRef, PrimExpr, as_expr, to_region

WARPGROUP_THREADS = 128
_ARRIVE_COUNT_LIMIT = 1 << 20  # what an mbarrier's arrival counter holds (PTX: 2^20 - 1)


def _is_int(x):
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def alloc_barrier(arrive_count):
    """``mbars = T.alloc_barrier([128, 128])``: shared-memory mbarriers, one per count, each
    expecting that many arrivals per phase (an int: one barrier). Index the result
    (``mbars[i]``) to name one; a single barrier may be passed as it is."""
    _b.require_kernel("T.alloc_barrier")
    counts = [arrive_count] if _is_int(arrive_count) else arrive_count
    if not isinstance(counts, (list, tuple)) or not counts or not all(_is_int(c) for c in counts):
        raise _b._UserError(f"T.alloc_barrier: arrive_count must be an int or a non-empty list of ints, "
                            f"got {arrive_count!r}")
    for c in counts:
        if not 1 <= c < _ARRIVE_COUNT_LIMIT:
            raise _b._UserError(f"T.alloc_barrier: every arrive count must be in [1, {_ARRIVE_COUNT_LIMIT - 1}], "
                                f"got {list(counts)}")
    b = _b.current()
    name = b.pending_name or "mbar"
    b.pending_name = None
    span = _b.current_span()
    node = _tl.buffer(name, "uint64", [_tl.const_int(len(counts), "int32")], "shared")
    _b.emit(_tl.allocate(node, None, span))
    buf = Buffer(node)
    values = [_tl.load(node, [_tl.const_int(0, "int32")])] + [_tl.const_int(int(c), "int32") for c in counts]
    _b.emit(_tl.attr("tl.barrier_init", values, span))
    barriers(b).add(id(node))
    return buf


def barriers(b):
    """The ids of the barrier tiles of the kernel being built."""
    if not hasattr(b, "barrier_tiles"):
        b.barrier_tiles = set()
    return b.barrier_tiles


def _is_barrier(buf):
    return id(buf.node) in barriers(_b.current())


def barrier_address(mbarrier, what):
    """The address of the barrier `mbarrier` names: ``mbars[i]``, or a one-barrier array."""
    _b.require_kernel(what)
    if isinstance(mbarrier, Buffer) and _is_barrier(mbarrier):
        if not (_is_int(mbarrier.shape[0]) and mbarrier.shape[0] == 1):
            raise _b._UserError(f"{what}: {mbarrier.name} holds {mbarrier.shape[0]} barriers; name one as "
                                f"{mbarrier.name}[i]")
        mbarrier = mbarrier[0]
    if not isinstance(mbarrier, BufferRef) or not _is_barrier(mbarrier.buffer) or not mbarrier.is_point:
        raise _b._UserError(f"{what}: the barrier must come from T.alloc_barrier (one element, mbars[i]), "
                            f"got {mbarrier!r}")
    return _tl.call("handle", "address_of", [mbarrier.load().node])


def _count(value, what, name):
    if isinstance(value, bool) or not (_is_int(value) or isinstance(value, PrimExpr)):
        raise _b._UserError(f"{what}: {name} must be an integer, got {value!r}")
    return as_expr(value, "int32").node


def _emit_call(op, args):
    _b.emit(_tl.evaluate(_tl.call("void", op, args), _b.current_span()))


def mbarrier_wait_parity(mbarrier, parity):
    """Waits until the phase of `mbarrier` with parity `parity` (0 or 1) has completed. On a
    fresh barrier the phase of parity 1 counts as completed (a producer's first wait on an
    empty stage passes)."""
    bar = barrier_address(mbarrier, "T.mbarrier_wait_parity")
    if _is_int(parity) and parity not in (0, 1):
        raise _b._UserError(f"T.mbarrier_wait_parity: parity must be 0 or 1, got {parity}")
    _emit_call("mbarrier_wait_parity", [bar, _count(parity, "T.mbarrier_wait_parity", "parity")])


def mbarrier_arrive(mbarrier, cta_id=None):
    """One arrival of each thread that runs it on `mbarrier`; with `cta_id`, on the barrier at
    the same place in block `cta_id` of the cluster (T.ClusterKernel; released to the cluster)."""
    if cta_id is not None:
        _emit_call("mbarrier_arrive_remote", [barrier_address(mbarrier, "T.mbarrier_arrive"),
                                              _count(cta_id, "T.mbarrier_arrive", "cta_id")])
        return
    _emit_call("mbarrier_arrive", [barrier_address(mbarrier, "T.mbarrier_arrive")])


def alloc_cluster_barrier(arrive_count):
    """``mbars = T.alloc_cluster_barrier([n])``: T.alloc_barrier's mbarriers, for arrivals from
    the other blocks of a cluster too (``T.mbarrier_arrive(mbars[i], cta_id)``). Their
    initialization is fenced for the cluster; the program meets the other blocks
    (T.cluster_sync) before any of them arrives."""
    return alloc_barrier(arrive_count)


def ptx_arrive_cluster_barrier(mbarrier, cta_id):
    """One arrival on the barrier at `mbarrier`'s place in block `cta_id` of the cluster."""
    mbarrier_arrive(mbarrier, cta_id)


def cp_async_barrier_noinc(mbarrier):
    """One arrival on `mbarrier` once the copies this thread issued with T.ptx_cp_async have
    landed (counted in the barrier's arrive count)."""
    _emit_call("mbarrier_cp_async_arrive", [barrier_address(mbarrier, "T.cp_async_barrier_noinc")])


def ptx_cp_async(dst, src, num_elems, predicate=None):
    """This thread's asynchronous copy of `num_elems` elements (of dst's type: 4, 8 or 16
    bytes in all, as upstream counts them) from global memory (`src`, T.access_ptr of a
    tensor element) into shared memory (`dst`, T.access_ptr of a tile element); with
    `predicate` false the destination is zero-filled instead. The program waits for it
    through an mbarrier (T.cp_async_barrier_noinc, then a wait). The CPU target copies at
    once."""
    from .extern import Address

    _b.require_kernel("T.ptx_cp_async")
    for what, ptr in (("dst", dst), ("src", src)):
        if not isinstance(ptr, PrimExpr) or ptr.node.dtype != "handle":
            raise _b._UserError(f"T.ptx_cp_async: {what} must be an address (T.access_ptr(...)), got {ptr!r}")
    if not isinstance(dst, Address):
        raise _b._UserError("T.ptx_cp_async: dst must be T.access_ptr(...) of a shared tile's element (its type "
                            "gives the bytes num_elems stands for)")
    elem_bits = dst.pointee.bits
    if not _is_int(num_elems) or num_elems <= 0 or (num_elems * elem_bits) % 8 \
            or (num_elems * elem_bits) // 8 not in (4, 8, 16):
        raise _b._UserError(f"T.ptx_cp_async: num_elems must be a constant whose bytes ({dst.pointee} elements) "
                            f"are 4, 8 or 16, got {num_elems!r}")
    nbytes = (num_elems * elem_bits) // 8
    args = [dst.node, src.node, _tl.const_int(nbytes, "int32")]
    if predicate is not None:
        args.append(as_expr(predicate).node)
    _emit_call("ptx_cp_async", args)


def mbarrier_expect_tx(mbarrier, tx):
    """Raises the bytes the current phase of `mbarrier` waits for by `tx` (no arrival)."""
    bar = barrier_address(mbarrier, "T.mbarrier_expect_tx")
    _emit_call("mbarrier_expect_tx", [bar, _count(tx, "T.mbarrier_expect_tx", "tx")])


def mbarrier_arrive_expect_tx(mbarrier, tx):
    """An arrival that also raises the bytes the phase waits for by `tx`."""
    bar = barrier_address(mbarrier, "T.mbarrier_arrive_expect_tx")
    _emit_call("mbarrier_arrive_expect_tx", [bar, _count(tx, "T.mbarrier_arrive_expect_tx", "tx")])


def barrier_wait(mbarrier, parity):
    """Upstream's shorter name of T.mbarrier_wait_parity (an mbarrier, not a named barrier)."""
    mbarrier_wait_parity(mbarrier, parity)


def barrier_arrive(mbarrier):
    """Upstream's shorter name of T.mbarrier_arrive."""
    mbarrier_arrive(mbarrier)


class WsSpec:
    """``with T.ws(i):``: the body runs on warpgroup i's threads only."""

    def __init__(self, groups, cond):
        self.groups = groups
        self.cond = cond

    def marker(self, span):
        return _tl.attr("tl.ws", [_tl.const_int(g, "int32") for g in self.groups], span)


def ws(*warp_group_idx):
    """``with T.ws(i):`` runs its body on the threads [128 i, 128 (i + 1)) of the block only;
    ``T.ws(0, 1)`` on both warpgroups' threads (the groups must be consecutive)."""
    from . import _launch, get_thread_binding

    _, _, threads = _launch("T.ws")
    groups = list(warp_group_idx)
    if len(groups) == 1 and isinstance(groups[0], (list, tuple)):
        groups = list(groups[0])
    if not groups or not all(_is_int(g) for g in groups):
        raise _b._UserError(f"T.ws: takes warpgroup numbers (ints), got {warp_group_idx!r}")
    if len(threads) > 1 and any(t > 1 for t in threads[1:]):
        raise _b._UserError("T.ws: the block's threads must be one-dimensional (threads=n)")
    groups = sorted(set(groups))
    n = threads[0]
    if n % WARPGROUP_THREADS:
        raise _b._UserError(f"T.ws: the block has {n} threads, not a multiple of a warpgroup's {WARPGROUP_THREADS}")
    if groups[0] < 0 or groups[-1] >= n // WARPGROUP_THREADS:
        raise _b._UserError(f"T.ws{tuple(groups)}: the block's {n} threads are warpgroups 0..{n // WARPGROUP_THREADS - 1}")
    if groups != list(range(groups[0], groups[-1] + 1)):
        raise _b._UserError(f"T.ws{tuple(groups)}: the warpgroups must be consecutive")
    if getattr(_b.current(), "in_ws", False):
        raise _b._UserError("T.ws blocks cannot be nested")
    tx = get_thread_binding(0)
    lo, hi = groups[0] * WARPGROUP_THREADS, (groups[-1] + 1) * WARPGROUP_THREADS
    cond = tx < hi if lo == 0 else (tx >= lo) & (tx < hi)
    return WsSpec(groups, cond)


def tma_copy(src, dst, *, barrier=None, cluster_mask=None, leader_scope_threads=None, eviction_policy=None,
             annotations=None):
    """A TMA load from a global tensor into a shared tile that completes its bytes on
    `barrier` (the caller waits on it with T.mbarrier_wait_parity): one thread issues it and
    the barrier's current phase expects its bytes (with `leader_scope_threads=n`, the first
    thread of each group of n issues the copy as that group's threads see it: per warp, its
    own rows and barrier). From shared memory to a global tensor it
    is a TMA store on sm_90 and newer (one thread issues it and waits until it has read the
    tile, so the tile may be reused after the next barrier; a store TMA cannot do is stored
    by the threads, with a remark); elsewhere, and on the CPU, a plain copy."""
    _b.require_kernel("T.tma_copy")
    _hints("T.tma_copy", eviction_policy=eviction_policy, annotations=annotations)
    if cluster_mask is not None:
        raise _b._UserError("T.tma_copy(cluster_mask=...): clusters (TMA multicast) are not supported by this compiler")
    if leader_scope_threads is not None and (not _is_int(leader_scope_threads) or leader_scope_threads <= 0
                                             or leader_scope_threads % 32):
        raise _b._UserError(f"T.tma_copy: leader_scope_threads must be a positive multiple of 32, "
                            f"got {leader_scope_threads!r}")
    src_region = to_region(src, "T.tma_copy source")
    dst_region = to_region(dst, "T.tma_copy destination")
    src_scope, dst_scope = _scope(src), _scope(dst)
    span = _b.current_span()
    if src_scope == "global" and dst_scope == "shared":
        if barrier is None:
            raise _b._UserError("T.tma_copy: a load into shared memory needs barrier= (an mbarrier from "
                                "T.alloc_barrier, waited on with T.mbarrier_wait_parity)")
        # (the leader scope: one thread of each group of that many issues its own copy; 0:
        # one thread of the block, or of the producer warpgroup)
        scope = _tl.const_int(leader_scope_threads or 0, "int32")
        _b.emit(_tl.attr("tl.tma_copy", [barrier_address(barrier, "T.tma_copy"), scope], span))
    elif src_scope == "shared" and dst_scope == "global":
        if barrier is not None:
            raise _b._UserError("T.tma_copy: a store to a global tensor takes no barrier=")
        _b.emit(_tl.attr("tl.tma_store", [], span))
    else:
        raise _b._UserError(f"T.tma_copy copies global -> shared (a load) or shared -> global (a store), "
                            f"got {src_scope} -> {dst_scope}")
    _b.emit(_tl.copy(src_region, dst_region, span))


def _scope(x):
    buf = x.buffer if isinstance(x, BufferRef) else x
    if not isinstance(buf, Buffer):
        raise _b._UserError(f"T.tma_copy: operands are tensors, tiles or their regions, got {x!r}")
    return buf.scope


def shuffle_elect(thread_extent):
    """True on one thread of each group of `thread_extent` consecutive threads (0: one
    thread of the block): the group's first, which is the lane elect.sync picks when the
    whole warp is active."""
    from . import get_thread_binding

    if not _is_int(thread_extent) or thread_extent < 0:
        raise _b._UserError(f"T.shuffle_elect: thread_extent must be a non-negative int, got {thread_extent!r}")
    tx = get_thread_binding(0)
    return tx == 0 if thread_extent == 0 else tx % thread_extent == 0


def fence_proxy_async():
    """fence.proxy.async: orders this thread's generic-proxy shared-memory accesses before
    later asynchronous-proxy ones (TMA, wgmma)."""
    _b.require_kernel("T.fence_proxy_async")
    _emit_call("fence_proxy_async", [])


def _noted(what, why):
    from . import _remark

    _b.require_kernel(what)
    _remark(f"{what}: {why}")


def tma_store_arrive():
    """cp.async.bulk.commit_group: closes this thread's outstanding TMA stores into a group.
    The stores T.copy and T.tma_copy make are already committed (and their reads of the tile
    waited for) by the thread that issues them."""
    _b.require_kernel("T.tma_store_arrive")
    _emit_call("tma_store_arrive", [])


def tma_store_wait(count=0, read=True):
    """cp.async.bulk.wait_group(.read) count: waits until at most `count` of this thread's
    TMA store groups are outstanding (read=True: until they have read shared memory)."""
    _b.require_kernel("T.tma_store_wait")
    if not _is_int(count) or count < 0:
        raise _b._UserError(f"T.tma_store_wait: count must be a non-negative int, got {count!r}")
    _emit_call("tma_store_wait", [_tl.const_int(count, "int32"), _tl.const_int(1 if read else 0, "bool")])


def ptx_commit_group():
    """cp.async.commit_group: closes this thread's T.ptx_cp_async copies issued since the last
    commit into a group (T.ptx_wait_group waits for groups). The block's other threads see
    the copied data after the wait; the compiler puts the barrier between the wait and their
    reads. T.Parallel(..., prefer_async=True) element copies made cp.async join the group
    (those left synchronous, with a remark, have landed already). Nothing on the CPU, whose
    copies land at once.
    Not inside a T.Pipelined loop that the compiler stages with cp.async groups of its own."""
    _b.require_kernel("T.ptx_commit_group")
    _emit_call("ptx_commit_group", [])


def ptx_wait_group(count=0):
    """cp.async.wait_group(count): waits until at most `count` of this thread's committed
    groups are still in flight (see ptx_commit_group)."""
    _b.require_kernel("T.ptx_wait_group")
    if not _is_int(count) or isinstance(count, bool) or count < 0:
        raise _b._UserError(f"T.ptx_wait_group: count must be a non-negative int, got {count!r}")
    _emit_call("ptx_wait_group", [_tl.const_int(int(count), "int32")])


def wait_wgmma(id):  # noqa: A002 - upstream's name
    """Waits until at most `id` groups of the wgmma instructions T.wgmma_gemm issued are still
    in flight (0: all done); the accumulators of those GEMMs are complete from here on.
    T.gemm waits for its own wgmmas, so only T.wgmma_gemm needs it. A no-op on the CPU."""
    _b.require_kernel("T.wait_wgmma")
    if not _is_int(id) or isinstance(id, bool) or id < 0:
        raise _b._UserError(f"T.wait_wgmma: the count of groups left in flight must be a non-negative int, got {id!r}")
    _emit_call("wait_wgmma", [_tl.const_int(int(id), "int32")])


def annotate_producer_reg_dealloc(reg_count=24):
    """Upstream: the producer warpgroup's setmaxnreg. Accepted, not applied (noted)."""
    _noted(f"T.annotate_producer_reg_dealloc({reg_count})", "accepted, not applied")


def annotate_consumer_reg_alloc(reg_count=240):
    """Upstream: the consumer warpgroups' setmaxnreg. Accepted, not applied (noted)."""
    _noted(f"T.annotate_consumer_reg_alloc({reg_count})", "accepted, not applied")


def no_set_max_nreg():
    """Upstream: no register reallocation between warpgroups (noted; none is done for
    kernels that program their barriers)."""
    _noted("T.no_set_max_nreg()", "accepted")
