"""The eager authoring style: ``T.const`` dimensions, ``A: T.Tensor(...)`` annotations in
the body, ``T.empty`` outputs and ``return``.

Dimensions declared with ``T.const`` are bound, in source order, from the shapes of the
tensors given to the call (or from keywords to ``.compile``); every distinct set of
values is a separate specialised kernel.
"""
from __future__ import annotations

import threading

from ..language import builder as _b

_state = threading.local()


class ConstDim:
    """A ``T.const`` dimension before a tensor annotation binds it."""

    def __init__(self, name: str):
        self.name = name
        self.value = None

    def _unbound(self, *args):
        raise _b._UserError(
            f"T.const {self.name!r} is used before it is known: annotate a tensor parameter with it "
            f"first (e.g. `A: T.Tensor(({self.name}, ...), dtype)`), or pass {self.name}=... to .compile()"
        )

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = _unbound
    __floordiv__ = __rfloordiv__ = __truediv__ = __mod__ = __index__ = __int__ = _unbound
    __lt__ = __le__ = __gt__ = __ge__ = _unbound

    def __repr__(self):
        return f"T.const({self.name})"


class EagerContext:
    def __init__(self, args: dict, const_values: dict):
        self.args = args                  # parameter name -> argument (array or python value)
        self.const_values = dict(const_values)
        self.consts: dict[str, ConstDim] = {}
        self.bound_from: dict[str, str] = {}  # const name -> "A.shape[0]" (for messages)
        self.outputs = []                 # Buffers from T.empty, in order
        self.output_count = 0
        self.tensor_params = []           # (name, Buffer or PrimExpr) for annotated parameters
        self.scalar_params = set()        # names of parameters declared as run-time scalars
        self.pointer_params = set()       # names of parameters annotated T.ptr (run-time addresses)


def current() -> EagerContext:
    ctx = getattr(_state, "ctx", None)
    if ctx is None:
        raise _b._UserError(
            "T.const and T.empty belong to the eager style: use them in a function decorated "
            "with @tilelang.jit (not inside @T.prim_func)"
        )
    return ctx


def set_context(ctx):
    prev = getattr(_state, "ctx", None)
    _state.ctx = ctx
    return prev


def shape_bindings(fdef, args: dict) -> dict:
    """Dimension names bound by the tensor annotations of a function body, read from the
    syntax alone: `A: T.Tensor((M, K), dtype)` (or `T.Tensor[[M, K], dtype]`,
    `T.StridedTensor(...)`) with A given a tensor binds M and K to its shape, whatever the
    order of the statements, so `splitK = K // split_k` may come before the annotation, as
    upstream's examples write it. Only bare names bind; the annotations still check every
    shape when they run."""
    import ast

    found = {}
    # Shapes named first and annotated later (`q_shape = [batch, seq_len, heads, dim]`, then
    # `Q: T.Tensor(q_shape, dtype)`): the last plain assignment of a tuple or list to the name.
    named_shapes = {}
    aliases = {}  # `KH, KW = K, K`: a name bound to another bare name
    for st in fdef.body:
        if (isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name)
                and isinstance(st.value, (ast.Tuple, ast.List))):
            named_shapes[st.targets[0].id] = st.value
        if isinstance(st, ast.Assign) and len(st.targets) == 1:
            t, v = st.targets[0], st.value
            pairs = [(t, v)] if isinstance(t, ast.Name) else (
                list(zip(t.elts, v.elts)) if isinstance(t, ast.Tuple) and isinstance(v, ast.Tuple)
                and len(t.elts) == len(v.elts) else [])
            for a, b in pairs:
                if isinstance(a, ast.Name) and isinstance(b, ast.Name):
                    aliases[a.id] = b.id
    for st in fdef.body:
        if not (isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name)):
            continue
        value = args.get(st.target.id)
        shape = getattr(value, "shape", None)
        ann = st.annotation
        if shape is None:
            continue
        spec = None
        if isinstance(ann, ast.Call) and ann.args:
            spec = ann.args[0]
        elif isinstance(ann, ast.Subscript):
            spec = ann.slice.elts[0] if isinstance(ann.slice, ast.Tuple) and ann.slice.elts else ann.slice
        head = ann.func if isinstance(ann, ast.Call) else getattr(ann, "value", None)
        if not (isinstance(head, ast.Attribute) and head.attr in ("Tensor", "StridedTensor", "Buffer")):
            continue
        if isinstance(spec, ast.Name):
            spec = named_shapes.get(spec.id, spec)
        if not isinstance(spec, (ast.Tuple, ast.List)) or len(spec.elts) != len(shape):
            continue
        packed = bool(shape) and _packs_4bit(ann, value)
        if packed:
            # Two 4-bit values per byte: the argument's last dimension is half the logical one.
            shape = tuple(shape[:-1]) + (int(shape[-1]) * 2,)
        for dim, e in zip(shape, spec.elts):
            if isinstance(e, ast.Name):
                found.setdefault(e.id, int(dim))
        # T.StridedTensor[[M, N], [sM, sN], dtype]: bare stride names bind to the argument's
        # strides (in elements), as the sizes do to its shape.
        strides = _element_strides(value)
        if packed and strides:
            # ... and its strides count bytes: 2 values each, except the last (1: see
            # jit/kernel.py, packed_logical_strides, which the call's checks use too).
            from ..language.dtypes import packed_logical_strides

            strides = packed_logical_strides(strides, 2)
        if head.attr == "StridedTensor" and strides is not None:
            st_spec = None
            if isinstance(ann, ast.Call) and len(ann.args) > 1:
                st_spec = ann.args[1]
            elif isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) > 1:
                st_spec = ann.slice.elts[1]
            if isinstance(st_spec, (ast.Tuple, ast.List)) and len(st_spec.elts) == len(strides):
                for stride, e in zip(strides, st_spec.elts):
                    if isinstance(e, ast.Name):
                        found.setdefault(e.id, int(stride))
    for _ in range(len(aliases)):  # the name an alias stands for is bound too (KH = K binds K)
        for a, b in aliases.items():
            if a in found and b not in found:
                found[b] = found[a]
    return found


