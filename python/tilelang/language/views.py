"""T.reshape and T.view: a second buffer over the storage of another, row-major, with the
same element count (or, with another dtype, the same bits). Reads and writes through the view reach the original; tile
ops on a view run as element loops (the compiler's lower-buffer-views pass)."""
from __future__ import annotations

import math
import numbers

from .. import _tl
from . import builder as _b
from .dtypes import dtype as _dtype
from .values import Buffer, PrimExpr, as_expr


def _static_count(shape):
    if all(isinstance(d, numbers.Integral) for d in shape):
        return math.prod(int(d) for d in shape)
    return None


def view(src, shape=None, dtype=None, strides=None):
    """`src` seen with another shape (T.view(A, (m, n))), or as another dtype of whole bytes
    (T.view(A, (m, 2 * n), dtype=T.bfloat16) of a float32 A): the same bits, row-major, as
    memory holds them. Views are dense; the element (or bit) counts must agree. Writes
    through a view of a narrower dtype are refused (each would change part of an element)."""
    _b.require_kernel("T.view")
    if not isinstance(src, Buffer):
        raise _b._UserError(f"T.view / T.reshape take a buffer, got {src!r}")
    if strides is not None:
        raise _b._UserError("T.view(strides=...) is not supported: views here are dense and row-major")
    new_dtype = str(src.dtype) if dtype is None else str(_dtype(dtype))
    if new_dtype != str(src.dtype):
        for t in (str(src.dtype), new_dtype):
            if _dtype(t).bits < 8 or t == "bool":
                raise _b._UserError(f"T.view of {src.name} as {new_dtype}: views that change the dtype take types "
                                    f"of whole bytes, got {t}")
    shape = list(src.shape) if shape is None else ([shape] if isinstance(shape, (numbers.Integral, PrimExpr))
                                                   else list(shape))
    have, want = _static_count(src.shape), _static_count(shape)
    if new_dtype != str(src.dtype):
        if have is None or want is None:
            raise _b._UserError(f"T.view of {src.name} as {new_dtype}: a view that changes the dtype needs static "
                                "shapes")
        have_bits, want_bits = have * _dtype(str(src.dtype)).bits, want * _dtype(new_dtype).bits
        if have_bits != want_bits:
            raise _b._UserError(f"T.view shape and dtype must preserve the logical bit count of {src.name!r}: "
                                f"{want_bits} bits != {have_bits} bits", kind=AssertionError)
    elif have is not None and want is not None and have != want:
        raise _b._UserError(f"T.reshape / T.view of {src.name}: shape {tuple(shape)} has {want} elements, "
                            f"{src.name} has {have} ({tuple(src.shape)})", kind=AssertionError)  # (upstream's kind)
    b = _b.current()
    name = b.pending_name or f"{src.name}_view"
    b.pending_name = None
    node = _tl.buffer(name, new_dtype, [as_expr(d, "int32").node for d in shape], src.scope)
    first = lambda buf: _tl.call("handle", "address_of", [_tl.load(buf, [_tl.const_int(0, "int32")] * len(buf.shape))])  # noqa: E731
    _b.emit(_tl.attr("tl.buffer_view", [first(node), first(src.node)], _b.current_span()))
    return Buffer(node)


def reshape(src, shape):
    """`src` with another shape over the same elements, row-major (T.reshape(A, [m, n]))."""
    return view(src, shape)


__all__ = ["reshape", "view"]
