"""The TileLang language: ``import tilelang.language as T``.

Kernel bodies are not executed by Python: the front end (tilelang.frontend) reads their
AST and calls these functions while it builds the IR. Functions that emit statements
(copies, GEMMs, allocations) append to the builder of the kernel being compiled.
"""
from __future__ import annotations

import builtins as _builtins
import enum
import math as _pymath
import numbers

from .. import _tl
from . import builder as _b
from . import hints as _hints_module
from .hints import not_applied as _hints
from .dtypes import canonical as _canonical, require_supported  # noqa: F401
from . import negative_index as _negative_index
from .dtypes import (  # noqa: F401
    bfloat16, bool_ as bool, dtype, float16, float32, float64, int8, int16, int32, int64,
    uint8, uint16, uint32, uint64,
    float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu, float4_e2m1fn,
    float6_e2m3fn, float6_e3m2fn, int4, uint4, int2, uint2, int1, uint1, tfloat32,
    float8_e3m4, float8_e4m3, float8_e4m3b11fnuz, float4_e2m1_unpacked,
)
from .kernel import _normalize_threads
from .values import Buffer as _Buffer, BufferRef, LaneValues, PrimExpr, as_expr, binary, call_math, cast as _cast, const as _vconst, to_region

half = float16
float = float32  # noqa: A001  (TileLang exports these names)
double = float64


# --------------------------------------------------------------------------- kernels, buffers

def prim_func(func=None, **kwargs):
    """Marks a function whose body is a TileLang kernel; parameters are annotated with
    ``T.Tensor(shape, dtype)``. The body is parsed (not run) when decorated."""
    import sys

    from ..frontend import parse_prim_func

    if func is None:
        def decorate(f):
            return parse_prim_func(f, sys._getframe(1).f_locals)
        return decorate
    # The defining scope's locals: names used only in parameter annotations are not
    # captured by the function's closure.
    return parse_prim_func(func, sys._getframe(1).f_locals)


class Macro:
    """A function whose body is inlined, as kernel code, wherever a kernel calls it."""

    bound_args = ()  # a T.inline method's `self`

    def __init__(self, func):
        self.func = func
        self.__name__ = getattr(func, "__name__", "macro")
        self.__doc__ = func.__doc__

    def __call__(self, *args, **kwargs):
        raise _b._UserError(f"@T.macro {self.__name__} can only be called from inside a kernel")


def macro(func=None, **kwargs):
    """``@T.macro``: a reusable piece of kernel code, inlined at each call (its parameters
    are bound to the call's arguments; it may return a value)."""
    if func is None:
        return lambda f: Macro(f)
    return Macro(func)


class TensorSpec:
    """The annotation ``T.Tensor(shape, dtype)`` of a global tensor parameter."""

    def __init__(self, shape, dtype_="float32", strides=None):
        if isinstance(shape, (numbers.Integral, PrimExpr)):
            shape = (shape,)
        self.shape = tuple(shape)
        from .pointers import PointerType, TABLE_DTYPE

        if isinstance(dtype_, PointerType):
            dtype_ = TABLE_DTYPE  # a pointer table: int64 addresses, read by T.make_tensor
        try:
            self.dtype = dtype(require_supported(dtype_, "T.Tensor"))
        except ValueError as e:
            raise _b._UserError(str(e)) from None
        self.strides = tuple(strides) if strides is not None else None

    def __repr__(self):
        return f"T.Tensor({self.shape}, {self.dtype})"


class _TensorFactory:
    def __call__(self, shape, dtype="float32", data=None, scope=None):
        if data is not None:
            # T.Tensor(shape, dtype, A.data) in a kernel: A seen with another shape.
            from .values import BufferData
            from .views import view

            if not isinstance(data, BufferData):
                raise _b._UserError(f"T.Tensor(shape, dtype, data): data is a buffer's .data (A.data), got {data!r}")
            return view(data.buffer, shape, dtype)
        return TensorSpec(shape, dtype)

    def __getitem__(self, key):
        shape, dt = key if isinstance(key, tuple) and len(key) == 2 and not isinstance(key[1], (int, PrimExpr)) else (key, "float32")
        return TensorSpec(shape, dt)


Tensor = _TensorFactory()
Buffer = Tensor  # the older spelling, T.Buffer(shape, dtype)


def evaluate(value):
    """An expression evaluated for its effect (TIR's Evaluate): ``T.evaluate(0)`` is a no-op;
    ``T.evaluate(T.tvm_thread_allreduce(...))`` has emitted its statements already (None)."""
    _b.require_kernel("T.evaluate")
    if value is None:
        return
    _b.emit(_tl.evaluate(as_expr(value).node, _b.current_span()))


class _StridedTensorFactory:
    """``T.StridedTensor(shape, strides, dtype)``, also written ``T.StridedTensor[shape, strides, dtype]``."""

    def __call__(self, shape, strides, dtype="float32", scope=None):
        return TensorSpec(shape, dtype, strides)

    def __getitem__(self, key):
        if not isinstance(key, tuple) or len(key) not in (2, 3):
            raise _b._UserError("T.StridedTensor[shape, strides, dtype] takes a shape, strides and a dtype")
        return self(*key)


StridedTensor = _StridedTensorFactory()


class ScopedBufferSpec:
    """The annotation ``T.SharedBuffer(shape, dtype)`` (also FragmentBuffer, LocalBuffer) of a
    @T.macro parameter: the argument must be a tile of that memory, rank, shape and dtype.
    Kernel parameters are global tensors (T.Tensor) and do not take it."""

    def __init__(self, spelling, scope, shape, dtype_="float32"):
        if isinstance(shape, (numbers.Integral, PrimExpr)):
            shape = (shape,)
        self.spelling, self.scope = spelling, scope
        self.shape = tuple(shape)
        try:
            self.dtype = dtype(dtype_)
        except ValueError as e:
            raise _b._UserError(f"{spelling}: {e}") from None

    def check(self, name, arg, where):
        """A clear error naming parameter `name` of macro `where` if `arg` does not fit."""
        if not isinstance(arg, _Buffer):
            raise _b._UserError(f"{where}(): parameter {name!r} is annotated {self!r} and takes a "
                                f"{self.scope} tile, got {arg!r}")
        scope = "local" if arg.scope == "var" else arg.scope
        if scope != self.scope:
            raise _b._UserError(f"{where}(): parameter {name!r} is annotated {self!r} but receives the "
                                f"{arg.scope} buffer {arg.name!r}")
        if len(arg.shape) != len(self.shape) or any(
                isinstance(a, numbers.Integral) and isinstance(e, numbers.Integral) and int(a) != int(e)
                for a, e in zip(arg.shape, self.shape)):
            raise _b._UserError(f"{where}(): parameter {name!r} is annotated with shape {list(self.shape)} but "
                                f"receives {arg.name!r} of shape {list(arg.shape)}")
        if arg.dtype != self.dtype:
            raise _b._UserError(f"{where}(): parameter {name!r} is annotated {self.dtype} but receives "
                                f"{arg.name!r} of dtype {arg.dtype}")

    def __repr__(self):
        return f"T.{self.spelling}({list(self.shape)}, {self.dtype})"


class _ScopedBufferFactory:
    def __init__(self, spelling, scope):
        self.spelling, self.scope = spelling, scope

    def __call__(self, shape, dtype="float32", data=None, strides=None, elem_offset=None, scope=None, align=None,
                 offset_factor=None, buffer_type="", axis_separators=None):
        return ScopedBufferSpec(self.spelling, self.scope, shape, dtype)

    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], str):
            return self(*key)
        return self(key)

    def __repr__(self):
        return f"T.{self.spelling}"


# Upstream's annotations for tiles passed to a @T.macro (its scopes "shared.dyn",
# "local.fragment" and "local").
SharedBuffer = _ScopedBufferFactory("SharedBuffer", "shared")
FragmentBuffer = _ScopedBufferFactory("FragmentBuffer", "fragment")
LocalBuffer = _ScopedBufferFactory("LocalBuffer", "local")


def dynamic(name: str, dtype="int32"):
    """A dimension known only at run time: one compiled kernel serves every size."""
    names = [n for n in name.replace(",", " ").split() if n]
    vars_ = tuple(PrimExpr(_tl.var(n, _dt(dtype))) for n in names)
    return vars_[0] if len(vars_) == 1 else vars_


symbolic = dynamic


def const(names: str, dtype="int32"):
    """Eager style: compile-time dimensions bound from the arguments' shapes (or from
    keywords to ``.compile``). Each distinct value gives a specialised kernel."""
    from ..frontend.eager import declare_consts

    return declare_consts(names)


def empty(*shape, dtype="float32"):
    """Eager style: an output tensor, allocated by the runtime and returned."""
    from ..frontend.eager import declare_output

    if shape and isinstance(shape[0], (tuple, list)):
        if len(shape) == 2:  # T.empty((M, N), dtype)
            dtype = shape[1]
        elif len(shape) > 2:
            raise _b._UserError("T.empty takes a shape tuple and a dtype")
        shape = tuple(shape[0])
    return declare_output(shape, dtype)


class KernelSpec:
    def __init__(self, grid, threads, prelude=None, cluster_dims=None):
        if not grid:
            grid = (1,)  # T.Kernel(threads=128): one block, as upstream
        if not 1 <= len(grid) <= 3:
            raise _b._UserError(f"T.Kernel takes 1 to 3 grid dimensions, got {len(grid)}")
        self.grid = grid
        from .clusters import check_grid_divides, normalize_cluster_dims
        self.cluster_dims = normalize_cluster_dims(cluster_dims)
        if self.cluster_dims:
            check_grid_divides(grid, self.cluster_dims)
        given = 1 if threads is None or isinstance(threads, numbers.Integral) else len(threads)
        try:
            # Checked and padded to 3-d as upstream does; the kernel keeps the dimensions given.
            self.threads = _normalize_threads(threads)[:max(given, 1)]
        except ValueError as e:
            raise _b._UserError(str(e)) from None


class WhileSpec:
    """``with T.While(cond):`` — the body repeats while `cond` (re-evaluated each time) holds."""

    def __init__(self, cond):
        self.cond = cond


def While(cond):  # noqa: N802 - upstream's name
    return WhileSpec(cond)


def Kernel(*grid, threads=None, prelude=None, is_cpu=False, cluster_dims=None):
    """``with T.Kernel(gx, gy, threads=128) as (bx, by):`` — a grid of blocks (on sm_90, in
    thread-block clusters of ``cluster_dims`` blocks: see T.ClusterKernel)."""
    if len(grid) == 1 and isinstance(grid[0], (tuple, list)):
        grid = tuple(grid[0])
    return KernelSpec(grid, threads, prelude, cluster_dims)


def ClusterKernel(*grid, cluster_dims, threads=None, prelude=None):  # noqa: N802 - upstream's name
    """``with T.ClusterKernel(gx, gy, cluster_dims=(2, 1, 1), threads=128) as (bx, by):`` — T.Kernel
    launched in thread-block clusters (sm_90): the blocks of a cluster run at the same time and
    may wait for each other (T.cluster_sync); T.block_rank_in_cluster numbers them."""
    return Kernel(*grid, threads=threads, prelude=prelude, cluster_dims=cluster_dims)


def _alloc(shape, dtype_, scope, init=None):
    b = _b.current()
    if isinstance(shape, (numbers.Integral, PrimExpr)):
        shape = (shape,)
    name = b.pending_name or {"shared": "shared", "fragment": "frag", "local": "local", "var": "var"}[scope]
    b.pending_name = None
    shape_nodes = [as_expr(s, "int32").node for s in shape]
    node = _tl.buffer(name, _dt(dtype_), shape_nodes, scope)
    _b.emit(_tl.allocate(node, None if init is None else as_expr(init, _dt(dtype_)).node, _b.current_span()))
    return _Buffer(node, tf32=_canonical(dtype_) == "tfloat32")


def alloc_shared(shape, dtype, scope="shared.dyn"):
    """A tile in the block's shared memory."""
    return _alloc(shape, dtype, "shared")


