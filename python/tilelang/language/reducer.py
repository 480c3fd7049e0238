"""Reducers (``T.alloc_reducer``): a tile that many T.Parallel iterations combine into.

    acc = T.alloc_reducer((M,), T.float32, op="sum")    # "sum", "max", "min"; ints: "bitand", "bitor", "bitxor"
    T.reducer_init(acc)                                # or T.clear(acc) / T.fill(acc, v)
    for i, j in T.Parallel(M, N):
        acc[i] += A_frag[i, j]                         # or T.reducer_update(acc[i], A_frag[i, j])
    T.finalize_reducer(acc, dst)                       # dst optional: then read acc itself

Here a reducer is a block-shared tile whose updates are atomic (an add for "sum", a max or
min for "max"/"min", an and/or/xor for the bitwise ops of integer reducers), so every
logical contribution is combined exactly once however the loop is spread over threads;
finalize_reducer is a block barrier (plus the copy into dst). Where every update comes from
T.Parallel nests of one shape (sum, max, min), the compiler instead accumulates per element
of the nest in registers and combines once at finalize_reducer (privatize_reducers.cc).
For "max"/"min", ``acc[i] = T.max(acc[i], v)`` is also an update (an atomic max with a value
that is never smaller than what it replaces gives the same result). Any other store to a
reducer is an error at its line (bitwise reducers take T.reducer_update or `acc[i] &= v` /
`|=` / `^=`)."""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder as _b
from .hints import not_applied as _hints
from .values import Buffer, BufferRef, as_expr

_OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")
_BITWISE = {"bitand": "and", "bitor": "or", "bitxor": "xor"}


def _registry():
    b = _b.current()
    if not hasattr(b, "reducers"):
        b.reducers = {}
    return b.reducers


class _Epoch:
    """What the front end knows of a reducer's current reduction (upstream's "epochs"): how it
    was opened ("init": T.reducer_init, updated by T.reducer_update; "v1": T.clear / T.fill,
    updated by `acc[i] += v`), where, and in which statement list."""

    __slots__ = ("mode", "open", "frame", "line", "loops", "branches")

    def __init__(self):
        self.mode, self.open, self.frame, self.line = None, False, None, 0
        self.loops, self.branches = 0, 0  # loops and branches open at the init


def _entry(buf):
    b = _b.active()
    if b is None or not isinstance(buf, Buffer):
        return None
    entry = getattr(b, "reducers", {}).get(id(buf))
    return entry if entry is not None and entry[0] is buf else None


def reducer_op(buf):
    """The op of a reducer tile, or None for any other buffer."""
    entry = _entry(buf)
    return entry[1] if entry is not None else None


def _epoch(buf) -> _Epoch:
    return _entry(buf)[2]


def _in_parallel() -> bool:
    return "parallel" in _b.current().loop_kinds


def check_reducer_read(buf):
    """A read of a reducer element: refused between T.reducer_init and T.finalize_reducer
    (the tile holds partial values there)."""
    entry = _entry(buf)
    if entry is not None and entry[2].open and entry[2].mode == "init" and \
            not any(u is buf for u in _b.current().reducer_updating):
        raise _b._UserError(f"illegal read of reducer {buf.name} before T.finalize_reducer (its T.reducer_init at "
                            f"line {entry[2].line} opened a reduction; read the finalized result)")


def note_reducer_fill(buf):
    """T.clear / T.fill of a reducer: a reduction updated by `acc[i] += v` (upstream's v1)."""
    entry = _entry(buf)
    if entry is None:
        return
    ep = entry[2]
    if ep.open and ep.mode == "init":
        raise _b._UserError(f"illegal T.clear / T.fill of reducer {buf.name} inside the reduction its T.reducer_init "
                            f"at line {ep.line} opened")
    ep.mode, ep.open, ep.frame, ep.line = "v1", True, _b.current().frames[-1], _line()


def _line():
    span = _b.current().span
    return span[1] if span else 0


def check_reducers_finalized():
    """At the end of a kernel: every reduction opened by T.reducer_init was finalized."""
    for buf, _, ep in getattr(_b.current(), "reducers", {}).values():
        if ep.open and ep.mode == "init":
            raise _b._UserError(f"reducer {buf.name}: the reduction its T.reducer_init at line {ep.line} opened is "
                                "never finalized (call T.finalize_reducer)")


