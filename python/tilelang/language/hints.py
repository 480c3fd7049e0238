"""Remarks from the front end: a decision or a hint the compiler does not act on is said in
kernel.get_remarks() with the user's line, never dropped silently."""
from __future__ import annotations

from .. import _tl
from . import builder as _b


def remark(text):
    """A note in kernel.get_remarks() (with the user's line), nothing in the generated code."""
    _b.emit(_tl.attr("tl.remark:" + text, [], _b.current_span()))


def not_applied(what, **given):
    """One remark naming each hint argument given to `what` (None, {} and [] count as not
    given) that the compiler does not act on: it chooses instructions and layouts itself."""
    names = [n for n, v in given.items() if v is not None and not (isinstance(v, (dict, list, tuple)) and not v)]
    if names:
        remark(f"{what}(" + ", ".join(f"{n}=..." for n in names) + "): not applied (the compiler chooses the "
               "instructions and the thread layout)")
