"""Code from outside the compiler, in upstream's names: T.import_source puts C/C++/CUDA text
at the top of the generated kernel file, T.call_extern calls a function by name (one the
imported source, the device headers or the target's runtime defines), and T.access_ptr
gives the address of a tile's element to pass to it (upstream's dequantization examples
decode packed 4-bit values with PTX helpers this way).

The compiler does not look inside the called function: it assumes the call may read and
write every tile whose address it receives (so barriers around shared tiles stay right) and
has no other effect. On the CPU target the imported text is compiled as C++, with CUDA's
__device__ / __host__ / __forceinline__ qualifiers defined away, so portable helpers run
there too; CUDA-only code (inline PTX) is refused there at the T.import_source line."""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder as _b
from .dtypes import canonical
from .values import Buffer, BufferRef, PrimExpr, as_expr

# The IR call op of an extern call: this prefix, then the function name (tl/ir/intrinsics.h:
# kExternCallPrefix).
EXTERN_PREFIX = "call_extern:"


def import_source(source=None):
    """Adds `source` (a string of C/C++/CUDA) to the kernel's file, once, before the kernel."""
    if source is None:
        return None
    _b.require_kernel("T.import_source")
    if not isinstance(source, str):
        raise _b._UserError(f"T.import_source takes the source text as a str, got {type(source).__name__}")
    _b.emit(_tl.attr("tl.import_source:" + source, [], _b.current_span()))
    return None


def call_extern(*args, dtype=None, span=None):
    """A call of the function named `func_name` with `args`, of type `dtype`.

    Both of upstream's spellings: ``T.call_extern(dtype, func_name, *args)`` (TIR's order)
    and ``T.call_extern(func_name, *args, dtype=...)``."""
    _b.require_kernel("T.call_extern")
    if dtype is None:
        if len(args) < 2:
            raise _b._UserError("T.call_extern(dtype, func_name, *args): the result dtype and the function name "
                                f"are required, got {len(args)} argument(s)")
        dtype, name, rest = args[0], args[1], args[2:]
    else:
        if not args:
            raise _b._UserError("T.call_extern(func_name, *args, dtype=...): the function name is required")
        name, rest = args[0], args[1:]
    if not isinstance(name, str) or not name.replace("_", "a").replace("::", "a").isalnum() or name[0].isdigit():
        raise _b._UserError(f"T.call_extern: func_name must be a C identifier (optionally qualified with ::), "
                            f"got {name!r}")
    dt = "handle" if str(dtype) in ("handle", "void") else canonical(dtype)
    nodes = []
    for k, a in enumerate(rest):
        if isinstance(a, str):
            raise _b._UserError(f"T.call_extern({name}): argument {k + 1} is a string; pass numbers, values or "
                                "T.access_ptr(tile) addresses")
        if isinstance(a, Buffer):
            a = access_ptr(a)
        nodes.append(as_expr(a).node)
    return PrimExpr(_tl.call(dt, EXTERN_PREFIX + name, nodes))


class Address(PrimExpr):
    """An element's address (T.access_ptr), knowing the element type it points to: what
    T.ptx_cp_async counts its elements in."""

    __slots__ = ("pointee",)

    def __init__(self, node, pointee):
        super().__init__(node)
        self.pointee = pointee


def access_ptr(base, access_type="r", *extents, offset=0, extent=None, ignore_last_ndim=0):
    """The address of a tile's (or tensor's) element: its first element, `offset` elements
    further (row-major), or the element `base` names (``A[i, j]``). `access_type` ("r",
    "w", "rw" or upstream's mask 1/2/3) documents the use; calls are assumed to read and
    write what they receive."""
    if isinstance(access_type, str) and access_type not in ("r", "w", "rw"):
        raise _b._UserError(f"T.access_ptr: access_type must be 'r', 'w' or 'rw' (or 1, 2, 3), got {access_type!r}")
    if isinstance(base, BufferRef):
        if not base.is_point:
            base = base.buffer[tuple(it.start or 0 if isinstance(it, slice) else it for it in base.items)]
        load = base.load()
    elif isinstance(base, Buffer):
        load = base[_unravel(base, offset)].load()
        offset = 0
    else:
        raise _b._UserError(f"T.access_ptr: base must be a tile or tensor (or one of its elements), got "
                            f"{type(base).__name__}")
    addr = Address(_tl.call("handle", "address_of", [load.node]), base.buffer.dtype if isinstance(base, BufferRef)
                   else base.dtype)
    if not (isinstance(offset, numbers.Integral) and offset == 0):
        raise _b._UserError("T.access_ptr: an offset with an element base (A[i, j]) is not supported; index the "
                            "element instead")
    return addr


