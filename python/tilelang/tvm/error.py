"""TVM's error names as tuples of this compiler's error classes (usable in `except` and
pytest.raises)."""
from __future__ import annotations

from .. import _tl
from ..errors import TileLangArgumentError, TileLangCompileError, TileLangRuntimeError

InternalError = (TileLangCompileError, _tl.CompileError, _tl.InternalCompilerError)
TVMError = InternalError + (TileLangRuntimeError, TileLangArgumentError)
DiagnosticError = InternalError