def alloc_fragment(shape, dtype, scope="local.fragment"):
    """A tile held in registers, spread over the block's threads."""
    return _alloc(shape, dtype, "fragment")


def alloc_local(shape, dtype, scope="local"):
    """Per-thread registers."""
    return _alloc(shape, dtype, "local")


def alloc_global(shape, dtype, scope="global"):
    """A global-memory buffer for the kernels of this function (e.g. the partial results
    one T.Kernel writes and the next combines). It becomes a hidden parameter: each call
    allocates it (uninitialised, on the arguments' device) and drops it afterwards."""
    b = _b.current()
    if b.in_kernel:
        raise _b._UserError("T.alloc_global allocates device memory for the whole call: use it in the function body, "
                            "outside `with T.Kernel(...)`")
    if isinstance(shape, (numbers.Integral, PrimExpr)):
        shape = (shape,)
    name = b.pending_name or f"workspace{len(b.workspaces)}"
    b.pending_name = None
    buf = _Buffer(_tl.buffer(name, _dt(dtype), [as_expr(d, "int32").node for d in shape], "global", []))
    b.workspaces.append(buf)
    return buf


_BUFFER_SCOPES = {"shared": "shared", "shared.dyn": "shared", "local.fragment": "fragment", "local": "local"}


def alloc_buffer(shape, dtype="float32", data=None, strides=None, elem_offset=None, scope="global", align=-1,
                 offset_factor=0, buffer_type="default", axis_separators=None, annotations=None):
    """TIR's allocation by scope name: "shared" / "shared.dyn" (T.alloc_shared),
    "local.fragment" (T.alloc_fragment), "local" (T.alloc_local), and "global" outside the
    kernels (T.alloc_global)."""
    if scope == "global":
        return alloc_global(shape, dtype)
    kind = _BUFFER_SCOPES.get(scope)
    if kind is None:
        raise _b._UserError(f"T.alloc_buffer: scope {scope!r} is not supported here "
                            f"(supported: {', '.join(_BUFFER_SCOPES)})")
    return _alloc(shape, dtype, kind)


def alloc_var(dtype, *args, scope="local.var", init=None):
    """A scalar variable; read and assign it by name. Upstream's forms: ``T.alloc_var(dtype)``
    (starts at zero), ``T.alloc_var(dtype, init)``, ``T.alloc_var(dtype, "local.var")`` (a
    scope), ``T.alloc_var(dtype, init, scope)``, ``T.alloc_var(dtype, init=...)``."""
    if len(args) > 2:
        raise _b._UserError(f"T.alloc_var(dtype, init, scope) takes at most 3 arguments, got {1 + len(args)}")
    if len(args) == 2:
        if init is not None:
            raise _b._UserError("T.alloc_var: the initial value is given twice")
        init, scope = args
        if not isinstance(scope, str):
            raise _b._UserError(f"T.alloc_var(dtype, init, scope): the scope is a string, got {scope!r}")
    elif len(args) == 1:
        if isinstance(args[0], str):
            scope = args[0]
        elif init is not None:
            raise _b._UserError("T.alloc_var: the initial value is given twice")
        else:
            init = args[0]
    if init is None and not isinstance(dtype, str) and isinstance(dtype, (numbers.Number, PrimExpr)):
        raise _b._UserError("T.alloc_var(dtype, init): the dtype comes first")
    if init is None:
        init = 0  # as upstream: a variable without an initial value starts at zero
    if isinstance(init, numbers.Real) and not isinstance(init, numbers.Integral) and str(dtype) in _FLOAT_MAX \
            and _pymath.isfinite(init) and abs(init) > _FLOAT_MAX[str(dtype)]:
        raise _b._UserError(f"T.alloc_var: the initial value {init!r} exceeds maximum of {dtype} "
                            f"({_FLOAT_MAX[str(dtype)]:g}); it would become infinity")
    return _alloc((1,), dtype, "var", init)


# the largest finite value of each float type an initial value must fit
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38}


def _dt(t) -> str:
    try:
        return require_supported(t)
    except ValueError as e:
        raise _b._UserError(str(e)) from None


# --------------------------------------------------------------------------- loops

class LoopSpec:
    """What a ``for`` iterates over inside a kernel."""

    def __init__(self, kind, starts, extents, annotations=None, step=None, decode=None, arity=None):
        self.kind = kind
        self.starts = starts
        self.extents = extents
        self.annotations = annotations or {}
        self.step = step
        # decode(v) -> (guard, [index per loop variable]): the loop runs one variable v over
        # `extents`, and each of the `arity` names the program binds is an index computed from
        # it, the body running where the guard holds (T.Persistent)
        self.decode = decode
        self.arity = arity


def _range_args(start, stop, what):
    if stop is None:
        start, stop = 0, start
    return start, stop - start


# T.Parallel(prefer_async=True)'s loop annotation: 1, the copies are committed and waited for
# after the loop; 2 (upstream's annotation "parallel_async_without_async_commit_wait"), the
# program commits and waits for them itself (T.ptx_commit_group / T.ptx_wait_group).
_PREFER_ASYNC = "tl.prefer_async"
_WITHOUT_COMMIT_WAIT = "parallel_async_without_async_commit_wait"


def Parallel(*extents, coalesced_width=None, loop_layout=None, prefer_async=None, annotations=None):
    """``for i, j in T.Parallel(M, N)``: independent iterations, mapped onto threads.
    ``prefer_async=True``: an element copy from a global tensor into a shared tile (rows
    gathered through an index, zero-filled under a guard) is done as cp.async, 16 bytes per
    thread at a time, then committed and waited for; with
    ``annotations={"parallel_async_without_async_commit_wait": True}``
    the program commits and waits itself (T.ptx_commit_group, T.ptx_wait_group). On CUDA only
    (sm_80 and newer; pass config tl.prefer_async_copies=0 turns it off); where the copy
    cannot be done so, it is lowered as other T.Parallel copies are, and the remark says why."""
    if len(extents) == 1 and isinstance(extents[0], (tuple, list)):
        extents = tuple(extents[0])
    ann = {}
    if prefer_async:
        own = (annotations or {}).get(_WITHOUT_COMMIT_WAIT)
        if isinstance(own, PrimExpr):  # (a Python constant in the kernel's dict literal)
            own = own.node.const_value
            if own is None:
                raise _b._UserError(f"T.Parallel: annotations[{_WITHOUT_COMMIT_WAIT!r}] must be a constant")
        ann[_PREFER_ASYNC] = 2 if own else 1  # (T.bool shadows bool here)
        annotations = {k: v for k, v in (annotations or {}).items() if k != _WITHOUT_COMMIT_WAIT}
    _hints("T.Parallel", coalesced_width=coalesced_width, loop_layout=loop_layout, annotations=annotations)
    return LoopSpec("parallel", [0] * len(extents), list(extents), annotations=ann)


def Pipelined(start, stop=None, num_stages=0, order=None, stage=None, sync=None, group=None,
              annotations=None):
    """A loop whose copies and compute are overlapped in ``num_stages`` stages.

    ``order=`` / ``stage=`` (upstream's hand-written schedule: the position and the stage of
    each statement of the body), ``group=`` and ``sync=``: the compiler keeps its own schedule
    (each load a stage ahead of its use per stage), which gives the same results; ``stage=``
    sets the number of stages (its largest entry + 1), and what is not followed is a remark."""
    s, e = _range_args(start, stop, "T.Pipelined")
    stages = _pipeline_stages(num_stages, order, stage)
    given = [name for name, v in (("order", order), ("stage", stage), ("group", group), ("sync", sync)) if v is not None]
    if given:
        _remark("T.Pipelined(" + ", ".join(f"{n}=..." for n in given) + f"): {stages} stage(s) in the compiler's "
                "own schedule (loads issued ahead of their use); the order of the body's statements is kept as "
                "written")
    _hints("T.Pipelined", annotations=annotations)
    return LoopSpec("pipelined", [s], [e], {"num_stages": stages})


def _pipeline_stages(num_stages, order, stage):
    """T.Pipelined's stage count: ``stage=``'s largest entry + 1 when given (as upstream takes
    a hand-written schedule over num_stages), else ``num_stages``."""
    def ints(name, v):
        if not isinstance(v, (list, tuple)) or not all(isinstance(x, numbers.Integral) and
                                                       not isinstance(x, _builtins.bool) for x in v):
            raise _b._UserError(f"T.Pipelined: {name} must be a list of ints (one per statement of the loop body), "
                                f"got {v!r}")
        return [int(x) for x in v]

    if not isinstance(num_stages, numbers.Integral) or isinstance(num_stages, _builtins.bool) or num_stages < 0:
        raise _b._UserError(f"T.Pipelined: num_stages must be a non-negative int, got {num_stages!r}")
    if order is not None:
        order = ints("order", order)
    if stage is None:
        return int(num_stages)
    stage = ints("stage", stage)
    if order is not None and len(order) != len(stage):
        raise _b._UserError(f"T.Pipelined: order and stage must have one entry per statement each, got "
                            f"{len(order)} and {len(stage)}")
    last = _builtins.max([0] + stage)
    return last + 1 if last > 0 else int(num_stages)


def serial(start, stop=None, step=None, annotations=None):
    s, e = _range_args(start, stop, "T.serial")
    _hints("T.serial", annotations=annotations)
    return LoopSpec("serial", [s], [e], step=step)


def unroll(start, stop=None, step=None, explicit=False, unroll_factor=None, annotations=None):
    """An unrolled loop; ``unroll_factor=n`` unrolls by n (``#pragma unroll n`` on CUDA)."""
    s, e = _range_args(start, stop, "T.unroll")
    _hints("T.unroll", explicit=explicit or None, annotations=annotations)
    ann = {}
    if unroll_factor is not None:
        if not isinstance(unroll_factor, numbers.Integral) or isinstance(unroll_factor, _builtins.bool) or unroll_factor < 1:
            raise _b._UserError(f"T.unroll: unroll_factor must be a positive int, got {unroll_factor!r}")
        ann["tl.unroll_factor"] = unroll_factor
    return LoopSpec("unroll", [s], [e], annotations=ann, step=step)


def vectorized(start, stop=None, annotations=None):
    s, e = _range_args(start, stop, "T.vectorized")
    _hints("T.vectorized", annotations=annotations)
    return LoopSpec("vectorized", [s], [e])


def grid(*extents):
    return LoopSpec("serial", [0] * len(extents), list(extents))


