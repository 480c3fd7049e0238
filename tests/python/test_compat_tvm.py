"""The `from tilelang import tvm` stand-in (docs/tvm-compat.md)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu
from tilelang import tvm


def _kernel(scale):
    @T.prim_func
    def f(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(32):
                B[i] = A[i] * scale + tvm.tirx.const(2.0, "float32")
    return f


@pytest.mark.cpu_target  # assumes the default target / no GPU, which the CUDA run changes
def test_target_scope_sets_the_default_target(monkeypatch):
    monkeypatch.setenv("TILELANG_DEFAULT_TARGET", "auto")
    f = _kernel(3.0)
    with tvm.target.Target("c") as t:
        assert t.kind.name == "c" and tvm.target.Target.current().kind == "cpu"
        art = tilelang.lower(f)
    assert art.target == "cpu" and 'extern "C"' in art.kernel_source
    assert tvm.target.Target.current() is None
    cu = tvm.target.Target("cuda -arch=sm_80")
    assert cu.kind.name == "cuda" and cu.attrs["arch"] == "sm_80" and str(cu) == "cuda -arch=sm_80"
    with cu:
        assert tilelang.lower(f).target == "cuda -arch=sm_80"
    assert tvm.target.Target("llvm").kind.name == "llvm"


def test_tirx_const_and_datatype(rng):
    k = compile_cpu(_kernel(3.0))
    a = rng.standard_normal(32).astype(np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64) * 3 + 2, rtol=1e-6)
    assert tvm.DataType("float16").bits == 16 and tvm.DataType("int8") == "int8"
    assert tvm.tir.const(7).dtype == "int32" and tvm.tirx.const(1.5).dtype == "float32"


def test_pass_context_configs_apply_inside_the_block():
    f = _kernel(1.0)
    with tvm.transform.PassContext(config={tilelang.PassConfigKey.TL_DISABLE_WARP_SPECIALIZED: True}):
        assert tvm.transform.PassContext.current().config == {"tl.disable_warp_specialized": True}
        k = compile_cpu(f)
    assert any("tl.disable_warp_specialized=True" in r for r in k.get_remarks())
    assert not any("disable_warp_specialized" in r for r in compile_cpu(f).get_remarks())


def test_error_names_catch_compile_errors():
    with pytest.raises(tvm.error.InternalError):
        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.copy(A[0:4], A[0:8])
    try:
        @T.prim_func
        def bad2(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                A[0] = undefined_name  # noqa: F821
    except tvm.TVMError as e:
        assert "undefined_name" in str(e)
    else:
        raise AssertionError("expected a compile error")


def test_assert_structural_equal():
    tvm.ir.assert_structural_equal(_kernel(2.0), _kernel(2.0))
    assert tvm.ir.structural_equal(_kernel(2.0), _kernel(2.0))
    with pytest.raises(ValueError, match="differ structurally"):
        tvm.ir.assert_structural_equal(_kernel(2.0), _kernel(5.0))


def test_tvm_testing_decorators_are_tilelangs():
    import tilelang.testing

    assert tvm.testing.requires_cuda is tilelang.testing.requires_cuda
    assert tvm.testing.requires_package is tilelang.testing.requires_package


def test_top_level_tvm_is_opt_in():
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("tvm") is not None:
        pytest.skip("a real TVM is installed; the stand-in never replaces it")
    prog = "import tilelang, sys\ntry:\n    from tvm import DataType\n    from tvm.target import Target\n" \
           "    print('tvm', DataType('float16').bits, Target('c').kind.name, sys.modules['tvm'] is tilelang.tvm)\n" \
           "except ImportError:\n    print('no tvm')\n"
    env = dict(os.environ)
    env.pop("TILELANG_PROVIDE_TVM", None)
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=120)
    assert r.stdout.strip() == "no tvm", r.stdout + r.stderr
    env["TILELANG_PROVIDE_TVM"] = "1"
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=120)
    assert r.stdout.strip() == "tvm 16 c True", r.stdout + r.stderr
