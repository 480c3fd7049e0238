"""Tile operations upstream TileLang has that this front end writes as loop nests over the
tiles (so both targets compile them as ordinary T.Parallel / serial loops):
``T.transpose(src, dst)`` and ``T.cummax(src, dst=None, dim=0, reverse=False)``."""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder as _b
from .values import Buffer, PrimExpr, binary


def _static_shape(buf, what):
    if not isinstance(buf, Buffer):
        raise _b._UserError(f"{what} must be a whole tile (a buffer), got {type(buf).__name__}")
    shape = list(buf.shape)
    if not all(isinstance(d, numbers.Integral) for d in shape):
        raise _b._UserError(f"{what} {buf.name}: a tile with a static shape is needed, got {shape}")
    return shape


def _nest(extents, kinds, body_fn, prefix="i"):
    """Emits `for v0 in kind0(e0): for v1 ...: body_fn([v0, v1, ...])`."""
    span = _b.current_span()
    vars_ = [_tl.var(f"{prefix}{k}", "int32") for k in range(len(extents))]
    b = _b.current()
    b.open()
    body_fn([PrimExpr(v) for v in vars_])
    body = b.close(span)
    for k in reversed(range(len(extents))):
        body = _tl.for_(vars_[k], _tl.const_int(0, "int32"), _tl.const_int(int(extents[k]), "int32"), kinds[k], body,
                        {}, span)
    _b.emit(body)


def _store(buf, idx, value):
    from .values import as_expr

    _b.emit(_tl.store(buf.node, [as_expr(i, "int32").node for i in idx], as_expr(value, buf.dtype).node,
                      _b.current_span()))


def transpose(src, dst, annotations=None):
    """dst[..., j, i] = src[..., i, j] for tiles of shapes (..., M, N) and (..., N, M)."""
    _b.require_kernel("T.transpose")
    s, d = _static_shape(src, "T.transpose source"), _static_shape(dst, "T.transpose destination")
    if len(s) < 2 or len(s) != len(d) or s[:-2] != d[:-2] or (s[-2], s[-1]) != (d[-1], d[-2]):
        raise _b._UserError(f"T.transpose: the destination's shape must be the source's with its last two "
                            f"dimensions swapped: source {src.name} is {s}, destination {dst.name} is {d}")

    def body(v):
        lead = v[:-2]
        _store(dst, lead + [v[-1], v[-2]], src[tuple(lead + [v[-2], v[-1]])].load())

    _nest(s, ["parallel"] * len(s), body)


def cummax(src, dst=None, dim=0, reverse=False, annotations=None):
    """Inclusive running maximum of a tile along `dim` into `dst` (in place when dst is None);
    `reverse` runs from the last element to the first."""
    _b.require_kernel("T.cummax")
    shape = _static_shape(src, "T.cummax source")
    if dst is None:
        dst = src
    if _static_shape(dst, "T.cummax destination") != shape:
        raise _b._UserError(f"T.cummax: source {src.name} is {shape} but destination {dst.name} is {list(dst.shape)}")
    nd = len(shape)
    if not isinstance(dim, numbers.Integral) or not -nd <= dim < nd:
        raise _b._UserError(f"T.cummax: dim must be an int in [{-nd}, {nd}), got {dim!r}")
    dim = int(dim) % nd
    n = shape[dim]
    others = [k for k in range(nd) if k != dim]

    def at(v, pos):
        idx = [None] * nd
        for k, var in zip(others, v):
            idx[k] = var
        idx[dim] = pos
        return idx

    def body(v):
        first = n - 1 if reverse else 0
        _store(dst, at(v, first), src[tuple(at(v, first))].load())

        def step(w):
            pos = (n - 1 - (w[0] + 1)) if reverse else (w[0] + 1)
            prev = (pos + 1) if reverse else (pos - 1)
            _store(dst, at(v, pos), binary("max", dst[tuple(at(v, prev))].load(), src[tuple(at(v, pos))].load()))

        if n > 1:
            _nest([n - 1], ["serial"], step, prefix="s")

    if others:
        _nest([shape[k] for k in others], ["parallel"] * len(others), body)
    else:
        body([])
