"""Bit-level values and explicit global loads and stores (upstream's names): T.reinterpret,
T.ldg32 / T.stg32 (32 bits at an element's address, optionally predicated), T.lds32 / T.sts32
(the same in shared memory) and T.__ldg (a load through the read-only data cache). On CUDA
they are tl::bit_cast, tl::load_global_32, tl::store_global_32, tl::load_shared_32,
tl::store_shared_32 and __ldg; the CPU target does the same loads and stores plainly.

The 64-, 128- and 256-bit forms (T.ldg64, T.stg128, ...) give vector values (uint32x2, ...),
which this compiler's IR does not have: they are errors at the user's line."""
from __future__ import annotations

from .. import _tl
from . import builder as _b
from .dtypes import _NAMES, canonical, dtype
from .values import Buffer, BufferRef, PrimExpr, as_expr

# bytes of each dtype kernels compute with (scalars only: no vector types here)
_BYTES = {n: dtype(n).bits // 8 for n in _NAMES}


def reinterpret(value, dtype, span=None):
    """The bits of `value` read as `dtype` (same width; e.g. float32 <-> uint32)."""
    if isinstance(dtype, str) and dtype == "handle":
        # Upstream's one use: the (ignored) value of T.attr(..., "reduce_scope", ...) around
        # T.tvm_thread_allreduce. Pointer values have no other use in this IR.
        from .allreduce import ScopeHandle

        return ScopeHandle()
    to = canonical(dtype)
    v = as_expr(value)
    frm = str(v.dtype)
    if to not in _BYTES or frm not in _BYTES:
        raise _b._UserError(f"T.reinterpret: {frm} -> {to} is not supported (scalar types only; vector types such "
                            f"as float32x2 are not available in this compiler)")
    if _BYTES[to] != _BYTES[frm]:
        raise _b._UserError(f"T.reinterpret: {frm} ({_BYTES[frm]} bytes) and {to} ({_BYTES[to]} bytes) differ in "
                            "width; reinterpretation keeps the bits, so both must have the same size")
    if to == frm:
        return v
    return PrimExpr(_tl.call(to, "reinterpret", [v.node]))


def _first_element(src, what):
    """The first element of `src` (an element, a slice or a whole buffer) as a BufferRef."""
    if isinstance(src, Buffer):
        return src[tuple(0 for _ in src.shape)]
    if isinstance(src, BufferRef):
        if src.is_point:
            return src
        items = [it.start if isinstance(it, slice) and it.start is not None else 0 if isinstance(it, slice) else it
                 for it in src.items]
        return src.buffer[tuple(items)]
    raise _b._UserError(f"{what} takes an element, a slice or a buffer, got {src!r}")


def _address(ref, what, width):
    nbytes = _BYTES.get(str(ref.dtype))
    if nbytes is None or nbytes > width:
        raise _b._UserError(f"{what}: elements of {ref.dtype} do not fit in {width} bytes")
    return _tl.call("handle", "address_of", [ref.load().node])


def ldg32(src, pred=None):
    """The 32 bits (uint32) at the address of `src`'s first element; 0 where `pred` is false."""
    _b.require_kernel("T.ldg32")
    address = _address(_first_element(src, "T.ldg32"), "T.ldg32", 4)
    if pred is None:
        return PrimExpr(_tl.call("uint32", "load_global_32", [address]))
    return PrimExpr(_tl.call("uint32", "load_global_32_conditional", [address, as_expr(pred, "bool").node]))


def stg32(dst, value, pred=None):
    """Stores the 32-bit `value` at the address of `dst`'s first element (skipped where `pred`
    is false). A value of another 32-bit type keeps its bits."""
    _b.require_kernel("T.stg32")
    address = _address(_first_element(dst, "T.stg32"), "T.stg32", 4)
    v = as_expr(value)
    if _BYTES.get(str(v.dtype)) != 4:
        raise _b._UserError(f"T.stg32 stores 32 bits; the value is {v.dtype}")
    if str(v.dtype) != "uint32":
        v = reinterpret(v, "uint32")
    args = [address, v.node] + ([] if pred is None else [as_expr(pred, "bool").node])
    name = "store_global_32" if pred is None else "store_global_32_conditional"
    _b.emit(_tl.evaluate(_tl.call("void", name, args), _b.current_span()))


def _require_shared(ref, what):
    if ref.buffer.scope not in ("shared", "shared.dyn"):
        raise _b._UserError(f"{what} accesses shared memory; {ref.buffer.name} is in {ref.buffer.scope}")


def lds32(src):
    """The 32 bits (uint32) at the address of `src`'s first element, in shared memory."""
    _b.require_kernel("T.lds32")
    ref = _first_element(src, "T.lds32")
    _require_shared(ref, "T.lds32")
    return PrimExpr(_tl.call("uint32", "load_shared_32", [_address(ref, "T.lds32", 4)]))


def sts32(dst, value):
    """Stores the 32-bit `value` at the address of `dst`'s first element, in shared memory
    (a value of another 32-bit type keeps its bits)."""
    _b.require_kernel("T.sts32")
    ref = _first_element(dst, "T.sts32")
    _require_shared(ref, "T.sts32")
    v = as_expr(value)
    if _BYTES.get(str(v.dtype)) != 4:
        raise _b._UserError(f"T.sts32 stores 32 bits; the value is {v.dtype}")
    if str(v.dtype) != "uint32":
        v = reinterpret(v, "uint32")
    _b.emit(_tl.evaluate(_tl.call("void", "store_shared_32", [_address(ref, "T.sts32", 4), v.node]),
                         _b.current_span()))


def __ldg(load_or_buf, index=None):
    """A load through the read-only data cache on CUDA (a plain load elsewhere)."""
    if isinstance(load_or_buf, Buffer):
        if index is None:
            raise _b._UserError("T.__ldg(buffer, index) needs an index when given a buffer")
        idx = tuple(index) if isinstance(index, (list, tuple)) else (index,)
        load_or_buf = load_or_buf[idx]
    if not isinstance(load_or_buf, BufferRef) or not load_or_buf.is_point:
        raise _b._UserError(f"T.__ldg takes one element of a buffer (e.g. x[i]), got {load_or_buf!r}")
    return PrimExpr(_tl.call(str(load_or_buf.dtype), "ldg", [load_or_buf.load().node]))


def _vector_form(name, bits):
    def refuse(*args, **kwargs):
        raise _b._UserError(f"T.{name} moves {bits} bits as a vector value (uint32x{bits // 32}); vector dtypes are "
                            "not available in this compiler: use T.copy (it vectorizes 16-byte accesses) or T.ldg32 "
                            "/ T.stg32")

    refuse.__name__ = name
    return refuse


ldg64, ldg128, ldg256 = (_vector_form(f"ldg{b}", b) for b in (64, 128, 256))
stg64, stg128, stg256 = (_vector_form(f"stg{b}", b) for b in (64, 128, 256))
lds64, lds128 = (_vector_form(f"lds{b}", b) for b in (64, 128))
sts64, sts128 = (_vector_form(f"sts{b}", b) for b in (64, 128))
