"""A compiled kernel as a PyTorch custom operator (torch.library), so that it runs inside
torch.compile graphs without a graph break and is captured by CUDA graphs like any op.

    op = kernel.as_torch_op()            # torch.ops.tilelang.<kernel>_<n>
    y = op(x, w)                         # same arguments and results as kernel(x, w)

Calling the kernel itself inside a compiled region goes through the op automatically
(JITKernel.__call__). The op's schema marks the tensor inputs the kernel may write as mutated
(`Tensor(a!)`), so functionalization keeps in-place kernels correct; the fake (meta)
implementation allocates the outputs from the inputs' shapes, with dynamic sizes taken from
the inputs that carry them."""
from __future__ import annotations

import itertools
import re
import threading
import weakref

from .. import _tl
from ..errors import TileLangRuntimeError

# Re-entrant: a kernel dropped by the garbage collector while this thread registers
# another runs _release_name, which takes the lock too.
_LOCK = threading.RLock()
_COUNTER = itertools.count()
# Library objects must stay alive for their ops to stay registered. An op the user asked
# for (as_torch_op) keeps its kernel alive here; the ones registered automatically when a
# kernel is compiled (JITKernel._register_with_torch) have a Library of their own that the
# kernel holds, so dropping the kernel unregisters its op and frees its module (a server
# that builds thousands of kernels would otherwise keep every one of them).
_LIBRARIES = {}
_KEPT = {}
# Names of automatic ops whose kernels were dropped, for the next kernel of the same name:
# torch keeps a little bookkeeping per op name for the life of the process (about 4 KiB),
# so fresh names for every kernel would grow memory with the number of kernels ever built
# rather than the number alive.
_FREE_NAMES = {}


def _schema_type(dtype: str) -> str:
    if dtype == "bool":
        return "bool"
    if dtype.startswith("float") or dtype == "bfloat16":
        return "float"
    return "int"


def _identifier(name: str) -> str:
    s = re.sub(r"\W", "_", name)
    return s if s and not s[0].isdigit() else "_" + s


def _schema(kernel, written):
    letters = iter("abcdefghijklmnopqrstuvwxyz")
    args = []
    for i in kernel.in_idx:
        p = kernel.params[i]
        if p.is_tensor:
            alias = f"({next(letters)}!)" if p.name in written else ""
            args.append(f"Tensor{alias} {_identifier(p.name)}")
        else:
            args.append(f"{_schema_type(p.dtype)} {_identifier(p.name)}")
    n_out = len(kernel.out_idx)
    rets = "()" if n_out == 0 else "Tensor" if n_out == 1 else "(" + ", ".join(["Tensor"] * n_out) + ")"
    return f"({', '.join(args)}) -> {rets}"