def alloc_reducer(shape, dtype, op="sum", replication=None):
    from . import _alloc

    _b.require_kernel("T.alloc_reducer")
    if op not in _OPS:
        raise _b._UserError(f"T.alloc_reducer: op must be one of {', '.join(_OPS)}, got {op!r}")
    if op in _BITWISE and not str(dtype).startswith(("int", "uint")):
        # (upstream raises an AssertionError here too)
        raise AssertionError(f"T.alloc_reducer(op={op!r}) needs an integer dtype, got {dtype}")
    if replication not in (None, "all", "none"):
        raise _b._UserError(f"T.alloc_reducer: replication must be None, 'all' or 'none', got {replication!r}")
    buf = _alloc(shape, dtype, "shared")
    _registry()[id(buf)] = (buf, op, _Epoch())
    # for the compiler's privatize-reducers pass (updates accumulated in registers where it can)
    _b.emit(_tl.attr("tl.reducer", [_first_address(buf)], _b.current_span()))
    return buf


def _first_address(buf):
    zero = _tl.const_int(0, "int32")
    return _tl.call("handle", "address_of", [_tl.load(buf.node, [zero] * len(buf.shape))])


def _identity(op, dtype):
    from . import infinity, max_value, min_value

    if op in ("sum", "bitor", "bitxor"):
        return 0
    if op == "bitand":
        return -1 if not str(dtype).startswith("uint") else max_value(str(dtype))  # all bits set
    t = str(dtype)
    if op == "max":
        return -infinity(t) if t.startswith(("float", "bfloat")) else min_value(t)
    return infinity(t) if t.startswith(("float", "bfloat")) else max_value(t)


def reducer_init(reducer, init=None):
    """Starts a reduction: every element becomes `init` (default: the op's identity)."""
    from . import fill

    op = reducer_op(reducer)
    if op is None:
        raise _b._UserError("T.reducer_init takes a buffer made by T.alloc_reducer")
    ep = _epoch(reducer)
    if ep.open and ep.mode == "init":
        raise _b._UserError(f"double T.reducer_init of reducer {reducer.name}: the reduction opened at line {ep.line} "
                            "was not finalized (T.finalize_reducer) first")
    if init is not None and not isinstance(init, numbers.Number):
        v = as_expr(init)
        if str(v.dtype) != str(reducer.dtype):
            raise _b._UserError(f"T.reducer_init of {reducer.name}: the starting value is {v.dtype}, which does not match "
                                f"reducer dtype {reducer.dtype} (cast it with T.cast)")
    fill(reducer, _identity(op, reducer.dtype) if init is None else init)
    b = _b.current()
    ep.mode, ep.open, ep.frame, ep.line = "init", True, b.frames[-1], _line()
    ep.loops, ep.branches = len(b.loop_kinds), len(b.branch_thread_dependent)


def _atomic_update(ref, op, value):
    from . import _atomic, _atomic_bitwise

    v = as_expr(value, ref.buffer.dtype)
    updating = _b.current().reducer_updating  # (per builder: kernels may be parsed in several threads)
    updating.append(ref.buffer)
    try:
        if op in _BITWISE:
            _atomic_bitwise(_BITWISE[op], ref, v, None, False)
            return
        _atomic({"sum": "add", "max": "max", "min": "min"}[op], ref, v, False)
    finally:
        updating.pop()


def reducer_update(target, value):
    """Combines `value` into the element `target` (``acc[i]``) of a reducer."""
    if not isinstance(target, BufferRef) or not target.is_point:
        raise _b._UserError("T.reducer_update takes an element of a reducer, e.g. T.reducer_update(acc[i], v)")
    op = reducer_op(target.buffer)
    if op is None:
        raise _b._UserError(f"T.reducer_update: {target.buffer.name} is not a reducer (T.alloc_reducer)")
    name, ep = target.buffer.name, _epoch(target.buffer)
    if not _in_parallel():
        raise _b._UserError(f"T.reducer_update of {name} outside any T.Parallel loop: every thread would add the "
                            "same value (update it from a T.Parallel loop)")
    if not ep.open:
        raise _b._UserError(f"T.reducer_update of {name} before T.reducer_init (open the reduction first)")
    if ep.mode == "v1":
        raise _b._UserError(f"illegal T.reducer_update of reducer {name}: its reduction was opened by T.clear / T.fill "
                            f"at line {ep.line} (update it with {name}[...] += value, or open it with T.reducer_init)")
    _atomic_update(target, op, value)


