"""TileLang in C++: tile-level kernels in Python, compiled by a C++ core.

    import tilelang
    import tilelang.language as T
"""
from __future__ import annotations

__version__ = "0.1.0"

from . import _tl  # noqa: F401  (the C++ core)
from . import language  # noqa: F401
from . import layout  # noqa: F401
from .errors import TileLangArgumentError, TileLangCompileError, TileLangRuntimeError  # noqa: F401
from .jit import JITKernel, compile, jit, par_compile  # noqa: F401
from .profiler import TensorSupplyType, do_bench  # noqa: F401
from .transform import PassConfigKey  # noqa: F401
from . import cache  # noqa: F401
from .cache import clear_cache, disable_cache, enable_cache, is_cache_enabled  # noqa: F401
from . import autotuner  # noqa: F401
from .autotuner import autotune  # noqa: F401


def cdiv(a, b):
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (int(n) - 1).bit_length()


# Upstream TileLang's module-level names.
from . import math  # noqa: E402,F401
from . import utils  # noqa: E402,F401
from .language.dtypes import DataType, dtype  # noqa: E402,F401
from ._environment import env  # noqa: E402,F401  (tilelang.env.TILELANG_CACHE_DIR, ...)
from .lower import lower  # noqa: E402,F401
from . import tvm  # noqa: E402,F401  (the stand-in for `from tilelang import tvm`, docs/tvm-compat.md)

# `import tvm` gives the stand-in when no real TVM is importable (a real one always wins;
# TILELANG_PROVIDE_TVM=0 turns it off): upstream's programs write `import tvm` after
# `import tilelang` (docs/tvm-compat.md).
tvm._install_top_level_alias()

# Names upstream's package imports eagerly; here on first use (importlib keeps `import
# tilelang` light): the layout classes, the profiler, the dtypes module, the source
# post-processing hooks and the subpackages `tilelang.engine`, `.tools`, `.cuda`.
_LAZY = {
    "Layout": ("tilelang.layout", "Layout"),
    "Fragment": ("tilelang.layout", "Fragment"),
    "Profiler": ("tilelang.profiler", "Profiler"),
    "dtypes": ("tilelang.language.dtypes", None),
    "engine": ("tilelang.engine", None),
    "tools": ("tilelang.tools", None),
    "cuda": ("tilelang.cuda", None),
    "register_cuda_postproc": ("tilelang.engine.callback", "register_cuda_postproc"),
    "register_hip_postproc": ("tilelang.engine.callback", "register_hip_postproc"),
    "register_c_postproc": ("tilelang.engine.callback", "register_c_postproc"),
}


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'tilelang' has no attribute {name!r}")
    import importlib

    module, attr = _LAZY[name]
    mod = importlib.import_module(module)
    return mod if attr is None else getattr(mod, attr)
