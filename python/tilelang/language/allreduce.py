"""TVM's low-level cross-thread reduction, as upstream's GEMV and dequantization kernels
write it:

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.cast(0, acc_dtype)]), "reduce_scope",
                T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), value, True, out[0], tk, dtype="handle"))

Every thread's `value` is combined over the threads that differ only in the reduced thread
index `tk` (a T.get_thread_binding / T.thread_binding value), and each thread gets its
group's result in `out`. Here it becomes plain statements: each thread writes its value
into a shared workspace, and each thread folds its group's entries with the reducer's
function from its identity. The barrier pass orders the writes before the reads, so the
same program runs on the CPU target (threads in lockstep) and on CUDA.

When each group is a power-of-two run of lanes within one warp (the reduced index is
threadIdx.x, or sits below a power-of-two lower dimension, and the block is whole warps),
the groups combine through a butterfly of warp shuffles instead: log2(n) shuffle + combine
steps, no shared memory, no barrier. Partners combine the same two values (the reducer is
commutative), so every lane of a group still gets the same result."""
from __future__ import annotations

from .. import _tl
from . import builder as _b
from .values import BufferRef, PrimExpr, as_expr


class ScopeHandle:
    """``T.reinterpret(x, dtype="handle")``: an opaque pointer value, which only T.attr's
    "reduce_scope" takes (and ignores); anywhere else it is an error at the line."""

    not_a_value = ("T.reinterpret(..., dtype=\"handle\") is an opaque pointer, only accepted as the value of "
                   "T.attr(reducer, \"reduce_scope\", ...); pointer values are not supported elsewhere")

    def __repr__(self):
        return "<handle>"


class ReduceScope:
    """What ``T.attr(reducer, "reduce_scope", ...)`` gives: a `with` block whose
    T.tvm_thread_allreduce calls use `reducer`."""

    def __init__(self, reducer):
        self.reducer = reducer
        self._saved = None

    # In plain Python helpers called while a kernel is parsed (the parser handles the
    # kernel's own `with` statements itself).
    def __enter__(self):
        b = _b.current()
        self._saved = getattr(b, "reduce_scope", None)
        b.reduce_scope = self.reducer
        return None

    def __exit__(self, *exc):
        _b.current().reduce_scope = self._saved
        return False


def _thread_dim(expr) -> int | None:
    """The block dimension (0, 1, 2) whose thread index `expr` is (directly or through the
    names it was assigned to: `tk = T.thread_binding(...)`), or None."""
    node = as_expr(expr).node
    b = _b.current()
    for _ in range(8):  # lets of lets
        if not node.is_var:
            break
        hits = [val for var, val in zip(b.let_vars, b.let_values) if var.same_as(node)]
        if not hits:
            break
        node = hits[-1]
    text = repr(node)
    for d in range(3):
        if text == repr(_tl.call("int32", "thread_binding", [_tl.const_int(d, "int32")])):
            return d
    return None


def _pow2(n: int) -> bool:
    return n >= 1 and n & (n - 1) == 0


