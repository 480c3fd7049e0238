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


# which keys are listed as having no effect depends on the target: these remarks are the CPU target's
@pytest.mark.cpu_target
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
                T.copy(A[0:8], A[0:4])  # a destination smaller than the source
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


def _run(prog, env_extra=None, pythonpath=None):
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("TILELANG_PROVIDE_TVM", "PYTHONPATH")}
    env.update(env_extra or {})
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    r = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, env=env, timeout=120)
    return r.stdout.strip() + r.stderr[-2000:]


_PROBE = ("import tilelang, sys\ntry:\n    import tvm\n    from tvm import DataType\n    from tvm.target import Target\n"
          "    print('tvm', DataType('float16').bits, Target('c').kind.name, tvm is tilelang.tvm)\n"
          "except ImportError:\n    print('no tvm')\n")


def _real_tvm_installed():
    import importlib.machinery

    return importlib.machinery.PathFinder.find_spec("tvm") is not None


def test_import_tvm_after_tilelang_gives_the_stand_in():
    if _real_tvm_installed():
        pytest.skip("a real TVM is installed; the stand-in never replaces it")
    assert _run(_PROBE) == "tvm 16 c True"
    # without `import tilelang` first, there is no tvm (as with upstream, whose TVM is put
    # on the path by `import tilelang`)
    assert _run("try:\n    import tvm\n    print('tvm')\nexcept ImportError:\n    print('no tvm')\n") == "no tvm"


def test_provide_tvm_0_opts_out():
    if _real_tvm_installed():
        pytest.skip("a real TVM is installed; the stand-in never replaces it")
    assert _run(_PROBE, {"TILELANG_PROVIDE_TVM": "0"}) == "no tvm"


def test_a_real_tvm_wins(tmp_path):
    (tmp_path / "tvm").mkdir()
    (tmp_path / "tvm" / "__init__.py").write_text("REAL = True\n")
    out = _run("import tilelang, tvm\nprint(getattr(tvm, 'REAL', False), tvm is tilelang.tvm)", pythonpath=str(tmp_path))
    assert out == "True False"


def test_submodules_are_the_same_objects():
    import importlib

    import tvm as top

    assert top is tvm
    assert importlib.import_module("tvm.tirx") is tvm.tirx
    assert importlib.import_module("tvm.tir") is tvm.tirx
    assert importlib.import_module("tvm.tirx.expr") is tvm.tirx.expr
    from tvm.script.ir_builder.base import IRBuilderFrame

    assert IRBuilderFrame is tvm.script.ir_builder.base.IRBuilderFrame
    with pytest.raises(ImportError):
        importlib.import_module("tvm.relax")  # not provided: a clear ImportError


def test_tirx_expressions():
    from tvm.tirx.expr import FloatImm, IntImm, Not, Or, Var

    a, b = Var("a", T.int32), Var("b", T.int32)
    assert isinstance(a, Var) and isinstance(a, tvm.tirx.Var) and not isinstance(a, IntImm)
    one = IntImm(T.int32, 1)
    assert isinstance(one, IntImm) and one.dtype == "int32" and not isinstance(one, FloatImm)
    assert isinstance(FloatImm("float32", 0.5), FloatImm) and not isinstance(FloatImm("float32", 0.5), IntImm)
    assert isinstance(tvm.tirx.const(True), IntImm)  # as in TIR: IntImm("bool", 1)
    cond = Or(Not(tvm.tirx.all(a < b, b < a + 1)), a == b)
    assert cond.dtype == "bool"
    assert "not" in repr(cond) and " or " in repr(cond)
    assert tvm.tirx.any(a < b, b < a).dtype == "bool"
    with pytest.raises(ValueError):
        tvm.tirx.all()