def Persistent(domain, wave_size, index, group_size=8, num_stages=0, *, annotations=None):
    """``for bx, by in T.Persistent([MB, NB], sm_num, block_id)``: a persistent block's tiles.
    Block `index` of `wave_size` blocks visits tile ``index + w * wave_size`` of the domain's
    tiles in wave w, while there are tiles left, so every tile is visited once. A 2-D domain
    is walked in panels of `group_size` rows (neighbouring blocks share rows of A and columns
    of B in L2); other domains in row-major order. ``num_stages`` (prefetching the next
    tile's loads) is not applied: a remark says so."""
    if not isinstance(domain, (list, tuple)) or not domain:
        raise _b._UserError(f"T.Persistent: domain must be a non-empty list of tile counts, got {domain!r}")
    if num_stages:
        _remark(f"T.Persistent(num_stages={num_stages}): not applied (the tiles are visited one after another)")
    _hints("T.Persistent", annotations=annotations)
    domain = list(domain)
    total = domain[0]
    for d in domain[1:]:
        total = total * d

    def decode(wave):
        tile = wave * wave_size + index
        if len(domain) == 2 and group_size:
            per_group = group_size * domain[1]
            first = (tile // per_group) * group_size
            rows = min(domain[0] - first, group_size)
            within = tile % per_group
            return tile < total, [first + within % rows, within // rows]
        return tile < total, index_to_coordinates(tile, domain)

    return LoopSpec("serial", [0], [ceildiv(total, wave_size)], decode=decode, arity=len(domain))


def parallel(start, stop=None, annotations=None):
    """A one-dimensional parallel loop: ``for i in T.parallel(n)`` (TIR's spelling), the same as
    ``T.Parallel(n)`` over [start, stop)."""
    s, e = _range_args(start, stop, "T.parallel")
    _hints("T.parallel", annotations=annotations)
    return LoopSpec("parallel", [s], [e])


Serial, Unroll, Vectorized = serial, unroll, vectorized


# --------------------------------------------------------------------------- tile operations

def copy(src, dst, coalesced_width=None, disable_tma=False, eviction_policy=None,
         prefer_instruction=None, annotations=None, loop_layout=None):
    """Copies a tile between any two of global, shared and fragment memory.

    ``disable_tma=True``: the threads copy, never TMA. ``eviction_policy``,
    ``prefer_instruction``, ``coalesced_width``, ``loop_layout`` and ``annotations`` are
    hints the compiler does not take (it chooses the instruction and the layout); each given
    one is said in the remarks."""
    _b.require_kernel("T.copy")
    if prefer_instruction == "tma" and disable_tma:
        raise _b._UserError('T.copy: prefer_instruction="tma" conflicts with disable_tma=True')
    _hints("T.copy", eviction_policy=eviction_policy, prefer_instruction=prefer_instruction,
           coalesced_width=coalesced_width, loop_layout=loop_layout, annotations=annotations)
    if _is_element(src) and _is_element(dst):
        # One element to one element: a plain store (what upstream lowers it to).
        d = dst if isinstance(dst, BufferRef) else dst[0]
        s_ = src if isinstance(src, BufferRef) else src[0]
        _b.emit(_tl.store(d.buffer.node, [as_expr(i, "int32").node for i in d.items], s_.load().node,
                          _b.current_span()))
        return
    _b.emit(_tl.copy(to_region(src, "T.copy source"), to_region(dst, "T.copy destination"), _b.current_span(),
                     _builtins.bool(disable_tma)))


def async_copy(src, dst, *, coalesced_width=None, annotations=None, loop_layout=None):
    """Upstream's explicitly asynchronous global -> shared copy (cp.async, committed, not
    waited for). Here it is a T.copy whose data is in place when the statement ends, so a
    later T.ptx_wait_group or barrier finds nothing in flight (said in the remarks)."""
    _b.require_kernel("T.async_copy")
    scopes = [(x.buffer if isinstance(x, BufferRef) else x).scope for x in (src, dst)]
    if scopes[0] != "global" or scopes[1] not in ("shared", "shared.dyn"):
        raise _b._UserError(f"T.async_copy only supports global->shared/shared.dyn copies; this one is {scopes[0]} -> "
                            f"{scopes[1]} (use T.copy)")
    _remark("T.async_copy: a synchronous T.copy here (its data is in place when it ends; waits for it are no-ops)")
    copy(src, dst)


def _is_element(x):
    """A single element: A[i, j], or a one-element scalar variable (T.alloc_var)."""
    if isinstance(x, BufferRef):
        return x.is_point
    return isinstance(x, _Buffer) and x.scope == "var"


class GemmWarpPolicy(enum.IntEnum):
    Square = 0
    FullRow = 1
    FullCol = 2


def gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square,
         clear_accum=False, k_pack=1, wg_wait=0, mbar=None, annotations=None, *, _async_wgmma=False):
    """C += A @ B on tiles (A and B transposed when asked).

    ``k_pack`` (AMD's), ``wg_wait`` and ``mbar`` (upstream's asynchronous Hopper and Blackwell
    forms) and ``annotations`` are not taken: C is complete when the statement ends (use
    T.wgmma_gemm and T.wait_wgmma for wgmma left in flight); each one given is a remark."""
    _b.require_kernel("T.gemm")
    given = [n for n, v, default in (("k_pack", k_pack, 1), ("wg_wait", wg_wait, 0), ("mbar", mbar, None),
                                     ("annotations", annotations, None)) if v is not None and v != default]
    if given and not _async_wgmma:
        _remark("T.gemm(" + ", ".join(f"{n}=..." for n in given) + "): not applied (C is complete when the "
                "T.gemm ends; T.wgmma_gemm and T.wait_wgmma leave wgmma in flight)")
    clear = as_expr(clear_accum, "bool").node if not isinstance(clear_accum, _builtins.bool) else _vconst(clear_accum, "bool").node
    # An operand tile declared T.tfloat32 makes this a TF32 GEMM (the core decides how).
    tf32 = any(getattr(x.buffer if isinstance(x, BufferRef) else x, "tf32", False) for x in (A, B))
    _b.emit(_tl.gemm(to_region(A, "T.gemm A"), to_region(B, "T.gemm B"), to_region(C, "T.gemm C"),
                     _static_bool(transpose_A, "transpose_A"), _static_bool(transpose_B, "transpose_B"),
                     int(policy), clear, _b.current_span(), tf32, _async_wgmma))


def wgmma_gemm(A, B, C, transpose_A=False, transpose_B=False, policy=GemmWarpPolicy.Square,
               clear_accum=False, annotations=None):
    """C += A @ B as T.gemm, but on Hopper (sm_90a) its wgmma instructions are issued without
    waiting: C is complete only after a later ``T.wait_wgmma(n)``. It must lower to wgmma (a
    compile error says why where it cannot, sm_80 included). On the CPU it is T.gemm."""
    _b.require_kernel("T.wgmma_gemm")
    gemm(A, B, C, transpose_A, transpose_B, policy, clear_accum, annotations=annotations, _async_wgmma=True)


def _static_bool(v, name):
    if isinstance(v, PrimExpr):
        raise _b._UserError(f"{name} must be a compile-time bool")
    return _builtins.bool(v)




def fill(buffer, value):
    """Sets every element of a tile (or region) to ``value``."""
    _b.require_kernel("T.fill")
    if isinstance(buffer, _Buffer):
        from .reducer import note_reducer_fill

        note_reducer_fill(buffer)
    target = to_region(buffer, "T.fill destination")
    dt = buffer.dtype if hasattr(buffer, "dtype") else None
    _b.emit(_tl.fill(target, as_expr(value, dt).node, _b.current_span()))


def clear(buffer):
    """Sets every element of a tile to zero."""
    fill(buffer, 0)


def reduce(buffer, out, reduce_type, dim=-1, clear=True, batch=1, nan_propagate=False, **hints):
    _b.require_kernel(f"T.reduce_{reduce_type}")
    # batch (rows finalized together) and the like: the compiler plans the reduction itself
    _hints(f"T.reduce_{reduce_type}", batch=None if batch == 1 else batch, **hints)
    if _static_bool(nan_propagate, "nan_propagate"):
        # Without it max/min follow fmax/fmin (a NaN element is skipped); with it a NaN among
        # the elements (or in `out`, when clear=False) gives NaN.
        if reduce_type not in ("max", "min", "absmax"):
            raise _b._UserError(f"T.reduce_{reduce_type}: nan_propagate applies to max, min and absmax only")
        reduce_type += "_nan"
    _b.emit(_tl.reduce(to_region(buffer, "reduce source"), to_region(out, "reduce destination"),
                       reduce_type, int(dim), _static_bool(clear, "clear"), _b.current_span()))


def reduce_max(buffer, out, dim=-1, clear=True, nan_propagate=False, **kw):
    reduce(buffer, out, "max", dim, clear, nan_propagate=nan_propagate, **kw)


def reduce_min(buffer, out, dim=-1, clear=True, nan_propagate=False, **kw):
    reduce(buffer, out, "min", dim, clear, nan_propagate=nan_propagate, **kw)


def reduce_sum(buffer, out, dim=-1, clear=True, **kw):
    reduce(buffer, out, "sum", dim, clear, **kw)


def reduce_abssum(buffer, out, dim=-1, clear=True, **kw):
    reduce(buffer, out, "abssum", dim, clear, **kw)


def reduce_absmax(buffer, out, dim=-1, clear=True, nan_propagate=False, **kw):
    reduce(buffer, out, "absmax", dim, clear, nan_propagate=nan_propagate, **kw)


def cumsum(src, dst=None, dim=0, reverse=False, annotations=None):
    """Inclusive prefix sum of a tile along ``dim`` into ``dst`` (in place when dst is None)."""
    _b.require_kernel("T.cumsum")
    _hints("T.cumsum", annotations=annotations)
    _b.emit(_tl.cumsum(to_region(src, "T.cumsum source"),
                       None if dst is None else to_region(dst, "T.cumsum destination"),
                       int(dim), _static_bool(reverse, "reverse"), _b.current_span()))


_MEMORY_ORDERS = ("relaxed", "consume", "acquire", "release", "acq_rel", "seq_cst")


def _check_memory_order(what, memory_order):
    if memory_order is not None and (not isinstance(memory_order, str) or memory_order not in _MEMORY_ORDERS):
        raise _b._UserError(f"{what}: memory_order must be one of {', '.join(_MEMORY_ORDERS)}, got {memory_order!r}")


# Orders that need a fence before the (relaxed) atomic, and after it: the atomic with a
# device-scope fence on each side it orders is at least as strong as the order asked.
_RELEASING = ("release", "acq_rel", "seq_cst")
_ACQUIRING = ("consume", "acquire", "acq_rel", "seq_cst")


def _thread_fence():
    _b.emit(_tl.evaluate(_tl.call("void", "thread_fence", []), _b.current_span()))


def _ordered(what, memory_order, return_prev, emit_atomic):
    """Runs emit_atomic() between the fences memory_order asks for. An atomic used as a
    value (return_prev=True) gets its releasing fence before the statement it is in; an
    acquiring order there is refused (nothing can follow an expression)."""
    if return_prev and memory_order in _ACQUIRING:
        raise _b._UserError(
            f"{what}(return_prev=True, memory_order={memory_order!r}): an acquiring order on an atomic used as a "
            f"value is not supported here; use memory_order='release' or 'relaxed', and read the location with "
            f"T.atomic_load(..., memory_order='acquire') after it")
    if memory_order in _RELEASING:
        _thread_fence()
    result = emit_atomic()
    if memory_order in _ACQUIRING:
        _thread_fence()
    return result


def _element_address(dst, what):
    if not isinstance(dst, BufferRef) or not dst.is_point:
        raise _b._UserError(f"{what} takes one element of a buffer (e.g. B[i]), got {dst!r}")
    return _tl.call("handle", "address_of", [dst.load().node])


def _atomic_element_call(kind, dst, value):
    """The element atomic `kind` as an expression: the value before the update."""
    what = f"T.atomic_{kind}"
    address = _element_address(dst, what + "(return_prev=True)" if kind in ("add", "max", "min") else what)
    if isinstance(value, BufferRef) and not value.is_point:
        raise _b._UserError(f"{what}: the value of an element atomic is a scalar, got the region {value!r}")
    return PrimExpr(_tl.call(str(dst.dtype), f"atomic_{kind}", [address, as_expr(value, dst.dtype).node]))


def _atomic(kind, dst, value, return_prev, memory_order=None):
    _b.require_kernel(f"T.atomic_{kind}")
    _check_memory_order(f"T.atomic_{kind}", memory_order)
    return _ordered(f"T.atomic_{kind}", memory_order, return_prev,
                    lambda: _atomic_unordered(kind, dst, value, return_prev))


def _atomic_unordered(kind, dst, value, return_prev):
    if return_prev:
        # An expression (the old value); guarded and narrowed like an element access.
        return _atomic_element_call(kind, dst, value)
    dst_region = to_region(dst, f"T.atomic_{kind} destination")
    if isinstance(value, _Buffer) or (isinstance(value, BufferRef) and not value.is_point):
        _b.emit(_tl.atomic(kind, dst_region, to_region(value, "atomic source"), None, _b.current_span()))
    else:
        _b.emit(_tl.atomic(kind, dst_region, None, as_expr(value, dst.dtype).node, _b.current_span()))


def atomic_add(dst, value, memory_order=None, return_prev=False, use_tma=False):
    """dst += value atomically (an element, or a whole region from a tile). With
    return_prev=True (elements only) it is an expression: the value before the update.
    use_tma=True (upstream's TMA bulk reduction of a shared tile) gives the same sums with
    atomic instructions here, said in the remarks."""
    if use_tma:
        _b.require_kernel("T.atomic_add")
        _remark("T.atomic_add(use_tma=True): done with atomic instructions (no TMA bulk reduction is generated)")
    return _atomic("add", dst, value, return_prev, memory_order)


def _last_dim_slice(ref):
    """(outer points, start, element count) of a ref that is points except a step-1 slice of
    its last dimension, the count an int when static; None for any other ref."""
    *outer, last = ref.items
    if any(isinstance(i, slice) for i in outer) or not isinstance(last, slice) or last.step not in (None, 1):
        return None
    start = 0 if last.start is None else last.start
    extent = (ref.buffer.shape[-1] if last.stop is None else last.stop) - start
    if not isinstance(extent, numbers.Integral):
        extent = _tl.simplify(as_expr(extent, "int32").node).const_value  # X[i + 2:i + 4]: 2
    return outer, start, extent


def _lanes(ref, width, what, role):
    """The `width` consecutive elements `ref` names: an element (and the next ones along the
    last dimension) or a slice of exactly `width` elements along the last dimension."""
    if not isinstance(ref, BufferRef):
        raise _b._UserError(f"{what}: the {role} must be an element or a slice of a buffer, got {ref!r}")
    if ref.is_point:
        *outer, start = ref.items
    else:
        parsed = _last_dim_slice(ref)
        if parsed is None:
            raise _b._UserError(f"{what}: the {role} must be an element or a contiguous slice of its last "
                                f"dimension, got {ref!r}")
        outer, start, extent = parsed
        if extent != width:
            raise _b._UserError(f"{what}: the {role}'s slice has {extent} elements, it needs {width}")
        if isinstance(ref.items[-1].step, _RampStep):
            n = ref.buffer.shape[-1]
            return [ref.buffer[tuple(outer + [_negative_index.lane_from_end(start + k, n)])] for k in range(width)]
    return [ref.buffer[tuple(outer + [start + k])] for k in range(width)]


def _is_lane_slice(ref, width):
    """Whether `ref` is points except a last-dimension slice of `width` elements."""
    parsed = _last_dim_slice(ref)
    return parsed is not None and parsed[2] == width


def _atomic_add_vec(width, dst, value, return_prev):
    what = f"T.atomic_addx{width}"
    _b.require_kernel(what)
    if return_prev:
        # Each lane is its own atomic add with its own old value (as the vector instruction
        # does element by element): assigned to a slice of `width` elements.
        dsts = _lanes(dst, width, what, "destination")
        vals = _lanes(value, width, what, "value") if isinstance(value, BufferRef) else [value] * width
        return LaneValues(_atomic_element_call("add", d, v.load() if isinstance(v, BufferRef) else v)
                          for d, v in zip(dsts, vals))
    if isinstance(dst, BufferRef) and not dst.is_point and _is_lane_slice(dst, width) and \
            isinstance(value, BufferRef) and _is_lane_slice(value, width):
        # dst[..., j:j + width] from value[..., k:k + width]: `width` element atomics, which
        # thread-level code can issue (T.atomic_addx4(dst[idx[t], 0:4], val[t, 0:4]))
        for d, v in zip(_lanes(dst, width, what, "destination"), _lanes(value, width, what, "value")):
            _atomic("add", d, v.load(), False)
        return
    if not isinstance(dst, BufferRef) or not dst.is_point:
        # A whole buffer or a slice: the region form, element by element.
        _atomic("add", dst, value, False)
        return
    for k in range(width):  # element atomics on the `width` consecutive elements of the last dimension
        d = dst.buffer[tuple(dst.items[:-1] + [dst.items[-1] + k])]
        if isinstance(value, BufferRef) and value.is_point:
            v = value.buffer[tuple(value.items[:-1] + [value.items[-1] + k])].load()
        else:
            raise _b._UserError(f"{what}: the value must be an element of a buffer (its {width} consecutive "
                                f"elements are added), got {value!r}")
        _atomic("add", d, v, False)


def atomic_addx2(dst, value, return_prev=False):
    """dst[..., j:j+2] += value[..., j:j+2], each element atomically (or a whole buffer or
    slice, as T.atomic_add's region form). With return_prev=True, the two old values, for
    a slice of two: `Prev[j:j + 2] = T.atomic_addx2(Dst[j:j + 2], Val[j:j + 2], return_prev=True)`."""
    return _atomic_add_vec(2, dst, value, return_prev)


def atomic_addx4(dst, value, return_prev=False):
    """dst[..., j:j+4] += value[..., j:j+4], each element atomically (as atomic_addx2)."""
    return _atomic_add_vec(4, dst, value, return_prev)


class _RampStep(int):
    """The step (1) of the slice T.Ramp gives: it marks the slice's elements as lanes, each of
    which counts from the end when negative (see T.Ramp)."""


def Ramp(base, stride, lanes):  # noqa: N802 - TIR's name
    """TIR's index vector base, base + stride, ...: as an index, the slice of `lanes`
    consecutive elements from `base` (stride 1 only). As upstream, each lane read or written
    one by one (``B[t, 0:4] = A[T.Ramp(t - 2, 1, 4)]``) counts from the end of the dimension
    when its index is negative, also where that is known only at run time."""
    if not (isinstance(stride, numbers.Integral) and stride == 1):
        raise _b._UserError(f"T.Ramp: only stride 1 (a contiguous slice) is supported, got {stride!r}")
    if not isinstance(lanes, numbers.Integral) or lanes < 1:
        raise _b._UserError(f"T.Ramp: lanes must be a positive int, got {lanes!r}")
    return slice(base, base + lanes, _RampStep(1))


def Broadcast(value, lanes):  # noqa: N802 - TIR's name
    """TIR's vector of `lanes` copies of `value`: assigned to (or combined with) a region of
    `lanes` elements, as in ``packed[0:32] = T.Broadcast(x, 32)``, it is the scalar `value`
    (every element gets it)."""
    if isinstance(lanes, _builtins.bool) or not isinstance(lanes, numbers.Integral) or lanes < 1:
        raise _b._UserError(f"T.Broadcast: lanes must be a positive int, got {lanes!r}")
    return value


def atomic_max(dst, value, memory_order=None, return_prev=False):
    return _atomic("max", dst, value, return_prev, memory_order)


def atomic_min(dst, value, memory_order=None, return_prev=False):
    return _atomic("min", dst, value, return_prev, memory_order)


def _atomic_bitwise(kind, dst, value, memory_order, return_prev):
    what = f"T.atomic_{kind}"
    _b.require_kernel(what)
    _check_memory_order(what, memory_order)
    if not str(dst.dtype).startswith(("int", "uint")):
        raise _b._UserError(f"{what} takes an integer destination, got {dst.dtype}")
    def emit_atomic():
        call = _atomic_element_call(kind, dst, value)
        if return_prev:
            return call
        _b.emit(_tl.evaluate(call.node, _b.current_span()))
        return None

    return _ordered(what, memory_order, return_prev, emit_atomic)


def atomic_or(dst, value, memory_order=None, return_prev=False):
    """dst |= value atomically (one integer element); return_prev=True gives the old value."""
    return _atomic_bitwise("or", dst, value, memory_order, return_prev)


def atomic_and(dst, value, memory_order=None, return_prev=False):
    """dst &= value atomically (one integer element); return_prev=True gives the old value."""
    return _atomic_bitwise("and", dst, value, memory_order, return_prev)


def atomic_xor(dst, value, memory_order=None, return_prev=False):
    """dst ^= value atomically (one integer element); return_prev=True gives the old value."""
    return _atomic_bitwise("xor", dst, value, memory_order, return_prev)


def _check_load_store_order(what, memory_order, refused):
    # as upstream: a load cannot release, a store cannot acquire
    if memory_order in refused or memory_order not in _MEMORY_ORDERS:
        allowed = ", ".join(o for o in _MEMORY_ORDERS if o not in refused)
        raise _b._UserError(f"T.{what} does not support memory_order={memory_order!r} (use one of {allowed})")


def atomic_load(src, memory_order="seq_cst"):
    """One indivisible read of an element (sequentially consistent whatever the order asked)."""
    _b.require_kernel("T.atomic_load")
    _check_load_store_order("atomic_load", memory_order, ("release", "acq_rel"))
    return PrimExpr(_tl.call(str(src.dtype), "atomic_load", [_element_address(src, "T.atomic_load")]))


def atomic_store(dst, value, memory_order="seq_cst"):
    """One indivisible write of an element (sequentially consistent whatever the order asked)."""
    _b.require_kernel("T.atomic_store")
    _check_load_store_order("atomic_store", memory_order, ("consume", "acquire", "acq_rel"))
    address = _element_address(dst, "T.atomic_store")
    _b.emit(_tl.evaluate(_tl.call("void", "atomic_store", [address, as_expr(value, dst.dtype).node]),
                         _b.current_span()))


def sync_threads(barrier_id=None, arrive_count=None):
    """A block-wide barrier (__syncthreads on CUDA; nothing to do on the CPU, where a block
    runs as one sequence). With a barrier id, hardware barrier `barrier_id` (bar.sync), for
    `arrive_count` threads (a multiple of 32) or, without one, for all the block's threads:
    the barrier a subset of the warps meets (`if tx < 128: ... T.sync_threads(1, 128)`)."""
    _b.require_kernel("T.sync_threads")
    if barrier_id is None and arrive_count is None:
        _b.emit(_tl.evaluate(_tl.call("void", "syncthreads", []), _b.current_span()))
        return
    bid = as_expr(0 if barrier_id is None else barrier_id, "int32")
    if arrive_count is None:
        call = _tl.call("void", "named_barrier_sync_all", [bid.node])
    else:
        if isinstance(arrive_count, numbers.Integral) and (arrive_count <= 0 or arrive_count % 32):
            raise _b._UserError(f"T.sync_threads: arrive_count must be a positive multiple of 32 (whole warps), "
                                f"got {arrive_count}")
        call = _tl.call("void", "named_barrier_sync", [bid.node, as_expr(arrive_count, "int32").node])
    _b.emit(_tl.evaluate(call, _b.current_span()))


def named_barrier_arrive(barrier_id, thread_count):
    """This thread arrives at hardware barrier `barrier_id` (1..15) of `thread_count` threads
    (a multiple of 32) and goes on without waiting (bar.arrive); the threads that meet it with
    ``T.sync_threads(barrier_id, thread_count)`` wait for the count. A producer warpgroup
    signals a consumer this way. CUDA only: the CPU target refuses it at this line."""
    _b.require_kernel("T.named_barrier_arrive")
    if isinstance(barrier_id, numbers.Integral) and not 1 <= barrier_id <= 15:
        raise _b._UserError(f"T.named_barrier_arrive: barrier_id must be in [1, 15] (0 is the block barrier), "
                            f"got {barrier_id}")
    if isinstance(thread_count, numbers.Integral) and (thread_count <= 0 or thread_count % 32):
        raise _b._UserError(f"T.named_barrier_arrive: thread_count must be a positive multiple of 32 (whole warps), "
                            f"got {thread_count}")
    call = _tl.call("void", "named_barrier_arrive",
                    [as_expr(barrier_id, "int32").node, as_expr(thread_count, "int32").node])
    _b.emit(_tl.evaluate(call, _b.current_span()))


def sync_warp(mask=None):
    """The lanes of the warp wait for each other (__syncwarp(mask), all lanes by default);
    not a block barrier. Nothing to do on the CPU, whose lockstep emulation runs every
    statement for all threads before the next."""
    _b.require_kernel("T.sync_warp")
    args = [] if mask is None else [as_expr(mask, "uint32").node]
    _b.emit(_tl.evaluate(_tl.call("void", "syncwarp", args), _b.current_span()))


def print(obj, msg="", warp_group_id=0, warp_id=0):  # noqa: A001 - TileLang's name
    """Prints from the kernel (printf): a value from every thread that reaches it (on CUDA
    with its block and thread), or a whole tile / tensor once per block, element by element.
    For debugging: output order across blocks and threads is not defined."""
    _b.require_kernel("T.print")
    if warp_group_id != 0 or warp_id != 0:
        _remark("T.print(warp_group_id=..., warp_id=...): not applied (a value prints from every thread that "
                "reaches the call, a tile once per block)")
    label = (str(msg) + " ") if msg else ""
    span = _b.current_span()
    if isinstance(obj, _Buffer):
        shape = list(obj.shape)
        if not all(isinstance(d, numbers.Integral) for d in shape):
            raise _b._UserError(f"T.print of {obj.name}: a tile with a static shape is needed")
        idx = [_tl.var(f"i{k}", "int32") for k in range(len(shape))]
        where = ", ".join("{}" for _ in shape)
        body = _tl.attr(f"tl.print1:{label}{obj.name}[{where}] = {{}}",
                        idx + [_tl.load(obj.node, idx)], span)
        for k in reversed(range(len(shape))):
            body = _tl.for_(idx[k], _tl.const_int(0, "int32"), _tl.const_int(shape[k], "int32"), "serial", body, {},
                            span)
        _b.emit(body)
        return
    value = as_expr(obj)
    _b.emit(_tl.attr(f"tl.print:{label}{{}}", [value.node], span))


def use_swizzle(panel_size=8, order="row", enable=True):
    """Rasterizes blocks in panels for L2 reuse (a GPU hint; no effect on the CPU): panels of
    ``panel_size`` block columns, the blocks of a panel in row order (``order="col"`` is a
    remark: not applied)."""
    if enable and order != "row":
        _remark(f"T.use_swizzle(order={order!r}): not applied (panels of block columns, the blocks of a panel "
                "in row order)")
    if enable:
        _b.emit(_tl.attr("threadblock_swizzle", [as_expr(panel_size, "int32").node], _b.current_span()))


def annotate_layout(layout_map):
    """Layouts ({buffer: layout}). On a tile they are hints: the compiler chooses tile
    layouts itself (see tilelang.layout) and names each annotated tile in the remarks as not
    applied. On a global tensor a `T.Layout` is the tensor's storage order, as upstream: the
    element at (i, j, ...) lives at the row-major position of layout(i, j, ...) in an array
    of the layout's output extents (attention backward's dQ, reordered for coalesced
    atomics), so every kernel that annotates the tensor the same way reads it the same way."""
    from ..layout import Fragment, Layout

    if not isinstance(layout_map, dict):
        raise _b._UserError(f"T.annotate_layout takes a dict {{tile: layout}}, got {type(layout_map).__name__}")
    tiles = []
    for buf, lay in layout_map.items():
        if not isinstance(buf, _Buffer):
            raise _b._UserError(f"T.annotate_layout: keys must be tiles (T.alloc_shared / alloc_fragment), "
                                f"got {type(buf).__name__}")
        if not (isinstance(lay, Layout) or callable(lay)):
            raise _b._UserError(f"T.annotate_layout: the layout of {buf.name} must be a Layout, a Fragment or a "
                                f"function of the indices, got {type(lay).__name__}")
        if buf.scope == "global":
            if isinstance(lay, Fragment):
                raise _b._UserError(f"T.annotate_layout: {buf.name} is a global tensor; a T.Fragment (registers of "
                                    f"threads) describes a register tile, not a tensor's storage")
            _check_injective(buf, lay)
            _emit_global_layout(buf, lay)
            continue
        if not isinstance(lay, Fragment):
            _check_injective(buf, lay)
        tiles.append(_tl.call("handle", "address_of", [buf[(0,) * len(buf.shape)].load().node]))
    if tiles:
        _b.emit(_tl.attr("layout_annotation", tiles, _b.current_span()))


def _check_injective(buf, lay, limit=1 << 16):
    """A storage order must give each element its own place: a layout that maps two logical
    indices to one physical position (`i % 64` over 128 elements) would make them alias, so
    it is refused, naming both (upstream's issue 2632). Checked by evaluating the layout's
    function on every index of a static shape of at most `limit` elements; a function that
    takes only kernel expressions (T.* calls) is not evaluated here."""
    import itertools

    from ..layout import Layout as _Layout

    if getattr(lay, "_trusted", False):  # built by tilelang.layout: a permutation by construction
        return
    fn = lay.forward_fn if isinstance(lay, _Layout) else lay
    shape = list(buf.shape)
    if fn is None or not all(isinstance(d, int) for d in shape) or _pymath.prod(shape) > limit:
        return
    seen = {}
    for idx in itertools.product(*(range(d) for d in shape)):
        try:
            out = fn(*idx)
            out = tuple(int(o) for o in (out if isinstance(out, (list, tuple)) else [out]))
        except Exception:  # noqa: BLE001 - not a function of Python integers: left to the compiler
            return
        if out in seen:
            scope = "global tensor" if buf.scope == "global" else f"{buf.scope.split('.')[0]} buffer"
            raise _b._UserError(
                f"T.annotate_layout: the layout of {scope} `{buf.name}` must be injective (one physical position "
                f"per element): logical indices {list(seen[out])} and {list(idx)} both map to physical coordinates "
                f"{list(out)}")
        seen[out] = idx


def _emit_global_layout(buf, lay):
    """"tl.global_layout"(address_of(buf[0, ...]), i0, ..., i{n-1}, out0, ...): the layout's
    output indices as expressions of one variable per input dimension (see
    src/transform/global_layouts.cc, which derives the output extents and re-indexes)."""
    from ..layout import Layout

    fn = lay.forward_fn if isinstance(lay, Layout) else lay
    if fn is None:
        raise _b._UserError(f"T.annotate_layout: the layout of global tensor {buf.name} has no index function")
    shape = lay.get_input_shape() if isinstance(lay, Layout) else None
    if shape is not None and [int(d) if isinstance(d, int) else d for d in shape] != list(buf.shape):
        raise _b._UserError(f"T.annotate_layout: the layout of {buf.name} is for shape {list(shape)}, the tensor "
                            f"has shape {list(buf.shape)}")
    ivars = [PrimExpr(_tl.var(f"{buf.name}_i{k}", "int32")) for k in range(len(buf.shape))]
    outs = fn(*ivars)
    outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
    nodes = [_tl.call("handle", "address_of", [buf[(0,) * len(buf.shape)].load().node])]
    nodes += [v.node for v in ivars] + [as_expr(o, "int32").node for o in outs]
    _b.emit(_tl.attr("tl.global_layout", nodes, _b.current_span()))


def Layout(shape, forward_fn):  # noqa: N802 - TileLang's name
    """A layout from a function of the logical indices (see tilelang.layout)."""
    from ..layout import Layout as _Layout

    return _Layout(shape, forward_fn)


def Fragment(shape, forward_fn=None, forward_thread_fn=None, replicate=1, forward_index_fn=None):  # noqa: N802
    """A register layout (see tilelang.layout)."""
    from ..layout import Fragment as _Fragment

    return _Fragment(shape, forward_fn, forward_thread_fn, replicate, forward_index_fn)


# --------------------------------------------------------------------------- scalar math

def _is_static(*xs):
    return all(isinstance(x, numbers.Number) for x in xs)


def ceildiv(a, b):
    """ceil(a / b) for integers."""
    if _is_static(a, b):
        return -(-a // b)
    return (a + b - 1) // b


cdiv = ceildiv


def floordiv(a, b):
    return a // b


def floormod(a, b):
    return a % b


def min(a, b):  # noqa: A001
    if _is_static(a, b):
        return a if a <= b else b
    return binary("min", a, b)


def max(a, b):  # noqa: A001
    if _is_static(a, b):
        return a if a >= b else b
    return binary("max", a, b)


def clamp(dst, min_val, max_val):
    """min(max(dst, min_val), max_val)."""
    return min(max(dst, min_val), max_val)


def if_then_else(cond, then_value, else_value):
    """cond ? then_value : else_value (only the chosen side is evaluated)."""
    if isinstance(cond, numbers.Number) and not isinstance(cond, PrimExpr):
        return then_value if cond else else_value
    like = next((v.dtype for v in (then_value, else_value) if isinstance(v, (PrimExpr, BufferRef))), None)
    t, f = as_expr(then_value, like), as_expr(else_value, like)
    return PrimExpr(_tl.select(as_expr(cond).node, t.node, f.node))


Select = if_then_else


def infinity(dtype_):
    """+inf of a float type (write -T.infinity(t) for -inf)."""
    return PrimExpr(_tl.call(_dt(dtype_), "infinity", []))


def max_value(dtype_):
    t = dtype(dtype_)
    if t.is_float:
        return infinity(t)
    import numpy as np
    return _vconst(int(np.iinfo(t).max), t)


def min_value(dtype_):
    t = dtype(dtype_)
    if t.is_float:
        return -infinity(t)
    import numpy as np
    return _vconst(int(np.iinfo(t).min), t)


from .tir.ir import cast  # noqa: E402,F401  (with upstream's round / sat / rbits checks)


def Cast(dtype_, value):  # noqa: N802  (TIR's spelling: the dtype comes first)
    return _cast(value, dtype_)


def _math1(name):
    def f(x):
        return call_math(name, x)
    f.__name__ = name
    f.__doc__ = f"Elementwise {name}."
    return f


exp, exp2, log, log2, sqrt, rsqrt, tanh, sigmoid, floor, ceil = (
    _math1(n) for n in ("exp", "exp2", "log", "log2", "sqrt", "rsqrt", "tanh", "sigmoid", "floor", "ceil"))
sin, cos, log10, log1p, erf, trunc = (
    _math1(n) for n in ("sin", "cos", "log10", "log1p", "erf", "trunc"))


def round(x, rounding_mode="ties-to-even"):  # noqa: A001
    """x rounded to an integral value: ties to even by default (upstream's T.round, what
    nearbyint does), or "ties-away-from-zero" (C's round)."""
    if rounding_mode is None or rounding_mode == "ties-to-even":
        return call_math("nearbyint", x)
    if rounding_mode == "ties-away-from-zero":
        return call_math("round", x)
    raise ValueError(f"Unsupported T.round rounding_mode {rounding_mode!r}; expected 'ties-to-even' or "
                     "'ties-away-from-zero'")


def fast_rcp(x):
    """An approximate 1 / x (CUDA's rcp.approx.ftz.f32, about 1 ulp; float32 only; the CPU
    target divides)."""
    v = as_expr(x, "float32")
    if str(v.dtype) != "float32":
        raise _b._UserError(f"T.fast_rcp takes a float32 value, got {v.dtype}")
    return PrimExpr(_tl.call("float32", "fast_rcp", [v.node]))


tan, sinh, cosh, asin, acos, atan, asinh, acosh, atanh, exp10, expm1, nearbyint = (
    _math1(n) for n in ("tan", "sinh", "cosh", "asin", "acos", "atan", "asinh", "acosh", "atanh", "exp10", "expm1",
                        "nearbyint"))


def _math2(name):
    def f(x, y):
        return call_math(name, x, y)
    f.__name__ = name
    f.__doc__ = f"Elementwise {name} of two values (computed in their common type)."
    return f


atan2, hypot, copysign, fmod, nextafter = (_math2(n) for n in ("atan2", "hypot", "copysign", "fmod", "nextafter"))


def fma(a, b, c):
    """a * b + c, rounded once."""
    return call_math("fma", a, b, c)


def fmul(a, b):
    """a * b rounded to nearest, never fused with a later add into an fma (on CUDA
    __fmul_rn / mul.rn; on the CPU also under compile_flags=["--use_fast_math"]). Floating-point
    operands of one type, as upstream's."""
    from .values import _like

    like = _like(a) or _like(b)
    x, y = as_expr(a, like), as_expr(b, like)
    for v in (x, y):
        if not str(v.dtype).startswith(("float", "bfloat")):
            raise _b._UserError(f"T.fmul: takes floating-point values, got {v.dtype}")
    if str(x.dtype) != str(y.dtype):
        raise _b._UserError(f"T.fmul: both values must have one type, got {x.dtype} and {y.dtype}")
    return call_math("fmul", x, y)


def ldexp(x1, x2):
    """x1 * 2 ** x2: x1 a floating-point value (its type is the result's), x2 an integer
    exponent (as int32)."""
    x = as_expr(x1)
    if not str(x.dtype).startswith(("float", "bfloat")):
        raise _b._UserError(f"T.ldexp: x1 must be a floating-point value, got {x.dtype}")
    e = as_expr(x2, "int32")
    if not str(e.dtype).startswith(("int", "uint")):
        raise _b._UserError(f"T.ldexp: x2 must be an integer exponent, got {e.dtype}")
    return PrimExpr(_tl.call(str(x.dtype), "ldexp", [x.node, _cast(e, "int32").node]))


def isnullptr(x):
    """Whether pointer `x` (a T.ptr parameter, or an address) is null."""
    p = as_expr(x)
    if str(p.node.dtype) != "handle":
        raise _b._UserError(f"T.isnullptr takes a pointer, got a value of type {p.node.dtype}")
    return PrimExpr(_tl.call("bool", "isnullptr", [p.node]))


def fabs(x):
    """Absolute value (TIR's name for T.abs of a float)."""
    return abs(x)


def _bit_count(name, what):
    def f(x):
        v = as_expr(x, "int32")
        if not str(v.dtype).startswith(("int", "uint")):
            raise _b._UserError(f"T.{name} counts the {what} bits of an integer, got {v.dtype}")
        return PrimExpr(_tl.call("int32", name, [v.node]))
    f.__name__ = name
    f.__doc__ = f"The number of {what} bits of an integer (int32)."
    return f


popcount = _bit_count("popcount", "set")
clz = _bit_count("clz", "leading zero")


def truncdiv(a, b):
    """Integer division rounding toward zero (C's /)."""
    return binary("div", a, b)


def truncmod(a, b):
    """The remainder of truncdiv (C's %: the sign of the dividend)."""
    return binary("mod", a, b)


_ROUNDING_MODES = {"rn": 0, "rz": 1, "ru": 2, "rd": 3}


def _ieee(name, operands, rounding_mode=None):
    """A float operation in an explicit IEEE rounding mode: rn (to nearest even), rz (toward
    zero), ru (up), rd (down); float and double take all four, 16-bit floats rn only."""
    if rounding_mode is not None and rounding_mode not in _ROUNDING_MODES:
        raise ValueError(f"Invalid rounding mode {rounding_mode!r} for T.{name}: expected one of "
                         f"{', '.join(_ROUNDING_MODES)}")
    like = next((str(o.dtype) for o in operands if hasattr(o, "dtype")), "float32")
    values = [as_expr(o, like) for o in operands]
    t = str(values[0].dtype)
    if not t.startswith(("float", "bfloat")) or any(str(v.dtype) != t for v in values):
        raise _b._UserError(f"T.{name} takes float operands of one type, got "
                            f"{', '.join(str(v.dtype) for v in values)}")
    if t.startswith("float8"):
        raise _b._UserError(f"T.{name}: float8 operands are not supported, got {t}")
    if name == "ieee_frsqrt" and t == "float64":
        raise _b._UserError("T.ieee_frsqrt: frsqrt is not supported for float64 (CUDA has no correctly "
                            "rounded double rsqrt)")
    args = [v.node for v in values]
    if rounding_mode is not None:
        if t in ("float16", "bfloat16") and rounding_mode != "rn":
            raise _b._UserError(f"T.{name}: Only rounding mode 'rn' is available for half precision "
                                f"({t}), got {rounding_mode!r}")
        args.append(as_expr(_ROUNDING_MODES[rounding_mode], "int32").node)
    return PrimExpr(_tl.call(t, name, args))


def ieee_add(x, y, rounding_mode="rn"):
    """x + y rounded as `rounding_mode` says (rn, rz, ru, rd)."""
    return _ieee("ieee_add", [x, y], rounding_mode)


def ieee_sub(x, y, rounding_mode="rn"):
    """x - y rounded as `rounding_mode` says."""
    return _ieee("ieee_sub", [x, y], rounding_mode)


def ieee_mul(x, y, rounding_mode="rn"):
    """x * y rounded as `rounding_mode` says."""
    return _ieee("ieee_mul", [x, y], rounding_mode)


def ieee_fmaf(x, y, z, rounding_mode="rn"):
    """x * y + z, rounded once as `rounding_mode` says."""
    return _ieee("ieee_fmaf", [x, y, z], rounding_mode)


def ieee_frcp(x, rounding_mode="rn"):
    """1 / x rounded as `rounding_mode` says."""
    return _ieee("ieee_frcp", [x], rounding_mode)


def ieee_fsqrt(x, rounding_mode="rn"):
    """sqrt(x) rounded as `rounding_mode` says."""
    return _ieee("ieee_fsqrt", [x], rounding_mode)


def ieee_frsqrt(x):
    """1 / sqrt(x) rounded to nearest (no other mode; float32 and 16-bit floats)."""
    return _ieee("ieee_frsqrt", [x])


def ieee_fdiv(x, y, rounding_mode="rn"):
    """x / y rounded as `rounding_mode` says."""
    return _ieee("ieee_fdiv", [x, y], rounding_mode)


def likely(cond):
    """A hint that `cond` is usually true: the condition itself here."""
    return as_expr(cond, "bool")


def abs(x):  # noqa: A001
    if isinstance(x, numbers.Number):
        return x if x >= 0 else -x
    return call_math("abs", x)


def pow(x, y):  # noqa: A001
    return call_math("pow", x, y)


def get_thread_binding(dim=0):
    """This thread's index along dimension `dim` of the block (threadIdx.x/y/z on CUDA).
    Thread-level code is for the CUDA target: the CPU target runs a block as one sequence."""
    _b.require_kernel("T.get_thread_binding")
    if dim not in (0, 1, 2):
        raise _b._UserError(f"T.get_thread_binding: dim must be 0, 1 or 2, got {dim!r}")
    return PrimExpr(_tl.call("int32", "thread_binding", [_tl.const_int(dim, "int32")]))


def _launch(what):
    _b.require_kernel(what)
    launch = getattr(_b.current(), "launch", None)
    if launch is None:
        raise _b._UserError(f"{what} is for the body of a `with T.Kernel(...)`")
    return launch


def _check_dim(what, dim):
    if dim not in (0, 1, 2):
        raise _b._UserError(f"{what}: dim must be 0, 1 or 2, got {dim!r}")


def launch_thread(name, extent):
    """TVM's `tx = T.launch_thread("threadIdx.x", 256)` inside a T.Kernel: this thread's
    index along that dimension (the block's extent there must be `extent`); blockIdx.* gives
    the block's index."""
    dims = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2, "blockIdx.x": 0, "blockIdx.y": 1, "blockIdx.z": 2}
    if name not in dims:
        raise _b._UserError(f"T.launch_thread: expected threadIdx.x/y/z or blockIdx.x/y/z, got {name!r}")
    vars_, grid, threads = _launch("T.launch_thread")
    d = dims[name]
    if name.startswith("threadIdx"):
        if isinstance(extent, numbers.Integral) and extent != threads[d]:
            raise _b._UserError(f"T.launch_thread({name!r}, {extent}): the kernel launches {threads[d]} threads "
                                f"along that dimension")
        return get_thread_binding(d)
    return get_block_binding(d)


def get_thread_bindings():
    """This thread's index along each of the block's 3 dimensions."""
    return [get_thread_binding(d) for d in range(3)]


def get_block_binding(dim=0):
    """This block's index along grid dimension `dim` (blockIdx.x/y/z); 0 along a dimension
    the kernel does not launch."""
    _check_dim("T.get_block_binding", dim)
    vars_, _, _ = _launch("T.get_block_binding")
    return PrimExpr(vars_[dim]) if dim < len(vars_) else 0


def get_block_bindings():
    """This block's index along each of the 3 grid dimensions."""
    return [get_block_binding(d) for d in range(3)]


def get_block_extent(dim=0):
    """The grid's extent along `dim` (1 along a dimension the kernel does not launch): an int
    when static, else the expression T.Kernel was given."""
    _check_dim("T.get_block_extent", dim)
    _, grid, _ = _launch("T.get_block_extent")
    if dim >= len(grid):
        return 1
    v = grid[dim].const_value
    return v if isinstance(v, numbers.Integral) and not isinstance(v, _builtins.bool) else PrimExpr(grid[dim])


def get_block_extents():
    return [get_block_extent(d) for d in range(3)]


def get_thread_extent(dim=0):
    """The block's thread count along `dim` (T.Kernel's threads=, 1 along a dimension not given)."""
    _check_dim("T.get_thread_extent", dim)
    _, _, threads = _launch("T.get_thread_extent")
    return _builtins.int(threads[dim]) if dim < len(threads) else 1


def get_thread_extents():
    return [get_thread_extent(d) for d in range(3)]


def get_num_threads():
    """The block's total thread count."""
    n = 1
    for d in range(3):
        n *= get_thread_extent(d)
    return n


def thread_binding(begin, end=None, thread="threadIdx.x", annotations=None):
    """Upstream's TIR spelling, ``tx = T.thread_binding(0, n, thread="threadIdx.x")``: this
    thread's index along that block dimension, plus `begin`. The block's thread count along
    it comes from T.Kernel(threads=...); `end` is only a statement of it."""
    _b.require_kernel("T.thread_binding")
    dims = {"threadIdx.x": 0, "threadIdx.y": 1, "threadIdx.z": 2}
    if thread not in dims:
        raise _b._UserError(f"T.thread_binding: thread must be one of {', '.join(dims)}, got {thread!r} "
                            "(blocks are T.Kernel's, not thread bindings)")
    t = get_thread_binding(dims[thread])
    return t if isinstance(begin, int) and begin == 0 else t + begin


def get_lane_idx(warp_size=None):
    """This thread's lane in its warp: thread index % warp_size (32 by default)."""
    return get_thread_binding(0) % (32 if warp_size is None else warp_size)


def get_warp_idx_sync(warp_size=None):
    """This thread's warp in the block: thread index // warp_size (32 by default)."""
    return get_thread_binding(0) // (32 if warp_size is None else warp_size)


get_warp_idx = get_warp_idx_sync


def get_warp_group_idx(warp_size=None, warps_per_group=None):
    """This thread's warp group: thread index // (warp_size * warps_per_group) (32 * 4 by default)."""
    return get_thread_binding(0) // ((32 if warp_size is None else warp_size) *
                                     (4 if warps_per_group is None else warps_per_group))


