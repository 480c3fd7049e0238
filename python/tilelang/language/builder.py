"""The statement builder the front end fills while it walks a kernel's AST.

T.* functions that produce statements (T.copy, T.alloc_shared, ...) append them to the
innermost open block here; the parser opens a block for each loop or branch body.
"""
from __future__ import annotations

import threading

from .. import _tl

_state = threading.local()


class Frame:
    """One open statement list, plus the names it declared."""

    def __init__(self):
        self.stmts = []


class Builder:
    def __init__(self, file: str):
        self.file = file
        self.frames: list[Frame] = []
        self.span = None  # (file, line, col, end_line, end_col) of the node being built
        self.in_kernel = False
        self.cluster_dims = None  # the current launch's (x, y, z) clusters; [1, 1, 1] without
        self.pending_name = None  # the name an allocation on this line is assigned to
        self.workspaces = []  # T.alloc_global buffers: parameters the runtime allocates per call
        # loop variable name -> [(min, extent)] of the enclosing loops with constant bounds,
        # innermost last (for the negative-index rule, negative_index.py)
        self.loop_ranges: dict = {}
        # the kinds of the enclosing loops ("parallel", "serial", ...), innermost last
        self.loop_kinds: list = []
        # one entry per open run-time branch: whether its condition may differ between threads
        self.branch_thread_dependent: list = []
        # the reducer an update is being emitted for (reducer.py: its own accesses are not reads)
        self.reducer_updating = []
        # Variables bound by `name = expr` in the kernel body and their values: a slice
        # A[start:stop] between two of them has the constant extent they differ by.
        self.let_vars = []
        self.let_values = []
        # T.annotate_pass_configs / T.annotate_compile_flags: the function's own
        self.pass_configs = None
        self.compile_flags = None
        # T.assume conditions as printed (`N % 4 == 0`): those over parameters only are
        # checked by the JIT before each launch (jit/kernel.py, host_assume_checks)
        self.assumptions = []
        # T.annotate_safe_value settings in force: id(tensor node) -> (tensor, value); a
        # T.sblock restores them at its end
        self.safe_values = {}

    def open(self):
        self.frames.append(Frame())

    def close(self, span=None):
        frame = self.frames.pop()
        return _tl.seq(frame.stmts, span)

    def emit(self, stmt):
        self.frames[-1].stmts.append(stmt)


def current() -> Builder:
    b = getattr(_state, "builder", None)
    if b is None:
        raise RuntimeError(
            "this TileLang primitive can only be used inside a kernel being compiled "
            "(a function decorated with @T.prim_func or @tilelang.jit)"
        )
    return b


def active() -> Builder | None:
    return getattr(_state, "builder", None)


def set_builder(b: Builder | None):
    prev = getattr(_state, "builder", None)
    _state.builder = b
    return prev


def current_span():
    b = getattr(_state, "builder", None)
    return b.span if b is not None else None


def emit(stmt):
    current().emit(stmt)


def require_kernel(what: str):
    if not current().in_kernel:
        raise _UserError(f"{what} must be used inside `with T.Kernel(...)`")


class _UserError(Exception):
    """A mistake in the user's program found by the Python side; the parser adds the span.
    `kind` is the exception class the error is also an instance of once it has its span
    (ValueError unless upstream raises another one for the same mistake)."""

    def __init__(self, message="", kind=ValueError):
        super().__init__(message)
        self.kind = kind