def address_of(obj):
    """The address of a tensor's or tile's element (``T.address_of(A[i, j])``), or of its first
    element (``T.address_of(A)``): upstream's name for T.access_ptr of that element."""
    if not isinstance(obj, (Buffer, BufferRef)):
        raise _b._UserError(f"T.address_of takes a tile or tensor, or one of its elements, got {type(obj).__name__}")
    return access_ptr(obj, "rw")


def annotate_restrict_buffers(*buffers):
    """The tensor parameters given may alias one another (overlapping slices of one tensor):
    their pointers lose __restrict__ in the generated kernel on both targets, so the compiler
    no longer assumes a write through one leaves the others unchanged (upstream's name)."""
    if not buffers:
        return None
    addresses = []
    for buf in buffers:
        if not isinstance(buf, Buffer) or buf.scope != "global":
            raise _b._UserError(f"T.annotate_restrict_buffers takes the kernel's tensor parameters, got "
                                f"{buf!r}")
        addresses.append(access_ptr(buf, "rw").node)
    _b.emit(_tl.attr("tl.non_restrict", addresses, _b.current_span()))
    return None


def _unravel(buf: Buffer, offset):
    """Row-major indices of element `offset` of `buf` (a constant offset needs static dims
    past the first; a run-time one is split the same way)."""
    shape = list(buf.shape)
    if len(shape) == 1:
        return (offset,)
    idx = []
    rest = offset
    for d in reversed(shape[1:]):
        if not isinstance(d, numbers.Integral):
            raise _b._UserError(f"T.access_ptr({buf.name}, offset=...): dimensions past the first must be static")
        idx.append(rest % d)
        rest = rest // d
    idx.append(rest)
    return tuple(reversed(idx))


def CUDASourceCodeKernel(*grid, threads=128, source_code_or_path=None, entry_name=None):  # noqa: N802 - upstream's name
    """A kernel launch whose body is hand-written CUDA: `source_code_or_path` (the text, or a
    path to a .cu file) defines an ``extern "C" __global__`` function `entry_name` (the only
    one when not given) whose parameters are the prim_func's, in order, then its dynamic
    sizes (``T.dynamic``) as ints. It is launched over `grid` with `threads` threads per
    block. CUDA only: on the CPU target it is a compile error."""
    import os
    import pathlib

    from . import KernelSpec
    from .values import as_expr

    bld = _b.current()
    if bld.in_kernel:
        raise _b._UserError("T.CUDASourceCodeKernel is a launch of its own: call it outside `with T.Kernel(...)`")
    if isinstance(source_code_or_path, pathlib.PurePath) or (
            isinstance(source_code_or_path, str) and "\n" not in source_code_or_path
            and os.path.isfile(source_code_or_path)):
        try:
            source = pathlib.Path(source_code_or_path).read_text(encoding="utf-8")
        except OSError as e:
            raise _b._UserError(f"T.CUDASourceCodeKernel: cannot read {str(source_code_or_path)!r}: {e}") from None
    elif isinstance(source_code_or_path, str) and source_code_or_path.strip():
        source = source_code_or_path
    else:
        raise _b._UserError("T.CUDASourceCodeKernel: source_code_or_path must be CUDA source text or the path of a "
                            f"file holding it, got {source_code_or_path!r}")
    if entry_name is not None and (not isinstance(entry_name, str) or not entry_name.isidentifier()):
        raise _b._UserError(f"T.CUDASourceCodeKernel: entry_name must be a C identifier, got {entry_name!r}")
    if len(grid) == 1 and isinstance(grid[0], (tuple, list)):
        grid = tuple(grid[0])
    spec = KernelSpec(grid, threads)
    span = _b.current_span()
    names = ["bx", "by", "bz"]
    vars_ = [_tl.var(names[i], "int32") for i in range(len(spec.grid))]
    body = _tl.attr("tl.cuda_source_kernel:" + (entry_name or "") + "\n" + source, [], span)
    _b.emit(_tl.kernel([as_expr(g, "int32").node for g in spec.grid], vars_, spec.threads, body, span))
