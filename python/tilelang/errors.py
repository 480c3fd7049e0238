"""Errors that point at the user's source line."""
from __future__ import annotations

import linecache


class TileLangCompileError(Exception):
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


class TileLangArgumentError(TypeError):
    """A kernel was called with arguments that do not match its parameters."""


class TileLangRuntimeError(RuntimeError):
    """A kernel failed while running, or the target cannot run here."""