def _output_shapes(kernel, args):
    """The outputs' shapes from the inputs' (works on fake tensors: sizes may be symbolic)."""
    from .kernel import AffineDim, dim_value

    dims = {}
    for i, a in zip(kernel.in_idx, args):
        p = kernel.params[i]
        if p.is_tensor:
            shape = tuple(a.shape)
            if p.pack > 1 and shape:  # a 4-bit tensor's storage: two values per byte of the last dimension
                shape = shape[:-1] + (shape[-1] * p.pack,)
            for d, size in zip(p.dims, shape):
                if isinstance(d, AffineDim):
                    dims.setdefault(d.var, (size - d.b) // d.a)
                elif isinstance(d, str):
                    dims.setdefault(d, size)
    out = []
    for i in kernel.out_idx:
        p = kernel.params[i]
        shape = tuple(dim_value(d, dims) for d in p.dims)
        out.append(shape[:-1] + (shape[-1] // p.pack,) if p.pack > 1 and shape else shape)
    return out


def as_torch_op(kernel, name=None):
    """Registers `kernel` as a torch custom operator and returns it (an OpOverloadPacket,
    callable like the kernel). `name` is "namespace::op" (default tilelang::<kernel>_<n>).
    Registering the same kernel again returns the same op. The op keeps the kernel alive."""
    op = register(kernel, name, owned_by_kernel=False)
    with _LOCK:
        _KEPT[kernel._torch_op[0]] = kernel
    return op


def register(kernel, name=None, owned_by_kernel=True):
    """as_torch_op's registration; with owned_by_kernel the op lives as long as the kernel
    (its Library is the kernel's, and the op's implementations reach the kernel weakly)."""
    try:
        import torch
    except ImportError:
        raise TileLangRuntimeError("kernel.as_torch_op() needs PyTorch; install torch") from None
    if not hasattr(torch.library, "register_fake"):
        raise TileLangRuntimeError(f"kernel.as_torch_op() needs torch >= 2.4 (torch.library.register_fake); "
                                   f"this is torch {torch.__version__}")
    with _LOCK:
        cached = getattr(kernel, "_torch_op", None)
        if cached is not None and (name is None or cached[0] == name):
            return cached[1]
        reused = name is None and owned_by_kernel and _FREE_NAMES.get(_identifier(kernel.name))
        if reused:
            name = reused.pop()
        elif name is None:
            name = f"tilelang::{_identifier(kernel.name)}_{next(_COUNTER)}"
        if "::" not in name:
            raise ValueError(f"as_torch_op: name must be 'namespace::op', got {name!r}")
        namespace, opname = name.split("::", 1)
        written = set(_tl.written_params(kernel.func.node))
        written -= {kernel.params[i].name for i in kernel.out_idx}
        if owned_by_kernel:
            lib = kernel._torch_library = torch.library.Library(namespace, "FRAGMENT")
        else:
            lib = _LIBRARIES.get(namespace)
            if lib is None:
                lib = _LIBRARIES[namespace] = torch.library.Library(namespace, "FRAGMENT")
        lib.define(opname + _schema(kernel, written))
        n_out = len(kernel.out_idx)
        target = kernel.target
        from .kernel import torch_storage_dtype

        out_dtypes = [torch_storage_dtype(torch, kernel.params[i].dtype) for i in kernel.out_idx]
        ref = weakref.ref(kernel)

        def live():
            k = ref()
            if k is None:
                raise TileLangRuntimeError(f"torch op {name}: its kernel was released (keep the kernel, or the op "
                                           "from kernel.as_torch_op(), alive while calling it)")
            return k

        def impl(*args):
            out = live()._call_direct(args)
            if n_out == 0:
                return None
            return out if n_out == 1 else tuple(out)

        def fake(*args):
            kernel = live()
            device = next((a.device for a in args if isinstance(a, torch.Tensor)),
                          torch.device("cuda" if target == "cuda" else "cpu"))
            outs = [torch.empty(shape, dtype=dt, device=device)
                    for shape, dt in zip(_output_shapes(kernel, args), out_dtypes)]
            if n_out == 0:
                return None
            return outs[0] if n_out == 1 else tuple(outs)

        lib.impl(opname, impl, "CUDA" if target == "cuda" else "CPU")
        torch.library.register_fake(name, fake, lib=lib)
        op = getattr(getattr(torch.ops, namespace), opname)
        kernel._torch_op = (name, op)
        if owned_by_kernel:
            release = weakref.finalize(kernel, _release_name, name, _identifier(kernel.name), lib)
            release.atexit = False  # at interpreter exit torch tears its registry down itself
        return op


def _release_name(name, identifier, lib):
    """A dropped kernel's op: unregistered now, its name free for the next kernel. torch
    before 2.12 left the op cached in torch.ops.<namespace> after its Library went, and the
    next enumeration of the namespace (torch.compile's inductor listing custom ops) then
    failed with "'CustomDecompTable' object is not a mapping"; the cache entry goes here."""
    import torch

    lib._destroy()
    namespace, opname = name.split("::", 1)
    ops = vars(torch.ops).get(namespace)
    if ops is not None:
        vars(ops).pop(opname, None)
        if opname in getattr(ops, "_dir", ()):
            ops._dir.remove(opname)
    with _LOCK:
        _FREE_NAMES.setdefault(identifier, []).append(name)
