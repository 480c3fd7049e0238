"""Tile operations upstream TileLang has that this front end writes as loop nests over the
tiles (so both targets compile them as ordinary T.Parallel / serial loops):
``T.transpose(src, dst)`` and ``T.cummax(src, dst=None, dim=0, reverse=False)``."""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder as _b
from .hints import not_applied as _hints
from .values import Buffer, BufferRef, PrimExpr, as_expr, binary


class _Tile:
    """A whole buffer or a region of one (``A[0:2, 0:4, k]``: a point index is a dimension of
    extent 1) with compile-time extents."""

    def __init__(self, x, what):
        if isinstance(x, Buffer):
            x = x[tuple(slice(None) for _ in x.shape)]
        if not isinstance(x, BufferRef):
            raise _b._UserError(f"{what} must be a tile or a region of one, got {type(x).__name__}")
        self.buffer, self.starts, self.extents = x.buffer, [], []
        for dim, it in enumerate(x.items):
            if isinstance(it, slice):
                start = 0 if it.start is None else it.start
                stop = x.buffer.shape[dim] if it.stop is None else it.stop
                ext = _tl.simplify(as_expr(stop - start, "int32").node).const_value
            else:
                start, ext = it, 1
            if not isinstance(ext, int):
                raise _b._UserError(f"{what} {x.buffer.name}: the extent of dimension {dim} must be known at "
                                    f"compile time")
            self.starts.append(start)
            self.extents.append(ext)

    @property
    def name(self):
        return self.buffer.name

    def index(self, local):
        return [s + i for s, i in zip(self.starts, local)]

    def load(self, local):
        return self.buffer[tuple(self.index(local))].load()

    def store(self, local, value):
        idx = self.index(local)
        stmt = _tl.store(self.buffer.node, [as_expr(i, "int32").node for i in idx],
                         as_expr(value, self.buffer.dtype).node, _b.current_span())
        # Elements of a region that reach past the buffer's end (at compile time) are dropped.
        conds = [binary("lt", as_expr(i, "int32"), as_expr(d, "int32")) for i, s, e, d in
                 zip(idx, self.starts, self.extents, self.buffer.shape)
                 if isinstance(s, numbers.Integral) and isinstance(d, numbers.Integral) and s + e > d]
        if conds:
            c = conds[0]
            for more in conds[1:]:
                c = binary("and", c, more)
            stmt = _tl.if_(c.node, stmt, None, _b.current_span())
        _b.emit(stmt)


def _nest(extents, kinds, body_fn, prefix="i", annotations=None):
    """Emits `for v0 in kind0(e0): for v1 ...: body_fn([v0, v1, ...])`; `annotations` go on
    the outermost loop."""
    span = _b.current_span()
    vars_ = [_tl.var(f"{prefix}{k}", "int32") for k in range(len(extents))]
    b = _b.current()
    b.open()
    body_fn([PrimExpr(v) for v in vars_])
    body = b.close(span)
    for k in reversed(range(len(extents))):
        body = _tl.for_(vars_[k], _tl.const_int(0, "int32"), _tl.const_int(int(extents[k]), "int32"), kinds[k], body,
                        (annotations or {}) if k == 0 else {}, span)
    _b.emit(body)


def transpose(src, dst, annotations=None):
    """dst[..., j, i] = src[..., i, j] for tiles (or regions) of extents (..., M, N) and (..., N, M)."""
    _b.require_kernel("T.transpose")
    _hints("T.transpose", annotations=annotations)
    S, D = _Tile(src, "T.transpose source"), _Tile(dst, "T.transpose destination")
    s, d = S.extents, D.extents
    if len(s) < 2 or len(s) != len(d) or s[:-2] != d[:-2] or (s[-2], s[-1]) != (d[-1], d[-2]):
        raise _b._UserError(f"T.transpose: the destination's shape must be the source's with its last two "
                            f"dimensions swapped: source {S.name} is {s}, destination {D.name} is {d}")

    def body(v):
        lead = v[:-2]
        D.store(lead + [v[-1], v[-2]], S.load(lead + [v[-2], v[-1]]))

    _nest(s, ["parallel"] * len(s), body)


def cummax(src, dst=None, dim=0, reverse=False, annotations=None):
    """Inclusive running maximum of a tile along `dim` into `dst` (in place when dst is None);
    `reverse` runs from the last element to the first."""
    _b.require_kernel("T.cummax")
    _hints("T.cummax", annotations=annotations)
    S = _Tile(src, "T.cummax source")
    D = S if dst is None else _Tile(dst, "T.cummax destination")
    shape = S.extents
    if D.extents != shape:
        raise _b._UserError(f"T.cummax: source {S.name} is {shape} but destination {D.name} is {D.extents}")
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
        D.store(at(v, first), S.load(at(v, first)))

        def step(w):
            pos = (n - 1 - (w[0] + 1)) if reverse else (w[0] + 1)
            prev = (pos + 1) if reverse else (pos - 1)
            D.store(at(v, pos), binary("max", D.load(at(v, prev)), S.load(at(v, pos))))

        if n > 1:
            _nest([n - 1], ["serial"], step, prefix="s")

    if others:
        _nest([shape[k] for k in others], ["parallel"] * len(others), body)
    else:
        body([])


