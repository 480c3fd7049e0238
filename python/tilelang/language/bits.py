"""Bit-level values and explicit global loads and stores (upstream's names): T.reinterpret,
T.ldg32 / T.stg32 (32 bits at an element's address, optionally predicated), T.lds32 / T.sts32
(the same in shared memory) and T.__ldg (a load through the read-only data cache). On CUDA
they are tl::bit_cast, tl::load_global_32, tl::store_global_32, tl::load_shared_32,
tl::store_shared_32 and __ldg; the CPU target does the same loads and stores plainly.

The 64- and 128-bit forms (T.ldg64, T.stg128, T.lds64, T.sts128, ...) move vector values
(uint32x2, uint32x4). The IR has scalar types only, so such a value lives in a small register
array of 32-bit words (VectorValue): the load fills it with one vector access, a store writes
it with one, T.reinterpret(v, T.float32x2) reads its words as other lanes, and
`Y[i:i + 2] = v` stores the lanes one by one. The 256-bit forms need sm_100 (not supported)."""
from __future__ import annotations

from .. import _tl
from . import builder as _b
from .dtypes import _NAMES, _split_lanes, canonical, dtype
from .values import Buffer, BufferRef, LaneValues, PrimExpr, as_expr

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
    if isinstance(value, VectorValue):
        return value.viewed_as(to)
    if _split_lanes(to)[1] > 1:
        raise _b._UserError(f"T.reinterpret to the vector type {to} takes a vector value (T.ldg64, T.lds128, ...)")
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
    if isinstance(value, LaneValues):
        raise _b._UserError(f"T.stg32 stores 32 bits; the value is a vector value ({value!r}): use the "
                            f"store of its width (T.stg64, T.sts128, ...)")
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
    if isinstance(value, LaneValues):
        raise _b._UserError(f"T.sts32 stores 32 bits; the value is a vector value ({value!r}): use the "
                            f"store of its width (T.stg64, T.sts128, ...)")
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


