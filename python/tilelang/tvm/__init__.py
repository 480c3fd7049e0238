"""A small stand-in for the names upstream TileLang programs reach through
``from tilelang import tvm``. This compiler has no TVM inside; the names here map onto its
own objects (see docs/tvm-compat.md for what is provided and what is out of scope):

- ``tvm.target.Target("cuda")``: a target, usable as ``with Target("c"):`` around
  tilelang.lower / tilelang.compile with no explicit target;
- ``tvm.DataType``: tilelang's dtype; ``tvm.tirx.const`` / ``tvm.tir.const``;
- ``tvm.error.InternalError`` / ``tvm.TVMError``: tuples of this compiler's error classes,
  for ``except`` and ``pytest.raises``;
- ``tvm.transform.PassContext(config={...})``: pass configs applied to the compilations
  inside the block;
- ``tvm.testing.requires_package`` etc. (tilelang.testing);
- ``tvm.ir.assert_structural_equal`` on @T.prim_func kernels.
"""
from __future__ import annotations

from ..language.dtypes import dtype as DataType  # noqa: F401
from . import error, ir, target, testing, tirx, transform  # noqa: F401
from .error import TVMError  # noqa: F401

tir = tirx


def _register_top_level_if_asked():
    """With TILELANG_PROVIDE_TVM=1 and no real TVM installed, `import tvm` (and tvm.target,
    tvm.tir, ...) give this stand-in."""
    import importlib.util
    import os
    import sys

    if os.environ.get("TILELANG_PROVIDE_TVM", "0").strip().lower() in ("0", "", "false", "no", "off"):
        return
    if "tvm" in sys.modules:
        return
    try:
        real = importlib.util.find_spec("tvm")
    except (ImportError, ValueError):
        real = None
    if real is not None:
        return
    me = sys.modules[__name__]
    sys.modules["tvm"] = me
    for sub in ("error", "ir", "target", "testing", "tirx", "transform"):
        sys.modules[f"tvm.{sub}"] = getattr(me, sub)
    sys.modules["tvm.tir"] = tirx

__all__ = ["DataType", "TVMError", "error", "ir", "target", "testing", "tir", "tirx", "transform"]