def _element_strides(value):
    """A tensor argument's strides in elements (torch's stride(), numpy's in bytes), or None."""
    stride = getattr(value, "stride", None)
    if callable(stride):
        try:
            return tuple(stride())
        except TypeError:
            return None
    strides, itemsize = getattr(value, "strides", None), getattr(value, "itemsize", None)
    if isinstance(strides, tuple) and itemsize:
        return tuple(s // itemsize for s in strides)
    return None


_PACKED_NAMES = ("float4_e2m1fn", "int4", "uint4")


def _packs_4bit(ann, value) -> bool:
    """Whether an annotation declares a 4-bit tensor (its dtype, the last argument, written
    T.float4_e2m1fn, T.int4, T.uint4 or as a string), or the argument is torch's packed fp4."""
    import ast

    if "float4_e2m1fn_x2" in str(getattr(value, "dtype", "")):
        return True
    parts = ann.args if isinstance(ann, ast.Call) else (
        ann.slice.elts if isinstance(ann, ast.Subscript) and isinstance(ann.slice, ast.Tuple) else [])
    dt = next((k.value for k in getattr(ann, "keywords", []) if k.arg == "dtype"), parts[-1] if len(parts) > 1 else None)
    name = dt.attr if isinstance(dt, ast.Attribute) else dt.value if isinstance(dt, ast.Constant) else None
    return name in _PACKED_NAMES


def declare_consts(names: str):
    ctx = current()
    out = []
    for name in [n for n in names.replace(",", " ").split() if n]:
        if name in ctx.const_values:
            out.append(int(ctx.const_values[name]))
            continue
        dim = ctx.consts.setdefault(name, ConstDim(name))
        out.append(dim.value if dim.value is not None else dim)
    return out[0] if len(out) == 1 else tuple(out)


def declare_output(shape, dtype):
    from .. import _tl
    from ..language.values import Buffer, as_expr

    ctx = current()
    builder = _b.current()
    name = builder.pending_name or f"out{ctx.output_count}"
    builder.pending_name = None
    ctx.output_count += 1
    dims = []
    for s in shape:
        s = resolve(s)
        if isinstance(s, ConstDim):
            s._unbound()
        dims.append(as_expr(s, "int32").node)
    from ..language.dtypes import dtype as _dtype
    buf = Buffer(_tl.buffer(name, _dtype(dtype), dims, "global"))
    ctx.outputs.append(buf)
    return buf


def resolve(value):
    """A bound ConstDim reads as its integer."""
    if isinstance(value, ConstDim) and value.value is not None:
        return value.value
    return value
