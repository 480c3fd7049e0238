"""``tilelang.env`` as upstream TileLang programs use it: an object whose upper-case
attributes are the TILELANG_* settings (``env.TILELANG_CACHE_DIR``). Reading one gives the
live environment value (or the default); assigning one sets the environment variable, so the
compiler sees it from then on. Other attributes are the functions of the tilelang.env module
(``env.cache_dir()``, ``env.is_cache_enabled()``)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _default_cache():
    return str(Path.home() / ".cache" / "tilelang")


_SETTINGS = {
    "TILELANG_CACHE_DIR": _default_cache,
    "TILELANG_TMP_DIR": lambda: os.path.join(os.environ.get("TILELANG_CACHE_DIR") or _default_cache(), "tmp"),
    "TILELANG_PRINT_ON_COMPILATION": lambda: "1",
    "TILELANG_DEFAULT_TARGET": lambda: "auto",
    "TILELANG_REMARKS": lambda: "0",
    "TILELANG_DISABLE_CACHE": lambda: "0",
    "TILELANG_NVRTC_PATH": lambda: "",
    "TILELANG_AUTO_TUNING_CPU_COUNTS": lambda: "-1",
    "TILELANG_AUTO_TUNING_MAX_CPU_COUNT": lambda: "-1",
    "TILELANG_AUTO_TUNING_DISABLE_CACHE": lambda: "0",
    "TILELANG_CLEANUP_TEMP_FILES": lambda: "0",
    "TILELANG_USE_GEMM_V1": lambda: "0",
    "TILELANG_PASS_DIFF_OUTPUT": lambda: "",
    "CUTLASS_INCLUDE_DIR": lambda: "",
    "CUDA_HOME": lambda: os.environ.get("CUDA_PATH", "/usr/local/cuda"),
    "TMPDIR": tempfile.gettempdir,
}


def _module():
    import importlib

    return importlib.import_module(__name__.rsplit(".", 1)[0] + ".env")  # the module, not the object


class Environment:
    """The TileLang settings (see the module comment)."""

    __slots__ = ()  # no instance dict: every attribute is a setting or the module's

    def __getattr__(self, name):
        if name in _SETTINGS:
            v = os.environ.get(name)
            return v if v is not None else _SETTINGS[name]()
        module = _module()
        if name.startswith("__") or not hasattr(module, name):
            raise AttributeError(f"tilelang.env has no setting or function {name!r}")
        return getattr(module, name)

    def __setattr__(self, name, value):
        if name not in _SETTINGS and not name.startswith("TILELANG_"):
            module = _module()
            if hasattr(module, name):  # e.g. a test monkeypatching one of the module's functions
                setattr(module, name, value)
                return
            raise AttributeError(f"tilelang.env: {name!r} is not a setting (settings: {', '.join(_SETTINGS)})")
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)

    def get_default_target(self) -> str:
        return os.environ.get("TILELANG_DEFAULT_TARGET", "auto")

    def is_print_on_compilation_enabled(self) -> bool:
        return self.TILELANG_PRINT_ON_COMPILATION.lower() in ("1", "true", "yes", "on")

    def get_pass_diff_mode(self) -> str:
        return os.environ.get("TILELANG_PASS_DIFF_MODE", "")

    def get_pass_profile_threshold_ms(self) -> float:
        return float(os.environ.get("TILELANG_PASS_PROFILE_THRESHOLD_MS", "0") or 0)

    def __repr__(self):
        return "tilelang.env(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in _SETTINGS if k.startswith("TILELANG")) + ")"


env = Environment()