def test_tirx_expressions_compile_into_a_kernel():
    from tvm.tirx.expr import Not, Or

    @T.prim_func
    def f(A: T.Tensor((8,), "int32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = T.if_then_else(Or(Not(tvm.tirx.all(i > 1, i < 6)), i == 3), A[i], 0)

    k = compile_cpu(f)
    a = np.arange(10, 18, dtype=np.int32)
    b = np.zeros(8, dtype=np.int32)
    k(a, b)
    want = np.where((~((np.arange(8) > 1) & (np.arange(8) < 6))) | (np.arange(8) == 3), a, 0)
    np.testing.assert_array_equal(b, want)


def test_ir_builder_frame_is_a_unit_step_loop():
    from tvm.script.ir_builder.base import IRBuilderFrame
    from tvm.tirx.expr import IntImm, Var

    assert isinstance(T.serial(1, 10, 1), IRBuilderFrame)
    assert isinstance(T.serial(4), IRBuilderFrame)
    assert isinstance(T.serial(1, 10, IntImm(T.int32, 1)), IRBuilderFrame)
    assert not isinstance(T.serial(1, 10, 2), IRBuilderFrame)
    assert not isinstance(T.serial(1, 10, Var("s", T.int32)), IRBuilderFrame)
    assert not isinstance(3, IRBuilderFrame)
    with pytest.raises(TypeError):
        IRBuilderFrame()


def test_unprovided_tirx_names_say_so_when_called():
    # decl_buffer is a description of a static buffer only (test_wgmma_gemm.py): a shape that
    # is not static ints says so
    with pytest.raises(NotImplementedError, match="tvm.tirx.decl_buffer"):
        tvm.tirx.decl_buffer("void", "f")
    # tirx.call_extern is T.call_extern in TIR's argument order (test_extern_source.py); outside
    # a kernel it says where it belongs
    with pytest.raises(RuntimeError, match="inside a kernel"):
        tvm.tirx.call_extern("handle", "f")


def test_vector_dtypes_are_datatypes():
    assert isinstance(T.float32x2, tvm.DataType) and T.float32x2.lanes == 2 and T.float32x2.bits == 32


def test_tirx_reinterpret_and_cast_in_tirs_argument_order():
    """tirx.reinterpret(dtype, x) and tirx.Cast(dtype, x), as upstream's quantization helpers
    call them: the bits of a float read as uint32, shifted, read back as a float."""
    from tilelang.tvm import tirx

    @T.prim_func
    def f(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "uint32"), C: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=4) as bx:
            for i in T.Parallel(4):
                B[i] = tirx.reinterpret(T.uint32, A[i])
                C[i] = tirx.reinterpret(T.float32, tirx.Cast(T.uint32, B[i]) >> tirx.const(16, T.uint32) << tirx.const(16, T.uint32))

    a = np.array([1.5, -2.0, 3.1415927, 1e-3], np.float32)
    b = np.zeros(4, np.uint32)
    c = np.full(4, np.nan, np.float32)
    compile_cpu(f)(a, b, c)
    np.testing.assert_array_equal(b, a.view(np.uint32))
    np.testing.assert_array_equal(c, (a.view(np.uint32) & 0xFFFF0000).view(np.float32))


def test_tirx_select_picks_per_element():
    """tirx.Select(c, a, b), as upstream's fp4 decode helpers write it: zero exponents give 0."""
    from tilelang.tvm import tirx

    @T.prim_func
    def f(E: T.Tensor((8,), "uint32"), V: T.Tensor((8,), "float32"), O: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                O[i] = tirx.Select(E[i] == tirx.const(0, T.uint32), tirx.const(0, T.float32), V[i] * 2.0)

    e = np.array([0, 1, 0, 3, 4, 0, 6, 7], np.uint32)
    v = np.arange(8, dtype=np.float32) + 0.5
    o = np.full(8, np.nan, np.float32)
    compile_cpu(f)(e, v, o)
    np.testing.assert_array_equal(o, np.where(e == 0, 0, v * 2).astype(np.float32))