def thread_allreduce(reducer, size, value, cond, out, reduce_vars):
    b = _b.current()
    launch = getattr(b, "launch", None)
    if launch is None:
        raise _b._UserError("T.tvm_thread_allreduce must be inside `with T.Kernel(...)`")
    if as_expr(size).node.const_value != 1:
        raise _b._UserError(f"T.tvm_thread_allreduce: only one value per call is supported (size 1), got {size!r}")
    c = cond if isinstance(cond, bool) else as_expr(cond).node.const_value
    if c is not True and c != 1:
        raise _b._UserError("T.tvm_thread_allreduce: the condition must be True (every thread takes part)")
    if not (isinstance(out, BufferRef) and out.is_point):
        raise _b._UserError("T.tvm_thread_allreduce: the result goes to one element of a buffer, e.g. out[0]")
    if len(reduce_vars) != 1:
        raise _b._UserError(f"T.tvm_thread_allreduce: reduce over one thread index, got {len(reduce_vars)}")
    dim = _thread_dim(reduce_vars[0])
    if dim is None:
        raise _b._UserError("T.tvm_thread_allreduce: the reduced index must be a thread index "
                            "(T.get_thread_binding(d) or T.thread_binding(0, n, thread=...))")
    if not isinstance(reducer.identities, list) or len(reducer.identities) != 1:
        raise _b._UserError("T.comm_reducer for T.tvm_thread_allreduce takes one identity value")
    threads = (list(launch[2]) + [1, 1, 1])[:3]  # T.Kernel's threads, padded to (x, y, z)
    stride = 1
    for t in threads[:dim]:
        stride *= t
    extent, total = threads[dim], threads[0] * threads[1] * threads[2]
    from . import alloc_shared, alloc_var, get_thread_binding  # the package's own T.* (no cycle at import)

    v = as_expr(value)
    dt = str(v.dtype)
    span = _b.current_span()
    if extent == 1:  # one thread per group: the value itself
        folded = as_expr(reducer.combiner(as_expr(reducer.identities[0], dt), v), dt)
        _b.emit(_tl.store(out.buffer.node, [as_expr(i, "int32").node for i in out.items], folded.node, span))
        return
    if _pow2(extent) and _pow2(stride) and stride * extent <= 32 and total % 32 == 0:
        from . import shfl_xor
        acc = alloc_var(dt, v)
        off = extent // 2
        while off >= 1:  # lane ^ (off * stride): the peer whose reduced index differs in bit `off`
            step = as_expr(reducer.combiner(acc[0].load(), shfl_xor(acc[0].load(), off * stride)), dt)
            _b.emit(_tl.store(acc.node, [_tl.const_int(0, "int32")], step.node, span))
            off //= 2
        idx = [as_expr(i, "int32").node for i in out.items]
        _b.emit(_tl.store(out.buffer.node, idx, acc[0].load().node, span))
        return
    # the flat thread number x + X (y + Y z), over the dimensions the launch has
    ndims = len(launch[2])
    tid = [get_thread_binding(d) if d < ndims and threads[d] > 1 else 0 for d in range(3)]
    flat = as_expr(tid[0] + threads[0] * tid[1] + threads[0] * threads[1] * tid[2], "int32")
    if _pow2(extent) and _pow2(stride) and stride < 32 and total % 32 == 0:
        # A group spread over several whole warps (threads=(2, 32) reducing over y: lanes
        # x + 2y): shuffles combine the L = 32 / stride members in each warp, then each
        # thread adds the W = extent / L warp partials of its group from shared memory
        # (W reads instead of extent).
        from . import shfl_xor
        lanes_in_warp, warps = 32 // stride, extent // (32 // stride)
        _b.emit(_tl.attr(f"tl.remark:T.tvm_thread_allreduce over {extent} threads: warp shuffles within each "
                         f"warp, then {warps} warp partials through shared memory", [], span))
        part = alloc_var(dt, v)
        off = lanes_in_warp // 2
        while off >= 1:
            step = as_expr(reducer.combiner(part[0].load(), shfl_xor(part[0].load(), off * stride)), dt)
            _b.emit(_tl.store(part.node, [_tl.const_int(0, "int32")], step.node, span))
            off //= 2
        ws = alloc_shared((total,), dt)
        _b.emit(_tl.store(ws.node, [flat.node], part[0].load().node, span))
        acc = alloc_var(dt, as_expr(reducer.identities[0], dt))
        r = _tl.var("r", "int32")
        peer = flat + (PrimExpr(r) - get_thread_binding(dim) // lanes_in_warp) * 32
        folded = as_expr(reducer.combiner(acc[0].load(), ws[peer].load()), dt)
        body = _tl.store(acc.node, [_tl.const_int(0, "int32")], folded.node, span)
        _b.emit(_tl.for_(r, _tl.const_int(0, "int32"), _tl.const_int(warps, "int32"), "serial", body, {}, span))
        _b.emit(_tl.store(out.buffer.node, [as_expr(i, "int32").node for i in out.items], acc[0].load().node, span))
        return
    _b.emit(_tl.attr(f"tl.remark:T.tvm_thread_allreduce over {extent} threads: through shared memory (warp "
                     "shuffles need a power-of-two group of lanes within one warp and whole warps)", [], span))
    ws = alloc_shared((total,), dt)
    _b.emit(_tl.store(ws.node, [flat.node], v.node, span))
    acc = alloc_var(dt, as_expr(reducer.identities[0], dt))
    r = _tl.var("r", "int32")
    peer = flat + (PrimExpr(r) - get_thread_binding(dim)) * stride
    folded = as_expr(reducer.combiner(acc[0].load(), ws[peer].load()), dt)
    body = _tl.store(acc.node, [_tl.const_int(0, "int32")], folded.node, span)
    _b.emit(_tl.for_(r, _tl.const_int(0, "int32"), _tl.const_int(extent, "int32"), "serial", body, {}, span))
    out_buf = out.buffer
    idx = [as_expr(i, "int32").node for i in out.items]
    _b.emit(_tl.store(out_buf.node, idx, acc[0].load().node, span))