class VectorValue(LaneValues):
    """A 64- or 128-bit value (T.ldg64, T.lds128, ...): `words`, a register array of 32-bit
    words, read as `count` lanes of `lane_dtype` (uint32 as loaded; T.reinterpret gives other
    views of the same bits). Its lanes, in order, are what `Y[i:i + n] = v` stores."""

    __slots__ = ("words", "lane_dtype", "count")

    def __init__(self, words, lane_dtype, count):
        self.words, self.lane_dtype, self.count = words, lane_dtype, count
        super().__init__([self._lane(k) for k in range(count)])

    @property
    def bits(self):
        return self.count * _BYTES[self.lane_dtype] * 8

    def __repr__(self):
        return f"<{self.lane_dtype}x{self.count} vector value>"

    def viewed_as(self, to):
        base, lanes = _split_lanes(to)
        if lanes == 1 or base not in _BYTES or lanes * _BYTES[base] * 8 != self.bits:
            raise _b._UserError(f"T.reinterpret: a {self.bits}-bit vector value ({self.lane_dtype}x{self.count}) "
                                f"cannot be read as {to} (same width needed, e.g. float32x{self.bits // 32})")
        return VectorValue(self.words, base, lanes)

    def _lane(self, k):
        bits = _BYTES[self.lane_dtype] * 8
        if bits == 32:
            return reinterpret(self.words[k], self.lane_dtype)
        if bits == 64:
            lo, hi = (PrimExpr(_tl.cast("uint64", self.words[2 * k + h].load().node)) for h in (0, 1))
            return reinterpret(lo | (hi << 32), self.lane_dtype)
        per_word = 32 // bits
        word = self.words[k // per_word].load()
        shifted = (word >> ((k % per_word) * bits)) & ((1 << bits) - 1)
        narrow = PrimExpr(_tl.cast(f"uint{bits}", shifted.node))
        return narrow if self.lane_dtype == f"uint{bits}" else reinterpret(narrow, self.lane_dtype)


def _vector_load(name, bits, src, pred=None, shared=False):
    """`bits` bits from the address of `src`'s first element into a new register array."""
    _b.require_kernel(f"T.{name}")
    ref = _first_element(src, f"T.{name}")
    if shared:
        _require_shared(ref, f"T.{name}")
    _check_extent(src, bits, name)
    from . import alloc_local

    words = alloc_local((bits // 32,), "uint32")
    args = [_tl.call("handle", "address_of", [words[0].load().node]), _address(ref, f"T.{name}", bits // 8)]
    call = f"load_{'shared' if shared else 'global'}_{bits}"
    if pred is not None:
        call += "_conditional"
        args.append(as_expr(pred, "bool").node)
    _b.emit(_tl.evaluate(_tl.call("void", call, args), _b.current_span()))
    return VectorValue(words, "uint32", bits // 32)


def _vector_store(name, bits, dst, value, pred=None, shared=False):
    """Writes the `bits`-bit vector `value` at the address of `dst`'s first element."""
    _b.require_kernel(f"T.{name}")
    ref = _first_element(dst, f"T.{name}")
    if shared:
        _require_shared(ref, f"T.{name}")
    _check_extent(dst, bits, name)
    if not isinstance(value, VectorValue):
        raise _b._UserError(f"T.{name} stores a {bits}-bit vector value (from T.ldg{bits}, T.lds{bits}, ...), "
                            f"got {value!r}")
    if value.bits != bits:
        raise _b._UserError(f"T.{name} stores {bits} bits; the value has {value.bits}")
    args = [_address(ref, f"T.{name}", bits // 8), _tl.call("handle", "address_of", [value.words[0].load().node])]
    call = f"store_{'shared' if shared else 'global'}_{bits}"
    if pred is not None:
        call += "_conditional"
        args.append(as_expr(pred, "bool").node)
    _b.emit(_tl.evaluate(_tl.call("void", call, args), _b.current_span()))


def _check_extent(ref, bits, name):
    """A slice given to a vector access must span exactly its bytes (X[i:i + 2] of float32 for
    64 bits); an element or a whole buffer names only where the access starts."""
    if not isinstance(ref, BufferRef) or ref.is_point:
        return
    from . import _last_dim_slice

    parsed = _last_dim_slice(ref)
    elems = parsed[2] if parsed is not None else None
    if isinstance(elems, int) and elems * _BYTES.get(str(ref.dtype), 0) != bits // 8:
        raise _b._UserError(f"T.{name} moves {bits // 8} bytes; the slice spans {elems} elements of {ref.dtype} "
                            f"({elems * _BYTES.get(str(ref.dtype), 0)} bytes)")


def _loader(name, bits, shared):
    def load(src, pred=None):
        return _vector_load(name, bits, src, pred, shared)

    load.__name__ = name
    load.__doc__ = f"The {bits} bits at the address of `src`'s first element (a vector value; 0 where `pred` is false)."
    return load


def _storer(name, bits, shared):
    def store(dst, value, pred=None):
        return _vector_store(name, bits, dst, value, pred, shared)

    store.__name__ = name
    store.__doc__ = f"Stores the {bits}-bit vector `value` at the address of `dst`'s first element."
    return store


def _sm100_form(name, bits):
    def refuse(*args, **kwargs):
        raise _b._UserError(f"T.{name} moves {bits} bits at once, which needs sm_100 (256-bit loads and stores); "
                            "use two 128-bit accesses (T.ldg128 / T.stg128)")

    refuse.__name__ = name
    return refuse


ldg64, ldg128 = _loader("ldg64", 64, False), _loader("ldg128", 128, False)
stg64, stg128 = _storer("stg64", 64, False), _storer("stg128", 128, False)
lds64, lds128 = _loader("lds64", 64, True), _loader("lds128", 128, True)
sts64, sts128 = _storer("sts64", 64, True), _storer("sts128", 128, True)
ldg256, stg256 = _sm100_form("ldg256", 256), _sm100_form("stg256", 256)