def _warp_reduce(kind, value):
    _b.require_kernel(f"T.warp_reduce_{kind}")
    v = as_expr(value)
    if kind in ("bitand", "bitor") and not v.dtype.startswith(("int", "uint")):
        raise _b._UserError(f"T.warp_reduce_{kind} takes an integer value, got {v.dtype}")
    return PrimExpr(_tl.call(v.dtype, f"warp_reduce_{kind}", [v.node, _tl.const_int(32, "int32")]))


def shfl_xor(value, lane_mask, width=32):
    """`value` from lane (this lane XOR lane_mask) of the warp (__shfl_xor_sync, all lanes)."""
    return _shuffle("shfl_xor", value, lane_mask, width)


def shfl_down(value, offset, width=32):
    """`value` from lane (this lane + offset) of the warp (__shfl_down_sync, all lanes)."""
    return _shuffle("shfl_down", value, offset, width)


def shfl_up(value, offset, width=32):
    """`value` from lane (this lane - offset) of the warp (__shfl_up_sync, all lanes)."""
    return _shuffle("shfl_up", value, offset, width)


def shfl_sync(value, src_lane, width=32):
    """`value` from lane src_lane of the warp (__shfl_sync, all lanes)."""
    return _shuffle("shfl_sync", value, src_lane, width)