def store_to_reducer(ref, value, aug_op) -> bool:
    """The parser's hook for `acc[i] += v` / `acc[i] = T.max(acc[i], v)`: emits the atomic
    update and returns True, or returns False when `ref` is not a reducer element."""
    op = reducer_op(ref.buffer)
    if op is None:
        return False
    ep = _epoch(ref.buffer)

    def v1_update():
        if ep.open and ep.mode == "init":
            raise _b._UserError(f"illegal store to reducer {ref.buffer.name} in the reduction its T.reducer_init at "
                                f"line {ep.line} opened (update it with T.reducer_update)")
        _atomic_update(ref, op, value)
        return True

    if not ref.is_point:
        raise _b._UserError(f"assigning to a slice of the reducer {ref.buffer.name} is not supported")
    aug = aug_op.lower() if isinstance(aug_op, str) else aug_op  # the parser's "add", "BitAnd", ...
    if (aug, op) in (("add", "sum"), ("bitand", "bitand"), ("bitor", "bitor"), ("bitxor", "bitxor")):
        return v1_update()
    if aug_op is None and op in ("max", "min"):
        return v1_update()
    name = ref.buffer.name
    want = {"sum": f"{name}[...] += value", "bitand": f"{name}[...] &= value", "bitor": f"{name}[...] |= value",
            "bitxor": f"{name}[...] ^= value"}.get(op, f"{name}[...] = T.{op}({name}[...], value)")
    raise _b._UserError(f"{ref.buffer.name} is a {op!r} reducer: update it with `{want}` or T.reducer_update")


def finalize_reducer(reducer, dst=None, batch=1, annotations=None):
    """Ends a reduction: waits for every thread's contributions (a block barrier); with `dst`,
    copies the results there."""
    from . import copy, sync_threads

    if reducer_op(reducer) is None:
        raise _b._UserError("T.finalize_reducer takes a buffer made by T.alloc_reducer")
    _hints("T.finalize_reducer", annotations=annotations)
    ep = _epoch(reducer)
    b = _b.current()
    if ep.open and ep.mode == "init" and ep.frame is not b.frames[-1]:
        # Upstream's rule: the finalize is in the init's block, or in a block-uniform branch
        # nested there (it runs 0 or 1 times per init); not in a loop the init is outside.
        nested = any(f is ep.frame for f in b.frames)
        if not nested or len(b.loop_kinds) != ep.loops:
            raise _b._UserError(f"T.finalize_reducer of {reducer.name} is not in the scope of its T.reducer_init "
                                f"(line {ep.line}): finalize in the same block, or in a branch nested there (not "
                                f"inside another loop)")
        if any(b.branch_thread_dependent[ep.branches:]):
            raise _b._UserError(f"T.finalize_reducer of {reducer.name} under a condition that may differ between "
                                f"threads: every thread's part of the reduction opened at line {ep.line} is needed; "
                                f"finalize where all threads do (a branch on block-uniform values only)")
    ep.open = False
    if not isinstance(batch, numbers.Integral) or batch < 1:
        raise _b._UserError(f"T.finalize_reducer: batch must be >= 1 (a positive int), got {batch!r}")
    # (upstream's batched finalize reduces `batch` outputs at a time: a count that fits the output)
    elements = 1
    for d in reducer.shape:
        elements = elements * d if isinstance(d, numbers.Integral) else None
        if elements is None:
            break
    if elements is not None and batch > elements:
        raise _b._UserError(f"T.finalize_reducer: batch {batch} exceeds total output elements ({elements}) of "
                            f"{reducer.name}")
    if elements is not None and elements % batch:
        raise _b._UserError(f"T.finalize_reducer: batch {batch} must evenly divide the {elements} output elements "
                            f"of {reducer.name}")
    _b.emit(_tl.attr("tl.reducer_finalize", [_first_address(reducer)], _b.current_span()))
    sync_threads()
    if dst is not None:
        copy(reducer, dst)
        sync_threads()