def _reduce_loop(kind, src, dst, dim, clear):
    what = f"T.reduce_{kind}"
    _b.require_kernel(what)
    S, D = _Tile(src, f"{what} source"), _Tile(dst, f"{what} destination")
    if not str(S.buffer.dtype).startswith(("int", "uint")):
        raise _b._UserError(f"{what} takes an integer tile, got {S.name} of {S.buffer.dtype}")
    nd = len(S.extents)
    if not isinstance(dim, numbers.Integral) or not -nd <= dim < nd:
        raise _b._UserError(f"{what}: dim must be an int in [{-nd}, {nd}), got {dim!r}")
    dim = int(dim) % nd
    others = [k for k in range(nd) if k != dim]
    out = [S.extents[k] for k in others]
    keep = list(S.extents[:dim]) + [1] + list(S.extents[dim + 1:])
    if D.extents not in (out, keep) and not (not out and D.extents == [1]):
        raise _b._UserError(f"{what}: the destination {D.name} must have the source's shape without dimension {dim} "
                            f"({out or [1]}), got {D.extents}")
    keepdim = D.extents == keep and D.extents != out
    n = S.extents[dim]

    def src_at(v, k):
        idx = [None] * nd
        for d, var in zip(others, v):
            idx[d] = var
        idx[dim] = k
        return idx

    def dst_at(v):
        if keepdim:
            idx = list(v[:dim]) + [0] + list(v[dim:])
            return idx
        return list(v) if v else [0]

    def body(v):
        first = S.load(src_at(v, 0))
        D.store(dst_at(v), first if clear else binary(kind, D.load(dst_at(v)), first))
        if n > 1:
            _nest([n - 1], ["serial"], lambda w: D.store(dst_at(v), binary(kind, D.load(dst_at(v)),
                                                                           S.load(src_at(v, w[0] + 1)))), prefix="r")

    if out:
        _nest(out, ["parallel"] * len(out), body)
    else:
        body([])


def reduce_bitand(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """out = bitwise and of `buffer` along `dim` (integer tiles)."""
    _hints("T.reduce_bitand", batch=None if batch == 1 else batch, annotations=annotations)
    _reduce_loop("bitand", buffer, out, dim, clear)


def reduce_bitor(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """out = bitwise or of `buffer` along `dim` (integer tiles)."""
    _hints("T.reduce_bitor", batch=None if batch == 1 else batch, annotations=annotations)
    _reduce_loop("bitor", buffer, out, dim, clear)


def reduce_bitxor(buffer, out, dim=-1, clear=True, batch=1, annotations=None):
    """out = bitwise xor of `buffer` along `dim` (integer tiles)."""
    _hints("T.reduce_bitxor", batch=None if batch == 1 else batch, annotations=annotations)
    _reduce_loop("bitxor", buffer, out, dim, clear)


def im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad, eviction_policy=None, annotations=None):
    """The (block_M, block_K) tile `col` of the im2col matrix of an NHWC image `img` for a
    square `kernel` x `kernel` convolution: row m = nhw_step * block_M + i is output pixel
    (n, oh, ow) of the flattened N x OH x OW, column k = c_step * block_K + j is kernel tap
    (kh, kw) and input channel c of the flattened KH x KW x C; taps that fall in the padding
    read 0. Lowered as a T.Parallel nest (both targets); the nest's outer loop carries the
    parameters ("tl.im2col.*" annotations), so that on sm_90a a warp-specialized pipeline
    loads the tile with one TMA im2col box instead (cuda-warp-specialize decides)."""
    from . import if_then_else

    _b.require_kernel("T.im2col")
    _hints("T.im2col", eviction_policy=eviction_policy, annotations=annotations)
    if not isinstance(img, Buffer) or len(img.shape) != 4:
        raise _b._UserError("T.im2col: img must be a 4-D NHWC tensor")
    C = _Tile(col, "T.im2col destination")
    if str(C.buffer.dtype) != str(img.dtype):
        raise _b._UserError(f"T.im2col: img is {img.dtype} but col {C.name} is {C.buffer.dtype}; they must match")
    for name, v in (("kernel", kernel), ("stride", stride), ("dilation", dilation), ("pad", pad)):
        if not isinstance(v, numbers.Integral) or v < 0 or (name != "pad" and v == 0):
            raise _b._UserError(f"T.im2col: {name} must be a positive int (pad: >= 0), got {v!r}")
    block_m, block_k = C.extents[-2], C.extents[-1]
    _, h, w, c = img.shape
    out_h = (h + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1
    out_w = (w + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1
    lead = [0] * (len(C.extents) - 2)

    def body(v):
        i, j = v
        m = nhw_step * block_m + i
        k = c_step * block_k + j
        row = (m % (out_h * out_w)) // out_w * stride + k // (kernel * c) * dilation - pad
        colw = m % out_w * stride + (k // c) % kernel * dilation - pad
        inside = binary("and", binary("and", binary("ge", as_expr(row, "int32"), as_expr(0, "int32")),
                                      binary("ge", as_expr(colw, "int32"), as_expr(0, "int32"))),
                        binary("and", binary("lt", as_expr(row, "int32"), as_expr(h, "int32")),
                               binary("lt", as_expr(colw, "int32"), as_expr(w, "int32"))))
        value = img[m // (out_h * out_w), row, colw, k % c].load()
        C.store(lead + [i, j], if_then_else(inside, value, 0))

    ann = {"tl.im2col.image": _tl.call("handle", "address_of", [img[(0,) * 4].load().node])}
    for name, v in (("nhw_step", nhw_step), ("c_step", c_step), ("kernel", kernel), ("stride", stride),
                    ("dilation", dilation), ("pad", pad)):
        ann["tl.im2col." + name] = as_expr(v, "int32").node
    _nest([block_m, block_k], ["parallel", "parallel"], body, annotations=ann)


c2d_im2col = im2col
