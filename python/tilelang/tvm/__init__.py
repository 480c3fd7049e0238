"""A small stand-in for the names upstream TileLang programs reach through
``from tilelang import tvm`` (and, after ``import tilelang``, through ``import tvm`` when no
real TVM is importable: _alias.py). This compiler has no TVM inside; the names here map onto
its own objects (see docs/tvm-compat.md for what is provided and what is out of scope):

- ``tvm.target.Target("cuda")``: a target, usable as ``with Target("c"):`` around
  tilelang.lower / tilelang.compile with no explicit target;
- ``tvm.DataType``: tilelang's dtype; ``tvm.tirx.const`` / ``tvm.tir.const``;
- ``tvm.error.InternalError`` / ``tvm.TVMError``: tuples of this compiler's error classes,
  for ``except`` and ``pytest.raises``;
- ``tvm.transform.PassContext(config={...})``: pass configs applied to the compilations
  inside the block;
- ``tvm.testing.requires_package`` etc. (tilelang.testing);
- ``tvm.ir.assert_structural_equal`` on @T.prim_func kernels;
- ``tvm.tirx.Var`` / ``tvm.tirx.expr.IntImm`` / ``Or`` / ``Not`` ..., ``tvm.tirx.all``, and
  ``tvm.script.ir_builder.base.IRBuilderFrame`` for isinstance checks on loops.
"""
from __future__ import annotations

from ..language.dtypes import dtype as DataType  # noqa: F401
from . import arith, error, ir, script, target, testing, tirx, transform  # noqa: F401
from .error import TVMError  # noqa: F401

tir = tirx


def _install_top_level_alias():
    """After `import tilelang`, `import tvm` gives this stand-in when no real TVM is
    importable; TILELANG_PROVIDE_TVM=0 turns that off (see _alias.py)."""
    from . import _alias

    _alias.install()


__all__ = ["DataType", "TVMError", "arith", "error", "ir", "script", "target", "testing", "tir", "tirx", "transform"]