def _shuffle(kind, value, lane, width):
    _b.require_kernel(f"T.{kind}")
    v = as_expr(value)
    return PrimExpr(_tl.call(v.dtype, kind, [v.node, as_expr(lane, "int32").node, as_expr(width, "int32").node]))


def bitwise_and(a, b):
    return binary("bitand", a, b)


def bitwise_or(a, b):
    return binary("bitor", a, b)


def bitwise_xor(a, b):
    return binary("bitxor", a, b)


def shift_left(a, b):
    return binary("shl", a, b)


def shift_right(a, b):
    return binary("shr", a, b)


def bitwise_not(a):
    return ~as_expr(a)


def warp_reduce_sum(value):
    """The sum of `value` over the 32 lanes of this thread's warp, returned to every lane.
    All lanes of the warp must call it together (not under a lane-dependent branch)."""
    return _warp_reduce("sum", value)


def warp_reduce_max(value):
    """The maximum of `value` over the lanes of the warp (see warp_reduce_sum)."""
    return _warp_reduce("max", value)


def warp_reduce_min(value):
    """The minimum of `value` over the lanes of the warp (see warp_reduce_sum)."""
    return _warp_reduce("min", value)


def warp_reduce_bitand(value):
    """The bitwise and of an integer `value` over the lanes of the warp."""
    return _warp_reduce("bitand", value)


