"""T.reshape and T.view: a second buffer over the storage of another, row-major, with the
same dtype and element count. Reads and writes through the view reach the original; tile
ops on a view run as element loops (the compiler's lower-buffer-views pass)."""
from __future__ import annotations

import math
import numbers

from .. import _tl
from . import builder as _b
from .values import Buffer, PrimExpr, as_expr


def _static_count(shape):
    if all(isinstance(d, numbers.Integral) for d in shape):
        return math.prod(int(d) for d in shape)
    return None


def view(src, shape=None, dtype=None, strides=None):
    """`src` seen with another shape (T.view(A, (m, n))). Only the same dtype and a dense
    row-major view are supported; the element counts must agree."""
    _b.require_kernel("T.view")
    if not isinstance(src, Buffer):
        raise _b._UserError(f"T.view / T.reshape take a buffer, got {src!r}")
    if strides is not None:
        raise _b._UserError("T.view(strides=...) is not supported: views here are dense and row-major")
    if dtype is not None and str(dtype) != str(src.dtype):
        raise _b._UserError(f"T.view of {src.name} as {dtype}: reinterpreting a buffer as another dtype is not "
                            f"supported; only its shape can change (it is {src.dtype})")
    shape = list(src.shape) if shape is None else ([shape] if isinstance(shape, (numbers.Integral, PrimExpr))
                                                   else list(shape))
    have, want = _static_count(src.shape), _static_count(shape)
    if have is not None and want is not None and have != want:
        raise _b._UserError(f"T.reshape / T.view of {src.name}: shape {tuple(shape)} has {want} elements, "
                            f"{src.name} has {have} ({tuple(src.shape)})", kind=AssertionError)  # (upstream's kind)
    b = _b.current()
    name = b.pending_name or f"{src.name}_view"
    b.pending_name = None
    node = _tl.buffer(name, str(src.dtype), [as_expr(d, "int32").node for d in shape], src.scope)
    first = lambda buf: _tl.call("handle", "address_of", [_tl.load(buf, [_tl.const_int(0, "int32")] * len(buf.shape))])  # noqa: E731
    _b.emit(_tl.attr("tl.buffer_view", [first(node), first(src.node)], _b.current_span()))
    return Buffer(node)


def reshape(src, shape):
    """`src` with another shape over the same elements, row-major (T.reshape(A, [m, n]))."""
    return view(src, shape)


__all__ = ["reshape", "view"]
