"""Warp votes, block votes and bit scans (upstream's names): T.any_sync, T.all_sync,
T.ballot_sync, T.ballot, T.activemask, T.match_any_sync, T.match_all_sync,
T.syncthreads_count / _and / _or, T.__ffs, T.__fns. On CUDA they are the hardware's; the
CPU target computes them over the block's threads run in lockstep."""
from __future__ import annotations

from .. import _tl
from .values import PrimExpr, as_expr, cast

_FULL_WARP_MASK = 0xFFFFFFFF


def _predicate(p, what):
    e = as_expr(p, "int32")
    dt = str(e.dtype)
    if dt.startswith("float") or dt == "bfloat16":
        raise TypeError(f"T.{what} requires an integer or boolean predicate, got a {dt} value")
    return cast(e, "int32") if dt != "int32" else e


def _mask(mask):
    return as_expr(mask, "uint32").node if not isinstance(mask, int) else _tl.const_int(mask & 0xFFFFFFFF, "uint32")


def _vote(dtype, name, *args):
    return PrimExpr(_tl.call(dtype, name, list(args)))


def any_sync(predicate, mask=_FULL_WARP_MASK):
    """Non-zero (int32) when the predicate is non-zero on any lane of `mask`."""
    return _vote("int32", "vote_any_sync", _mask(mask), _predicate(predicate, "any_sync").node)


def all_sync(predicate, mask=_FULL_WARP_MASK):
    """Non-zero (int32) when the predicate is non-zero on every lane of `mask`."""
    return _vote("int32", "vote_all_sync", _mask(mask), _predicate(predicate, "all_sync").node)


def ballot_sync(predicate, mask=_FULL_WARP_MASK):
    """uint64 with bit n set when lane n of `mask` has a non-zero predicate."""
    return _vote("uint64", "vote_ballot_sync", _mask(mask), _predicate(predicate, "ballot_sync").node)


def ballot(predicate):
    """ballot_sync over the whole warp."""
    return _vote("uint64", "vote_ballot_sync", _mask(_FULL_WARP_MASK), _predicate(predicate, "ballot").node)


def activemask():
    """uint64 with a bit per lane of the warp that reaches this point."""
    return _vote("uint64", "vote_activemask")


def match_any_sync(value, mask=_FULL_WARP_MASK):
    """uint32: the lanes of `mask` whose value equals this lane's."""
    return _vote("uint32", "vote_match_any_sync", _mask(mask), as_expr(value, "int32").node)


def match_all_sync(value, mask=_FULL_WARP_MASK):
    """uint32: `mask` when every lane of it holds the same value, else 0."""
    return _vote("uint32", "vote_match_all_sync", _mask(mask), as_expr(value, "int32").node)


def syncthreads_count(predicate):
    """A block barrier that returns (int32) how many threads have a non-zero predicate."""
    return _vote("int32", "syncthreads_count", _predicate(predicate, "syncthreads_count").node)


def syncthreads_and(predicate):
    """A block barrier that returns non-zero when every thread's predicate is non-zero."""
    return _vote("int32", "syncthreads_and", _predicate(predicate, "syncthreads_and").node)


def syncthreads_or(predicate):
    """A block barrier that returns non-zero when any thread's predicate is non-zero."""
    return _vote("int32", "syncthreads_or", _predicate(predicate, "syncthreads_or").node)


def __ffs(value):  # noqa: N802 - upstream's name
    """1 + the index of the lowest set bit of an integer, 0 for 0 (int32)."""
    return PrimExpr(_tl.call("int32", "ffs", [as_expr(value, "int32").node]))


def __fns(mask, base, offset):  # noqa: N802 - upstream's name
    """The position of the offset-th set bit of mask from base (CUDA's __fns), uint32."""
    return PrimExpr(_tl.call("uint32", "fns", [as_expr(mask, "uint32").node, as_expr(base, "uint32").node,
                                               as_expr(offset, "int32").node]))


__all__ = ["any_sync", "all_sync", "ballot_sync", "ballot", "activemask", "match_any_sync", "match_all_sync",
           "syncthreads_count", "syncthreads_and", "syncthreads_or", "__ffs", "__fns"]
