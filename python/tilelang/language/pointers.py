"""Pointers: ``T.ptr`` / ``T.handle`` parameters, ``T.Tensor([n], T.ptr)`` tables of
addresses, and ``T.make_tensor(address, shape, dtype, strides)`` views over them.

A pointer parameter is a handle-typed scalar; the caller passes an address (an int, such as
``t.data_ptr()``) or a tensor (its address is taken). A pointer table is an int64 tensor
whose entries are addresses. A tensor made from an address is a global tensor the kernel
reads and writes through that address: the caller vouches for its extent, and the compiler
assumes no alignment beyond the element size (no vector accesses, no TMA)."""
from __future__ import annotations

from .. import _tl
from . import builder as _b


class PointerType:
    """The annotation of a pointer parameter (``a: T.ptr``, ``a: T.handle``), and the
    element type of a pointer table (``T.Tensor([n], T.ptr)``: int64 entries). Calling it
    (``T.ptr()``, ``T.ptr(T.float16)``) gives the same annotation, the element type
    recorded for the reader only: T.make_tensor names the type it reads."""

    def __init__(self, dtype=None, storage_scope="global"):
        self.dtype = dtype
        self.storage_scope = storage_scope

    def __call__(self, dtype=None, storage_scope="global", *, is_size_var=False):
        if storage_scope != "global":
            raise _b._UserError(f"T.ptr(storage_scope={storage_scope!r}): only global pointers are supported")
        return PointerType(dtype, storage_scope)

    def __repr__(self):
        return "T.ptr" if self.dtype is None else f"T.ptr({self.dtype})"


ptr = PointerType()
handle = ptr  # TVM's spelling of the same parameter type

# The storage type of a table entry, and the dtype a pointer parameter reads as.
TABLE_DTYPE = "int64"
HANDLE_DTYPE = "handle"


def make_tensor(ptr, shape, dtype="float32", strides=None):
    """A global tensor of `shape` and `dtype` (row-major, or with `strides` in elements) at
    the address `ptr`: a pointer parameter, or an int64 value such as a pointer table's
    entry (``T.make_tensor(ptrs[g], (m, k), T.float16)``), read once, where this is called."""
    from .dtypes import dtype as _dtype, require_supported
    from .values import Buffer, BufferRef, PrimExpr, as_expr

    bld = _b.current()
    name = bld.pending_name or "tensor"
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    try:
        dt = _dtype(require_supported(dtype, "T.make_tensor"))
    except ValueError as e:
        raise _b._UserError(str(e)) from None
    if strides is not None and len(strides) != len(shape):
        raise _b._UserError(f"T.make_tensor: {len(strides)} strides for the {len(shape)} dimensions of {tuple(shape)}")
    if isinstance(ptr, BufferRef) and ptr.is_point:
        ptr = ptr.load()
    if isinstance(ptr, PrimExpr) and ptr.node.dtype == HANDLE_DTYPE:
        if not ptr.node.is_var:
            raise _b._UserError("T.make_tensor: a pointer is a T.ptr parameter or an int64 address")
        data = ptr.node
    elif isinstance(ptr, PrimExpr) and ptr.node.dtype in ("int64", "uint64"):
        if not bld.in_kernel:
            # Outside T.Kernel there is no device code to read a table entry with.
            raise _b._UserError("T.make_tensor from a loaded address (a pointer table's entry) must be inside "
                                "`with T.Kernel(...)`; a T.ptr parameter may be used anywhere")
        # Read once here: a later store to what the address came from does not move the tensor.
        data = _tl.var(f"{name}_addr", "int64")
        _b.emit(_tl.let(data, as_expr(ptr, "int64").node, _b.current_span()))
    elif isinstance(ptr, Buffer):
        raise _b._UserError(f"T.make_tensor: {ptr.name} is a tensor; pass a T.ptr parameter or an int64 address "
                            f"(an entry of a pointer table, e.g. {ptr.name}[i])")
    else:
        raise _b._UserError(f"T.make_tensor: the address must be a T.ptr parameter or an int64 value "
                            f"(a pointer table's entry), got {ptr!r}")
    dims = [as_expr(d, "int32").node for d in shape]
    st = [as_expr(s, "int32").node for s in strides] if strides is not None else []
    return Buffer(_tl.buffer(name, str(dt), dims, "global", st, data))


def match_buffer(param, shape, dtype="float32", strides=None, elem_offset=None, scope="global", align=None,
                 offset_factor=None, buffer_type="", axis_separators=None):
    """TVM's way of giving a `T.handle` parameter a tensor's shape and dtype
    (``A = T.match_buffer(A_ptr, (16, 16), T.float32)``): here the tensor at the pointer, as
    T.make_tensor makes it. The caller passes a tensor (or an address); its shape is not
    checked against `shape`. `align` and `offset_factor` are accepted (hints)."""
    if scope != "global":
        raise _b._UserError(f"T.match_buffer: only global tensors can be matched to a parameter, got scope={scope!r}")
    if elem_offset not in (None, 0):
        raise _b._UserError(f"T.match_buffer: elem_offset is not supported (got {elem_offset!r}); "
                            "pass the address of the first element instead")
    if axis_separators:
        raise _b._UserError("T.match_buffer: axis_separators are not supported")
    return make_tensor(param, shape, dtype, strides)


def make_tensor_from_addr(addr, shape, dtype="float32", strides=None, storage_scope="global"):
    """Upstream's spelling of T.make_tensor for an address value: a global tensor at `addr`."""
    if storage_scope != "global":
        raise _b._UserError(f"T.make_tensor_from_addr: only global memory is supported (storage_scope='global'), "
                            f"got {storage_scope!r}")
    return make_tensor(addr, shape, dtype, strides)
