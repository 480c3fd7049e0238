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

from .. import _tl
from ..errors import TileLangRuntimeError

_LOCK = threading.Lock()
_COUNTER = itertools.count()
# Library objects must stay alive for their ops to stay registered.
_LIBRARIES = {}


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
            for d, size in zip(p.dims, a.shape):
                if isinstance(d, AffineDim):
                    dims.setdefault(d.var, (size - d.b) // d.a)
                elif isinstance(d, str):
                    dims.setdefault(d, size)
    return [tuple(dim_value(d, dims) for d in kernel.params[i].dims) for i in kernel.out_idx]


def as_torch_op(kernel, name=None):
    """Registers `kernel` as a torch custom operator and returns it (an OpOverloadPacket,
    callable like the kernel). `name` is "namespace::op" (default tilelang::<kernel>_<n>).
    Registering the same kernel again returns the same op."""
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
        if name is None:
            name = f"tilelang::{_identifier(kernel.name)}_{next(_COUNTER)}"
        if "::" not in name:
            raise ValueError(f"as_torch_op: name must be 'namespace::op', got {name!r}")
        namespace, opname = name.split("::", 1)
        written = set(_tl.written_params(kernel.func.node))
        written -= {kernel.params[i].name for i in kernel.out_idx}
        lib = _LIBRARIES.get(namespace)
        if lib is None:
            lib = _LIBRARIES[namespace] = torch.library.Library(namespace, "FRAGMENT")
        lib.define(opname + _schema(kernel, written))
        n_out = len(kernel.out_idx)

        def impl(*args):
            out = kernel._call_direct(args)
            if n_out == 0:
                return None
            return out if n_out == 1 else tuple(out)

        def fake(*args):
            device = next((a.device for a in args if isinstance(a, torch.Tensor)),
                          torch.device("cuda" if kernel.target == "cuda" else "cpu"))
            outs = [torch.empty(shape, dtype=getattr(torch, kernel.params[i].dtype), device=device)
                    for shape, i in zip(_output_shapes(kernel, args), kernel.out_idx)]
            if n_out == 0:
                return None
            return outs[0] if n_out == 1 else tuple(outs)

        lib.impl(opname, impl, "CUDA" if kernel.target == "cuda" else "CPU")
        torch.library.register_fake(name, fake, lib=lib)
        op = getattr(getattr(torch.ops, namespace), opname)
        kernel._torch_op = (name, op)
        return op
