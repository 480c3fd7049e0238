"""`assert cond, msg` and T.device_assert(cond, msg) inside kernels.

A condition known when the kernel is compiled is checked then: False is a compile error at
the assert's line. A run-time condition becomes a check in the kernel: when it fails, the
thread prints the message with the assert's file and line (on CUDA with its block and
thread) and stops: `__trap()` on CUDA (the CUDA context is then unusable, as with any device
assert), `abort()` on the CPU (the process ends, output flushed first)."""
from __future__ import annotations

import numbers
import os

from .. import _tl
from ..language import builder as _b
from ..language.values import Buffer, BufferRef, PrimExpr, as_expr, const


def _condition(cond):
    if isinstance(cond, Buffer) and cond.scope == "var":
        cond = cond[0]
    if isinstance(cond, BufferRef):
        cond = cond.load()
    if isinstance(cond, PrimExpr):
        folded = _tl.simplify(cond.node).const_value
        if isinstance(folded, (bool, int)) and not isinstance(folded, float):
            return bool(folded)
        if cond.dtype != "bool":
            cond = cond != const(0, cond.dtype)
        return cond
    if isinstance(cond, (numbers.Number, str, tuple, list, type(None))) or not hasattr(cond, "node"):
        return bool(cond)
    raise _b._UserError(f"assert: the condition must be a bool expression or a compile-time value, got {cond!r}")


def emit_assert(cond, msg=""):
    if msg is None:
        msg = ""
    if not isinstance(msg, str):
        raise _b._UserError(f"assert: the message must be a compile-time str, got {type(msg).__name__}")
    c = _condition(cond)
    if isinstance(c, bool):
        if not c:
            raise _b._UserError(f"assertion failed at compile time{': ' + msg if msg else ''}")
        return
    _b.require_kernel("an assert on run-time values")
    span = _b.current_span()
    where = f"{os.path.basename(span[0])}:{span[1]}" if span and span[0] else "kernel"
    label = f"assertion failed ({where}){': ' + msg if msg else ''}"
    body = _tl.seq([_tl.attr("tl.print:" + label, [], span),
                    _tl.evaluate(_tl.call("void", "trap", []), span)], span)
    _b.emit(_tl.if_(_tl.logical_not(as_expr(c).node), body, None, span))
