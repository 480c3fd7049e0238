"""Environment settings: cache location, verbosity, where the device headers are."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> str:
    d = os.environ.get("TILELANG_CACHE_DIR")
    return d if d else str(Path.home() / ".cache" / "tilelang")


def print_on_compilation() -> bool:
    return os.environ.get("TILELANG_PRINT_ON_COMPILATION", "1") not in ("0", "false", "False", "")


def template_dir() -> str:
    """The folder of tl_cpu.h: installed with the package, or the source tree's."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates" / "tl" / "cpu", here.parent.parent / "templates" / "tl" / "cpu"):
        if (candidate / "tl_cpu.h").exists():
            return str(candidate)
    raise RuntimeError(f"cannot find the CPU device headers (tl_cpu.h) near {here}; reinstall tilelang")