def warp_reduce_bitor(value):
    """The bitwise or of an integer `value` over the lanes of the warp."""
    return _warp_reduce("bitor", value)


# --------------------------------------------------------------------------- hints and compatibility

def let(var, value):
    """``v = T.int32(); T.let(v, expr)``: binds the variable made by ``T.<dtype>()`` to `expr`
    for the statements that follow."""
    _b.require_kernel("T.let")
    if not isinstance(var, PrimExpr) or not var.node.is_var:
        raise _b._UserError(f"T.let binds a variable made by T.<dtype>() (e.g. v = T.int32()), got {var!r}")
    _b.emit(_tl.let(var.node, as_expr(value, var.dtype).node, _b.current_span()))


def align_up(x, alignment):
    """The smallest multiple of `alignment` that is >= x (integers)."""
    if _is_static(x, alignment):
        return -(-x // alignment) * alignment
    return ((x + alignment - 1) // alignment) * alignment


def assume(cond):
    """A fact the program guarantees (``T.assume(0 <= l + i and l + i < N)``), from this
    statement to the end of its block. Comparisons in it (joined by ``and``) let the compiler
    drop the range guards of global accesses they imply; it trusts them, as upstream does. One
    over the kernel's scalar parameters and dynamic sizes only (``N % 4 == 0``) is checked
    before each launch (RuntimeError "Assume: ..."). A compile-time False is an error."""
    if isinstance(cond, numbers.Number) and not isinstance(cond, PrimExpr):
        if not cond:
            raise _b._UserError("T.assume: the condition is False at compile time")
        return None
    v = as_expr(cond)
    if v.dtype != "bool":
        raise _b._UserError(f"T.assume takes a condition (a bool expression), got a {v.dtype} value")
    _b.emit(_tl.attr("tl.assume", [v.node], _b.current_span()))
    _b.current().assumptions.append(repr(v.node))
    return None


_remark = _hints_module.remark


def annotate_pass_configs(configs):
    """Pass configurations the function is compiled with (as tilelang.compile's
    pass_configs=, which override them): ``T.annotate_pass_configs({PassConfigKey.X: v})``.
    Read in the function body; they become its attrs["tilelang_pass_configs"]."""
    if not isinstance(configs, dict):
        raise _b._UserError(f"T.annotate_pass_configs takes a dict {{key: value}}, got {type(configs).__name__}")
    for k in configs:
        if not isinstance(k, str):
            raise _b._UserError(f"T.annotate_pass_configs: keys are PassConfigKey members or strings, got {k!r}")
    b = _b.current()
    b.pass_configs = dict(b.pass_configs or {}, **configs)


def annotate_compile_flags(flags):
    """Flags for the device compiler, added to tilelang.compile's compile_flags=:
    ``T.annotate_compile_flags(["--use_fast_math"])`` (one string is one flag). They become
    the function's attrs["tilelang_compile_flags"]."""
    if isinstance(flags, str):
        flags = [flags]
    if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
        raise _b._UserError(f"T.annotate_compile_flags takes a list of strings, got {flags!r}")
    b = _b.current()
    b.compile_flags = list(b.compile_flags or []) + list(flags)


class CommReducer:
    """``T.comm_reducer(combiner, identities)``: TVM's description of a reduction, read by
    T.attr(..., "reduce_scope", ...)."""

    def __init__(self, combiner, identities):
        self.combiner, self.identities = combiner, list(identities)


def comm_reducer(combiner, identities):
    if not callable(combiner):
        raise _b._UserError(f"T.comm_reducer takes a combining function (e.g. lambda x, y: x + y), got {combiner!r}")
    return CommReducer(combiner, identities)


_ALLREDUCE_HELP = ("reduce across a block's threads with tile operations instead: write each thread's value into "
                   "a T.alloc_fragment tile and T.reduce_sum / T.reduce_max it, or use T.warp_reduce_sum / "
                   "T.warp_reduce_max within a warp")


def attr(node, key, value):
    """TVM's attribute statement. Its one use in upstream's kernels,
    ``with T.attr(T.comm_reducer(...), "reduce_scope", ...)`` around T.tvm_thread_allreduce,
    is a cross-thread reduction (tilelang/language/allreduce.py); other keys are TVM pass
    internals, refused."""
    if key == "reduce_scope":
        from .allreduce import ReduceScope

        if not isinstance(node, CommReducer):
            raise _b._UserError("T.attr(reducer, \"reduce_scope\", ...): the first argument must be a "
                                "T.comm_reducer(...)")
        return ReduceScope(node)
    raise _b._UserError(f"T.attr(..., {key!r}, ...): TVM attribute statements are not supported by this compiler "
                        "(they are TVM pass internals)")


def tvm_thread_allreduce(size, value, cond, out, *reduce_vars, dtype=None):
    """TVM's cross-thread reduction, inside ``with T.attr(T.comm_reducer(...), "reduce_scope",
    ...)``: `out` gets the reducer's combination of `value` over the threads that differ only
    in the thread index `reduce_vars[0]` (tilelang/language/allreduce.py)."""
    from .allreduce import thread_allreduce

    _b.require_kernel("T.tvm_thread_allreduce")
    reducer = getattr(_b.current(), "reduce_scope", None)
    if reducer is None:
        raise _b._UserError("T.tvm_thread_allreduce must be inside `with T.attr(T.comm_reducer(...), "
                            "\"reduce_scope\", ...)`; " + _ALLREDUCE_HELP)
    thread_allreduce(reducer, size, value, cond, out, reduce_vars)
    return None


def func_attr(attrs):
    """Upstream: attributes of the function (TVM's, e.g. {"tir.noalias": True}). Nothing here
    reads them; accepted and named in the remarks."""
    if not isinstance(attrs, dict):
        raise _b._UserError(f"T.func_attr takes a dict of attributes, got {type(attrs).__name__}")
    _remark(f"T.func_attr({', '.join(map(str, attrs))}): accepted, no effect here")


def annotate_l2_hit_ratio(hit_ratio_map):
    """A hint that these global tensors should persist in the L2 cache (upstream sets a
    persisting access-policy window on the stream for them): ``T.annotate_l2_hit_ratio({B:
    0.8})``, ratios in (0, 1]. Checked, then noted in the remarks: this compiler does not set
    the window, so the kernel computes the same and the cache behaves as without the hint."""
    _b.require_kernel("T.annotate_l2_hit_ratio")
    if not isinstance(hit_ratio_map, dict):
        raise _b._UserError(f"T.annotate_l2_hit_ratio takes a dict {{tensor: ratio}}, got "
                            f"{type(hit_ratio_map).__name__}")
    for buf, ratio in hit_ratio_map.items():
        if not isinstance(buf, _Buffer) or buf.scope != "global":
            raise _b._UserError(f"T.annotate_l2_hit_ratio: the keys are global tensors, got {buf!r}")
        if not isinstance(ratio, numbers.Real) or not 0 < ratio <= 1:
            raise _b._UserError(f"T.annotate_l2_hit_ratio: the ratio of {buf.name} must be a number in (0, 1], "
                                f"got {ratio!r}")
        _remark(f"T.annotate_l2_hit_ratio({{{buf.name}: {ratio}}}): noted, no L2 persisting window is set "
                "(the hint changes cache behaviour only)")


def annotate_safe_value(safe_value_map):
    """The value that out-of-range element reads of each global tensor give (instead of 0),
    for the element accesses after this statement: ``T.annotate_safe_value({A: -inf})``."""
    if not isinstance(safe_value_map, dict):
        raise _b._UserError(f"T.annotate_safe_value takes a dict {{tensor: value}}, got "
                            f"{type(safe_value_map).__name__}")
    for buf, value in safe_value_map.items():
        if not isinstance(buf, _Buffer):
            raise _b._UserError(f"T.annotate_safe_value: the keys are tensors, got {buf!r}")
        v = as_expr(value, buf.dtype)
        _emit_safe_value(buf, v)
        _b.current().safe_values[id(buf.node)] = (buf, v)


def _emit_safe_value(buf, value):
    first = buf[tuple(0 for _ in buf.shape)].load()  # names the tensor in the IR
    if value is None:
        _b.emit(_tl.attr("tl.safe_value_clear", [first.node], _b.current_span()))
    else:
        _b.emit(_tl.attr("tl.safe_value", [first.node, value.node], _b.current_span()))


class _SBlock:
    """T.sblock: a lexical scope (TVM's block, without its iteration variables). Its own
    T.annotate_safe_value settings end with it; T.reads / T.writes inside are accepted."""

    def __init__(self, name=""):
        self.name = name

    def __enter__(self):
        _b.require_kernel("T.sblock")
        self._saved = dict(_b.current().safe_values)
        return None

    def __exit__(self, *exc):
        if exc[0] is None:
            now = _b.current().safe_values
            for key, (buf, value) in list(now.items()):
                before = self._saved.get(key)
                if before is None:
                    _emit_safe_value(buf, None)
                elif before[1] is not value:
                    _emit_safe_value(buf, before[1])
            _b.current().safe_values = self._saved
        return False


def sblock(name=""):
    """A lexical scope for T.annotate_safe_value (upstream's T.sblock)."""
    return _SBlock(name)


def reads(*regions):
    """TVM's block read regions: accepted (the compiler finds what a block reads)."""
    return None


def writes(*regions):
    """TVM's block write regions: accepted (the compiler finds what a block writes)."""
    return None


def disable_warp_group_reg_alloc():
    """Upstream: no setmaxnreg register reallocation between warp groups. Accepted and not
    applied here (warp-specialized loops always reallocate, 24 producer / up to 240 consumer
    registers); noted in the remarks."""
    _remark("T.disable_warp_group_reg_alloc(): accepted, not applied; warp-specialized loops still reallocate "
            "registers between the producer and consumer warp groups")


def set_max_nreg(reg_count, is_inc):
    """setmaxnreg for the warpgroup that runs it: its register budget per thread raised
    (is_inc true) or lowered to `reg_count` (a multiple of 8 in [24, 256]). Applied on sm_90a
    in a kernel that programs its own barriers, under a branch selecting whole warpgroups;
    elsewhere dropped with a remark saying why (the C++ pass cuda-explicit-warp-specialize
    decides). The CPU target ignores it."""
    _b.require_kernel("T.set_max_nreg")
    if not isinstance(reg_count, numbers.Integral) or isinstance(reg_count, _builtins.bool) or reg_count % 8 \
            or not 24 <= reg_count <= 256:
        raise _b._UserError(f"T.set_max_nreg: reg_count must be a multiple of 8 in [24, 256], got {reg_count!r}")
    if not isinstance(is_inc, (_builtins.bool, numbers.Integral)) or _builtins.int(is_inc) not in (0, 1):
        raise _b._UserError(f"T.set_max_nreg: is_inc must be 0 or 1 (lower or raise the budget), got {is_inc!r}")
    _b.emit(_tl.evaluate(_tl.call("void", "set_max_nreg", [_tl.const_int(_builtins.int(reg_count), "int32"),
                                                          _tl.const_int(_builtins.int(is_inc), "int32")]),
                         _b.current_span()))


def inc_max_nreg(reg_count):
    """T.set_max_nreg(reg_count, 1): raise this warpgroup's register budget."""
    set_max_nreg(reg_count, 1)


def dec_max_nreg(reg_count):
    """T.set_max_nreg(reg_count, 0): lower this warpgroup's register budget."""
    set_max_nreg(reg_count, 0)


def get_mma_micro_size(dtype="float16"):
    """(16, 16, k): the rows, columns and reduction depth of one mma.sync tile for operands of
    `dtype`, k = 32 for 8-bit types and 16 otherwise (upstream's helper of the same name)."""
    t = _canonical(dtype)
    eight_bit = t in ("int8", "uint8") or t.startswith("float8")
    return 16, 16, 32 if eight_bit else 16


def dp4a(A, B, C):
    """C += A[0:4] . B[0:4]: the dot product of four int8 values at A and four at B (along
    the last dimension from the given elements), accumulated into the int32 element C, as
    upstream's T.dp4a. Written as element arithmetic (both targets; nvcc forms dp4a from it
    where it can)."""
    def point(ref, want, what):
        if isinstance(ref, _Buffer):
            ref = ref[tuple(0 for _ in ref.shape)]
        if not isinstance(ref, BufferRef) or not ref.is_point:
            raise _b._UserError(f"T.dp4a: {what} must be an element of a buffer (A_local[i, k]), got {ref!r}")
        if str(ref.buffer.dtype) != want:
            raise _b._UserError(f"T.dp4a requires {want} {what}, got {ref.buffer.dtype}")
        return ref

    a, b, c = point(A, "int8", "A"), point(B, "int8", "B"), point(C, "int32", "C")
    total = c.load()
    for t in range(4):
        ai = a.items[:-1] + [a.items[-1] + t]
        bi = b.items[:-1] + [b.items[-1] + t]
        total = total + _cast(a.buffer[tuple(ai)].load(), "int32") * _cast(b.buffer[tuple(bi)].load(), "int32")
    _b.emit(_tl.store(c.buffer.node, [as_expr(i, "int32").node for i in c.items], total.node, _b.current_span()))


def annotate_min_blocks_per_sm(n):
    """The second argument of the CUDA kernel's ``__launch_bounds__(threads, n)``: at least
    `n` blocks should fit on an SM, so the compiler limits registers to allow it (1 without
    it). Set for the whole function, as the pass config "tl.min_blocks_per_sm"; the CPU
    target ignores it."""
    import builtins
    import numbers  # (`int` and `bool` are dtypes here)

    if isinstance(n, builtins.bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise _b._UserError(f"T.annotate_min_blocks_per_sm takes a positive int, got {n!r}")
    b = _b.current()
    b.pass_configs = dict(b.pass_configs or {}, **{"tl.min_blocks_per_sm": str(n)})


def pdl_trigger():
    """Programmatic dependent launch: lets the next kernel in the stream start early
    (griddepcontrol.launch_dependents on sm_90+), if that kernel waits for this one with
    T.pdl_sync (kernels with T.pdl_sync are launched with programmatic stream serialization
    allowed, as upstream launches them)."""
    _b.require_kernel("T.pdl_trigger")
    _b.emit(_tl.evaluate(_tl.call("void", "pdl_trigger", []), _b.current_span()))
    _remark("T.pdl_trigger(): griddepcontrol.launch_dependents on sm_90+; a next kernel that waits with "
            "T.pdl_sync may start once every block of this one has passed it")


def pdl_sync():
    """Programmatic dependent launch: waits until the previous kernel's results are visible
    (griddepcontrol.wait on sm_90+; the kernel's pointers lose __restrict__, as upstream's).
    The kernel is launched with programmatic stream serialization allowed, so it may start
    before the previous kernel in the stream ends: the work before T.pdl_sync overlaps it."""
    _b.require_kernel("T.pdl_sync")
    _b.emit(_tl.evaluate(_tl.call("void", "pdl_sync", []), _b.current_span()))
    _remark("T.pdl_sync(): griddepcontrol.wait on sm_90+; the kernel is launched with programmatic "
            "dependent launch (cuLaunchKernelEx), so it may start before the previous kernel ends")


def _elements_of(x, what):
    """The loads of every element of a buffer or static region, for small unrolled folds."""
    import itertools

    if isinstance(x, _Buffer):
        x = x[tuple(slice(None) for _ in x.shape)]
    if not isinstance(x, BufferRef):
        raise _b._UserError(f"{what} takes a buffer or a buffer region, got {type(x).__name__}")
    ranges = []
    for dim, it in enumerate(x.items):
        if isinstance(it, slice):
            start = 0 if it.start is None else it.start
            stop = x.buffer.shape[dim] if it.stop is None else it.stop
            ext = _tl.simplify(as_expr(stop - start, "int32").node).const_value
            if not isinstance(ext, int):
                raise _b._UserError(f"{what}: the region of {x.buffer.name} needs a compile-time extent")
            if ext > 1024:
                raise _b._UserError(f"{what}: the region of {x.buffer.name} has {ext} elements along dim {dim}; "
                                    "at most 1024 are supported")
            ranges.append([start + k for k in range(ext)])
        else:
            ranges.append([it])
    return [x.buffer[tuple(idx)].load() for idx in itertools.product(*ranges)]


def _truth(v):
    return v if v.dtype == "bool" else v != _vconst(0, v.dtype)


def any_of(buffer):
    """True when any element of the buffer (or region) is nonzero."""
    _b.require_kernel("T.any_of")
    elems = _elements_of(buffer, "T.any_of")
    out = _truth(elems[0])
    for e in elems[1:]:
        out = binary("or", out, _truth(e))
    return out


def all_of(buffer):
    """True when every element of the buffer (or region) is nonzero."""
    _b.require_kernel("T.all_of")
    elems = _elements_of(buffer, "T.all_of")
    out = _truth(elems[0])
    for e in elems[1:]:
        out = binary("and", out, _truth(e))
    return out


def device_assert(cond, msg=""):
    """Checks a condition inside the kernel. A compile-time condition is checked when the
    kernel is compiled; see docs in COMPATIBILITY.md for run-time conditions."""
    from ..frontend.asserts import emit_assert

    emit_assert(cond, msg)


def isfinite(x):
    """True when x is neither infinite nor NaN."""
    v = as_expr(x)
    if not v.dtype.is_float:
        return _vconst(True, "bool")
    return PrimExpr(_tl.call("bool", "isfinite", [v.node]))


def isnan(x):
    """True when x is NaN."""
    v = as_expr(x)
    if not v.dtype.is_float:
        return _vconst(False, "bool")
    return binary("ne", v, v)


def isinf(x):
    v = as_expr(x)
    if not v.dtype.is_float:
        return _vconst(False, "bool")
    inf = infinity(v.dtype)
    return binary("or", binary("eq", v, inf), binary("eq", v, -inf))


class _VarType(type):
    def __instancecheck__(cls, x):
        return isinstance(x, PrimExpr) and _builtins.bool(x.node.is_var)


class Var(metaclass=_VarType):
    """``T.Var("n", T.int32)``: a symbolic scalar (as T.dynamic); ``isinstance(x, T.Var)`` is
    True for such variables (and loop / block indices)."""

    def __new__(cls, name, dtype="int32"):
        return dynamic(name, dtype)


class Ref:
    """``x: T.Ref`` on a @T.macro parameter: the argument is a variable (T.alloc_var) or an
    element (``A[i]``) that assignments to x inside the macro write. (``x: T.Var`` takes a
    variable only.)"""


from .fastmath import __cos, __exp, __exp10, __log, __log2, __log10, __sin, __tan  # noqa: E402,F401
from .tileops_extra import c2d_im2col, cummax, im2col, reduce_bitand, reduce_bitor, reduce_bitxor, transpose  # noqa: E402,F401
from .reducer import alloc_reducer, finalize_reducer, reducer_init, reducer_update  # noqa: E402,F401
from .views import reshape, view  # noqa: E402,F401
from .pointers import handle, make_tensor, make_tensor_from_addr, match_buffer, ptr  # noqa: E402,F401
from .extern import (  # noqa: E402,F401
    CUDASourceCodeKernel,
    access_ptr,
    address_of,
    annotate_restrict_buffers,
    call_extern,
    import_source,
)


def index_to_coordinates(index, shape):
    """The row-major coordinates of flat `index` in `shape` (one per dimension)."""
    coordinates = []
    for extent in reversed(list(shape)):
        coordinates.append(index % extent)
        index = index // extent
    return coordinates[::-1]


def loop_break():
    """Leaves the innermost loop, as Python's `break` does in a kernel (upstream's name)."""
    _b.require_kernel("T.loop_break")
    _b.emit(_tl.break_(_b.current_span()))
from .random import rng_init, rng_rand, rng_rand_float  # noqa: E402,F401
from .bits import (  # noqa: E402,F401
    __ldg, ldg32, ldg64, ldg128, ldg256, lds32, lds64, lds128, reinterpret, stg32, stg64, stg128, stg256, sts32,
    sts64, sts128)
from .tile_schedule import PersistentTileScheduler  # noqa: E402,F401
from .barriers import (  # noqa: E402,F401
    WsSpec, alloc_barrier, alloc_cluster_barrier, annotate_consumer_reg_alloc, annotate_producer_reg_dealloc,
    barrier_arrive, barrier_wait, ptx_arrive_cluster_barrier,
    cp_async_barrier_noinc, fence_proxy_async, mbarrier_arrive, mbarrier_arrive_expect_tx, mbarrier_expect_tx,
    mbarrier_wait_parity, no_set_max_nreg, ptx_commit_group, ptx_cp_async, ptx_wait_group, shuffle_elect, tma_copy,
    tma_store_arrive, tma_store_wait, wait_wgmma, ws)
from .barriers import WsSpec as WarpSpecializeFrame, ws as WarpSpecialize  # noqa: E402,F401
from .upstream_only import *  # noqa: E402,F401,F403  (upstream names refused at the user's line)
from .sparse_gemm import gemm_sp  # noqa: E402,F401
from .clusters import (  # noqa: E402,F401
    block_rank_in_cluster, cluster_arrive, cluster_arrive_relaxed, cluster_sync, cluster_wait, get_cluster_dims,
    get_cluster_extent, get_cluster_extents, get_cluster_id, get_cluster_ids, get_cluster_size)
from .packed_x2 import abs2, add2, extract_lane, fma2, max2, min2, mul2, sub2  # noqa: E402,F401
from .meta import inline, meta_class  # noqa: E402,F401
from .warp_vote import (  # noqa: E402,F401
    __ffs, __fns, activemask, all_sync, any_sync, ballot, ballot_sync, match_all_sync, match_any_sync,
    syncthreads_and, syncthreads_count, syncthreads_or)

_C_NAMES = {"int": int32, "long": int64, "short": int16, "uint": uint32, "ulong": uint64}
# Names upstream's T has that live in modules imported only when asked for: the types of a
# @T.prim_func and a @tilelang.jit function, and the warp-level mma.sync emitter.
_LAZY_NAMES = {
    "PrimFunc": ("tilelang.frontend.parser", "PrimFunc"),
    "JITFunc": ("tilelang.jit", "JITImpl"),
    "TensorCoreIntrinEmitter": ("tilelang.cuda.intrinsics.macro.mma_macro_generator", "TensorCoreIntrinEmitter"),
}


def __getattr__(name):
    # T.int, T.long, ...: upstream exports the C names as dtypes. Module attributes only, so
    # the builtins int() etc. stay what this module's own code calls.
    if name in _C_NAMES:
        return _C_NAMES[name]
    if name in _LAZY_NAMES:
        import importlib

        module, attr = _LAZY_NAMES[name]
        return getattr(importlib.import_module(module), attr)
    from .dtypes import _split_lanes

    base, lanes = _split_lanes(name)
    # T.float32x2, T.float4_e2m1fnx2: vector dtypes (not of the one-fp4-per-byte storage type,
    # which upstream keeps scalar)
    if lanes > 1 and base != "float4_e2m1_unpacked":
        return dtype(name)
    raise AttributeError(f"module 'tilelang.language' has no attribute {name!r}")


__all__ = [n for n in dir() if not n.startswith("_")]
