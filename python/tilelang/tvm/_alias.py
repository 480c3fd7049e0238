"""`import tvm` gives this stand-in when no real TVM is importable (docs/tvm-compat.md).

A meta-path finder appended at the *end* of sys.meta_path: Python's own finders run first,
so an installed TVM always wins; only when none of them finds `tvm` does this one answer.
When it answers, every stand-in submodule is registered under its `tvm.` name at once, so
that `import tvm.tirx` finds the same module object as `tilelang.tvm.tirx` instead of the
path finder loading a second copy from the stand-in's folder (two copies would make
`isinstance` checks across them fail)."""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import os
import sys

# The stand-in's modules, by their name under `tvm.` (the keys) and under tilelang.tvm.
SUBMODULES = {
    "arith": "arith", "error": "error", "ir": "ir", "target": "target", "testing": "testing", "transform": "transform",
    "tirx": "tirx", "tirx.expr": "tirx.expr", "tir": "tirx", "tir.expr": "tirx.expr",
    "script": "script", "script.ir_builder": "script.ir_builder", "script.ir_builder.base": "script.ir_builder.base",
}


def opted_out() -> bool:
    return os.environ.get("TILELANG_PROVIDE_TVM", "1").strip().lower() in ("0", "false", "no", "off")


def alias_all():
    """Registers the stand-in as `tvm` and its submodules as `tvm.<name>` in sys.modules."""
    me = importlib.import_module("tilelang.tvm")
    sys.modules["tvm"] = me
    for name, ours in SUBMODULES.items():
        sys.modules[f"tvm.{name}"] = importlib.import_module(f"tilelang.tvm.{ours}")
    return me


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        alias_all()
        return sys.modules[spec.name]

    def exec_module(self, module):
        pass  # already executed under its tilelang.tvm name


class StandInFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname != "tvm" and fullname.removeprefix("tvm.") not in SUBMODULES:
            return None
        if opted_out():
            return None
        return importlib.util.spec_from_loader(fullname, _Loader())


def install():
    """Appends the finder once (idempotent across reloads of tilelang)."""
    if not any(type(f).__name__ == "StandInFinder" for f in sys.meta_path):
        sys.meta_path.append(StandInFinder())
