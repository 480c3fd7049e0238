"""Errors that point at the user's source line."""
from __future__ import annotations

import linecache


class TileLangCompileError(RuntimeError):
    """A mistake in a kernel, reported with its file, line and a caret under the code."""

    def __init__(self, message: str, file: str = "", line: int = 0, col: int = 0, end_col: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.col = col
        self.end_col = end_col
        super().__init__(self._render())

    def _render(self) -> str:
        if not self.line:
            return f"error: {self.message}"
        text = linecache.getline(self.file, self.line).rstrip("\n")
        width = len(str(self.line))
        pad = " " * width
        caret_len = 1
        if self.end_col is not None and self.end_col > self.col:
            caret_len = self.end_col - self.col
        return (
            f"error: {self.message}\n"
            f"{pad}--> {self.file}:{self.line}:{self.col + 1}\n"
            f"{pad} |\n"
            f"{self.line} | {text}\n"
            f"{pad} | {' ' * self.col}{'^' * caret_len}"
        )


_AS_KINDS: dict = {}


def compile_error_as(kind, message: str, file: str = "", line: int = 0, col: int = 0,
                     end_col: int | None = None) -> TileLangCompileError:
    """A TileLangCompileError that is also a `kind` (ValueError, TypeError, ...): the error a
    kernel's Python code raised, now pointing at its line. Upstream's tests catch the kind
    (`pytest.raises(ValueError, match=...)`); ours catch TileLangCompileError."""
    if kind is None or not isinstance(kind, type) or not issubclass(kind, Exception) or \
            issubclass(kind, TileLangCompileError) or kind is Exception:
        return TileLangCompileError(message, file, line, col, end_col)
    cls = _AS_KINDS.get(kind)
    if cls is None:
        try:
            cls = type(f"TileLangCompileError[{kind.__name__}]", (TileLangCompileError, kind),
                       {"__module__": __name__})
        except TypeError:  # a kind whose layout does not combine with ours
            return TileLangCompileError(message, file, line, col, end_col)
        _AS_KINDS[kind] = cls
    return cls(message, file, line, col, end_col)


class TileLangArgumentError(TypeError):
    """A kernel was called with arguments that do not match its parameters."""


class TileLangRuntimeError(RuntimeError):
    """A kernel failed while running, or the target cannot run here."""
