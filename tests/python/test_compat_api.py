"""Upstream TileLang's package API (project issue 10): tilelang.testing, tilelang.utils.tensor,
tilelang.carver.arch, tilelang.env, tilelang.math, tilelang.lower, set_autotune_inputs."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import tilelang
import tilelang.language as T
import tilelang.testing
from tilelang.utils.tensor import TensorSupplyType, get_tensor_supply, torch_assert_close

HAS_GPU = tilelang.testing.cuda_compute_version() != (0, 0)


# --------------------------------------------------------------------------- tilelang.testing

def _skip_reason(func):
    marks = [m for m in getattr(func, "pytestmark", []) if m.name == "skipif"]
    return [(bool(m.args[0]), m.kwargs.get("reason", "")) for m in marks]


def test_requires_cuda_and_compute_version_marks():
    @tilelang.testing.requires_cuda
    def a():
        pass

    @tilelang.testing.requires_cuda_compute_version(8, 0)
    def b():
        pass

    @tilelang.testing.requires_cuda_compute_version_lt(1, 0)
    def c():
        pass

    (skip_a, why_a), = _skip_reason(a)
    assert skip_a == (not HAS_GPU) and "CUDA" in why_a
    assert any(s for s, _ in _skip_reason(c))  # nothing has compute capability < 1.0
    have = tilelang.testing.cuda_compute_version()
    assert any(s for s, _ in _skip_reason(b)) == (have < (8, 0))
    for op in ("ge", "gt", "eq", "lt", "le"):
        def t():
            pass
        t = getattr(tilelang.testing, f"requires_cuda_compute_version_{op}")(9, 0)(t)
        assert len(_skip_reason(t)) == 1
    with pytest.raises(ValueError, match="mode must be one of"):
        tilelang.testing.requires_cuda_compute_version(9, 0, mode="ne")
    assert len(tilelang.testing.requires_cuda.marks()) == 1


def test_requires_package_and_targets():
    @tilelang.testing.requires_package("numpy")
    def has():
        pass

    @tilelang.testing.requires_package("numpy", "surely_not_a_package_xyz")
    def lacks():
        pass

    assert _skip_reason(has) == [(False, "Requires the package(s) numpy")]
    assert _skip_reason(lacks)[0][0] is True and "surely_not_a_package_xyz" in _skip_reason(lacks)[0][1]
    @tilelang.testing.requires_llvm
    def llvm():
        pass

    @tilelang.testing.requires_rocm
    def rocm():
        pass

    assert all(not s for s, _ in _skip_reason(llvm))
    assert _skip_reason(rocm)[0][0] is True


def test_set_random_seed_reproduces_numpy_and_random():
    import random

    tilelang.testing.set_random_seed(123)
    x = (np.random.rand(4), random.random())
    tilelang.testing.set_random_seed(123)
    y = (np.random.rand(4), random.random())
    np.testing.assert_array_equal(x[0], y[0])
    assert x[1] == y[1]


def test_main_runs_pytest_on_the_calling_file(tmp_path):
    f = tmp_path / "test_upstream_style.py"
    f.write_text(textwrap.dedent('''
        import tilelang.testing

        def test_ok():
            assert 1 + 1 == 2

        @tilelang.testing.requires_cuda_compute_version_ge(99, 0)
        def test_future_gpu():
            raise AssertionError("must be skipped")

        def test_fails_when_asked():
            import os
            assert os.environ.get("MAKE_FAIL") != "1"

        if __name__ == "__main__":
            tilelang.testing.main()
    '''))
    env = dict(os.environ)
    env.pop("MAKE_FAIL", None)
    r = subprocess.run([sys.executable, str(f), "-q", "-p", "no:cacheprovider"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "2 passed, 1 skipped" in r.stdout
    env["MAKE_FAIL"] = "1"
    r = subprocess.run([sys.executable, str(f), "-q", "-p", "no:cacheprovider"], capture_output=True, text=True,
                       env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 1 and "1 failed" in r.stdout


def test_process_func_and_regression(capsys):
    results = []

    def bench(scale=1.0):
        results.append(scale)
        return 0.5 * scale

    tilelang.testing.process_func(bench, "regression_my_case", scale=2.0)
    assert tilelang.testing.perf_regression.results[-1].name == "my_case"
    assert tilelang.testing.perf_regression.results[-1].latency == 1.0
    tilelang.testing.perf_regression.results.clear()


# --------------------------------------------------------------------------- tilelang.utils.tensor

def test_torch_assert_close_on_numpy_arrays(rng):
    a = rng.standard_normal(1000)
    b = a.copy()
    assert torch_assert_close(a, b)
    b[:3] += 1.0  # 0.3% of the elements
    with pytest.raises(AssertionError, match="Too many mismatched elements: 3 > 1"):
        torch_assert_close(a, b, rtol=1e-3, atol=1e-3, max_mismatched_ratio=0.001)
    assert torch_assert_close(a, b, rtol=1e-3, atol=1e-3, max_mismatched_ratio=0.005)
    assert tilelang.testing.torch_assert_close is torch_assert_close
    with pytest.raises(AssertionError, match="shape mismatch"):
        torch_assert_close(a, b[:10])
    # NaNs match NaNs by default
    c = np.array([np.nan, 1.0])
    assert torch_assert_close(c, c.copy())


def test_torch_assert_close_on_torch_tensors():
    torch = pytest.importorskip("torch")
    a = torch.randn(64, 64, dtype=torch.float16)
    assert torch_assert_close(a, a.clone())
    with pytest.raises(AssertionError, match="dtype mismatch"):
        torch_assert_close(a, a.float())


class _Param:
    def __init__(self, shape, dtype):
        self.shape, self.dtype = shape, dtype


@pytest.mark.parametrize("kind", list(TensorSupplyType))
@pytest.mark.parametrize("dtype", ["float16", "float32", "int8", "uint8", "int32", "bfloat16"])
def test_get_tensor_supply_numpy(kind, dtype):
    t = get_tensor_supply(kind, backend="numpy")(_Param((32, 16), dtype))
    assert t.shape == (32, 16) and t.dtype == T.dtype(dtype).as_numpy()
    v = t.astype(np.float64)
    if kind == TensorSupplyType.Zero:
        assert (v == 0).all()
    elif kind == TensorSupplyType.One or (dtype == "int8" and kind in (TensorSupplyType.Uniform,
                                                                      TensorSupplyType.Normal)):
        assert (v == 1).all()
    elif kind == TensorSupplyType.Integer or (kind == TensorSupplyType.Auto and dtype.startswith(("int", "uint"))):
        lo = 0 if dtype.startswith("uint") else -2
        assert v.min() >= lo and v.max() <= 2 and (v == np.round(v)).all()
    elif not T.dtype(dtype).is_float:  # real-valued draws cast to an integer type
        assert np.abs(v).max() <= 10 and (v == np.round(v)).all()
    elif kind in (TensorSupplyType.Uniform, TensorSupplyType.Auto):
        assert v.min() >= -1 and v.max() <= 1 and v.std() > 0.3
    else:
        assert v.std() > 0.5


def test_get_tensor_supply_rejects_dynamic_shapes():
    with pytest.raises(ValueError, match="dynamic dimension 'n'"):
        get_tensor_supply(TensorSupplyType.Integer, backend="numpy")(_Param(("n", 4), "float32"))
    with pytest.raises(ValueError, match="supply_type must be a TensorSupplyType"):
        get_tensor_supply("uniform")


def test_integer_supply_for_float8_spans_the_int8_range_as_upstream():
    # upstream draws float8 "integers" from [-128, 128) rounded to the type (timings of
    # float8 GEMMs depend on the bits the tensor cores see, so both sides must feed alike)
    torch = pytest.importorskip("torch")
    t = get_tensor_supply(TensorSupplyType.Integer, backend="torch")(_Param((64, 64), "float8_e4m3fn"))
    v = t.to(torch.float64)
    assert t.dtype == torch.float8_e4m3fn and v.min() >= -128 and v.max() <= 128 and v.abs().max() > 64

    # the profiler's own inputs agree
    @T.prim_func
    def copy(A: T.Tensor((64, 64), "float8_e4m3fn"), B: T.Tensor((64, 64), "float8_e4m3fn")):
        with T.Kernel(1, threads=128) as bx:
            T.copy(A, B)

    a = tilelang.compile(copy).get_profiler(TensorSupplyType.Integer).inputs()[0]
    v = a.to(torch.float64)
    assert a.dtype == torch.float8_e4m3fn and v.min() >= -128 and v.max() <= 128 and v.abs().max() > 64


def test_get_tensor_supply_torch():
    torch = pytest.importorskip("torch")
    t = get_tensor_supply(TensorSupplyType.Randn)(_Param((8, 8), "bfloat16"))
    assert isinstance(t, torch.Tensor) and t.dtype == torch.bfloat16 and t.shape == (8, 8)


# --------------------------------------------------------------------------- carver.arch

@pytest.mark.cpu_target  # assumes the default target / no GPU, which the CUDA run changes
def test_carver_cuda_arch_without_a_gpu():
    from tilelang.carver.arch import (CUDA, has_mma_support, is_ampere_arch, is_hopper_arch,
                                      is_tensorcore_supported_precision)

    h = CUDA("cuda -arch=sm_90a")
    assert h.sm_version == 90 and h.platform == "CUDA" and h.warp_size == 32
    assert h.compute_capability == "90" and is_hopper_arch(h) and has_mma_support(h)
    if not h.from_device:
        assert h.compute_max_core == 132 and h.smem_cap == 227 * 1024
    a = CUDA({"kind": "cuda", "arch": "sm_80"})
    assert is_ampere_arch(a) and not is_hopper_arch(a) and a.compute_max_core > 0 and a.smem_cap > 48 * 1024
    assert is_tensorcore_supported_precision("float16", "float32", a)
    assert not is_tensorcore_supported_precision("float8_e4m3fn", "float32", a)
    assert is_tensorcore_supported_precision("float8_e4m3fn", "float32", h)
    assert h.max_smem_usage == 2 * h.smem_cap and h.get_avaliable_tensorintrin_shapes() == [[16, 16], [16, 16]]
    with pytest.raises(ValueError, match="expected a CUDA target"):
        CUDA("cpu")


@pytest.mark.cpu_target  # assumes the default target / no GPU, which the CUDA run changes
def test_carver_get_arch_cpu_and_auto():
    from tilelang.carver.arch import CPU, auto_infer_current_arch, get_arch, is_cpu_arch, is_cuda_arch

    c = get_arch("llvm")
    assert isinstance(c, CPU) and is_cpu_arch(c) and c.compute_max_core == (os.cpu_count() or 1)
    cur = auto_infer_current_arch()
    assert is_cuda_arch(cur) == HAS_GPU


def test_carver_driver():
    from tilelang.carver.arch import driver

    if HAS_GPU:
        assert driver.get_num_sms() > 0
        assert driver.get_max_dynamic_shared_size_bytes() >= driver.get_shared_memory_per_block()
        assert driver.get_shared_memory_per_block(format="kb") == driver.get_shared_memory_per_block() // 1024
    else:
        with pytest.raises(RuntimeError, match="get_device_attribute\\(16\\): no usable CUDA device"):
            driver.get_num_sms()
        assert driver.get_cuda_device_properties() is None


# --------------------------------------------------------------------------- env, math, DataType, lower

def test_env_object(tmp_path, monkeypatch):
    from tilelang.env import env

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "c1"))
    assert env.TILELANG_CACHE_DIR == str(tmp_path / "c1") == tilelang.env.TILELANG_CACHE_DIR
    assert env.TILELANG_TMP_DIR == os.path.join(str(tmp_path / "c1"), "tmp")
    assert env.cache_dir() == str(tmp_path / "c1")  # the module's functions too
    env.TILELANG_CACHE_DIR = str(tmp_path / "c2")
    assert os.environ["TILELANG_CACHE_DIR"] == str(tmp_path / "c2")
    with pytest.raises(AttributeError, match="not a setting"):
        env.cache_directory = "x"
    with pytest.raises(AttributeError, match="no setting or function"):
        env.not_a_thing  # noqa: B018
    monkeypatch.delenv("TILELANG_PRINT_ON_COMPILATION", raising=False)
    assert env.TILELANG_PRINT_ON_COMPILATION == "1"


def test_math_and_datatype():
    import tilelang.math as tm

    assert [tm.cdiv(a, 4) for a in (0, 1, 4, 5, 8, 9)] == [0, 1, 1, 2, 2, 3]
    assert [tm.next_power_of_2(x) for x in (0, 1, 2, 3, 5, 64, 65)] == [1, 1, 2, 4, 8, 64, 128]
    assert tilelang.math.cdiv(10, 3) == 4
    d = tilelang.DataType("float16")
    assert d.bits == 16 and d.type_code == "float" and d.lanes == 1 and d.itemsize == 2
    assert tilelang.DataType("uint8").type_code == "uint"


# which keys are listed as having no effect depends on the target: these remarks are the CPU target's
@pytest.mark.cpu_target
def test_lower_gives_source_without_building():
    @T.prim_func
    def f(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = A[bx * 32 + i] + 1.0

    cpu = tilelang.lower(f, target="cpu")
    assert "extern \"C\"" in cpu.kernel_source and cpu.params == ["A", "B"]
    cuda = tilelang.lower(f, target="cuda -arch=sm_80", pass_configs={"tl.disable_tma_lower": True})
    assert "__global__" in cuda.kernel_source and cuda.target == "cuda -arch=sm_80"
    # a key the CUDA target acts on is not listed as having no effect there (it is on the CPU)
    assert not any("tl.disable_tma_lower" in r for r in cuda.remarks), cuda.remarks
    cpu = tilelang.lower(f, target="cpu", pass_configs={"tl.disable_tma_lower": True})
    assert any("tl.disable_tma_lower=True: accepted, no effect" in r for r in cpu.remarks), cpu.remarks
    with pytest.raises(TypeError, match="must be a @T.prim_func"):
        tilelang.lower(lambda: None)



def test_lower_takes_the_arch_as_compile_does(monkeypatch):
    # a bare "cuda" target: TILELANG_CUDA_ARCH, else the current GPU's arch, as tilelang.compile
    # (upstream's codegen tests call tilelang.lower(func, target="cuda") on a build machine)
    @T.prim_func
    def f(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                A[i] = 1.0

    monkeypatch.setenv("TILELANG_CUDA_ARCH", "sm_80")
    cuda = tilelang.lower(f, target="cuda")
    assert "__global__" in cuda.kernel_source and "sm_80" in cuda.target, cuda.target

# --------------------------------------------------------------------------- set_autotune_inputs

def test_set_autotune_inputs_are_the_tuning_inputs(rng, monkeypatch):
    from tilelang.autotuner import autotune, get_autotune_inputs, set_autotune_inputs

    monkeypatch.setenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", "1")  # measure here, not a cached result

    seen = []

    def ref(A):
        seen.append(np.array(A, copy=True))
        return np.asarray(A) * 2

    @autotune(configs=[{"block": 16}, {"block": 32}], ref_prog=ref, warmup=1, rep=2, verbose=False)
    @tilelang.jit(out_idx=[-1], target="cpu")
    def double(N, block=16):
        @T.prim_func
        def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
            with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * 2.0
        return main

    a = rng.standard_normal(64).astype(np.float32)
    assert get_autotune_inputs() is None
    with set_autotune_inputs(a):
        assert get_autotune_inputs()[0] is a
        kernel = double(64)
    assert get_autotune_inputs() is None
    assert seen and all(np.array_equal(s, a) for s in seen)
    np.testing.assert_allclose(kernel(a), a * 2)
    assert kernel.config in ({"block": 16}, {"block": 32})

    with set_autotune_inputs([a, a]):
        with pytest.raises(Exception, match="set_autotune_inputs gave 2 tensor"):
            double(32)


def test_do_bench_upstream_arguments():
    from tilelang.profiler import do_bench

    calls = []
    # counts given: one untimed call, five for the estimate, then the warm-up and timed runs
    t = do_bench(lambda: calls.append(1), warmup=2, rep=5, _n_warmup=3, _n_repeat=4, backend="cupti")
    assert t >= 0 and len(calls) == 1 + 5 + 3 + 4
    q = do_bench(lambda: None, warmup=1, rep=9, quantiles=[0.5, 0.2, 0.8], _n_warmup=0, _n_repeat=0)
    assert isinstance(q, list) and len(q) == 3 and q[1] <= q[0] <= q[2]


def test_do_bench_budgets_are_milliseconds():
    # Upstream's meaning: warmup and rep are time budgets. A 20 ms function with rep=100
    # runs about 5 timed times, not 100; a fast one many more.
    from tilelang.profiler import do_bench

    slow = []
    # (the wall clock on either target: a GPU's event timing would add an L2 flush per run)
    t = do_bench(lambda: (slow.append(1), time.sleep(0.02)), warmup=40, rep=100, backend="wall")
    assert 15 <= t <= 200, t
    assert 1 + 5 + 1 + 3 <= len(slow) <= 1 + 5 + 3 + 6, len(slow)
    fast = []
    do_bench(lambda: fast.append(1), warmup=1, rep=5, backend="wall")
    assert len(fast) > 100
    # an estimate above the baseline is returned without the full run
    early = []
    assert do_bench(lambda: (early.append(1), time.sleep(0.01)), early_stop_baseline=1.0, backend="wall") >= 5
    assert len(early) == 6
    with pytest.raises(ValueError, match="return_mode"):
        do_bench(lambda: None, return_mode="average")


def test_env_object_forwards_module_attributes(monkeypatch):
    import importlib

    module = importlib.import_module("tilelang.env")
    monkeypatch.setattr(tilelang.env, "cache_dir", lambda: "/tmp/elsewhere")
    assert module.cache_dir() == "/tmp/elsewhere" and tilelang.env.cache_dir() == "/tmp/elsewhere"
    monkeypatch.undo()
    assert module.cache_dir() != "/tmp/elsewhere"


def test_profiler_supplies_torch_tensors_when_torch_is_installed():
    """References written for upstream take torch tensors (A.view(m, n), torch.softmax):
    the profiler makes its inputs with torch wherever torch is installed, the CPU target
    included; without torch (or with TILELANG_PROFILER_NUMPY=1 on the CPU) numpy arrays."""
    torch = pytest.importorskip("torch")

    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(64, 32):
                B[i, j] = A[i, j] * 2

    profiler = tilelang.compile(main, out_idx=-1, target="cpu").get_profiler(
        tensor_supply_type=tilelang.TensorSupplyType.Randn)
    (a,) = profiler.inputs()
    assert isinstance(a, torch.Tensor) and a.dtype == torch.float16 and a.abs().sum() > 0
    profiler.assert_allclose(lambda A: A.view(64, 32) * 2)  # a torch method numpy does not have
    with pytest.raises(AssertionError):
        profiler.assert_allclose(lambda A: A.view(64, 32) * 3)


def test_profiler_assert_allclose_allows_upstreams_mismatch_ratio():
    """As upstream's, Profiler.assert_allclose lets up to max_mismatched_ratio (default 1%)
    of the elements miss; more fail, and 0 makes it exact."""
    import tilelang.language as T

    n = 1000

    @T.prim_func
    def off_by_one_element(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = A[bx * 128 + i] + T.if_then_else(bx * 128 + i == 3, 1.0, 0.0)

    prof = tilelang.compile(off_by_one_element, out_idx=[1], target="cpu").get_profiler()
    prof.assert_allclose(lambda a: a)  # 1 of 1000 differs
    with pytest.raises(AssertionError, match="1 of 1000 elements differ"):
        prof.assert_allclose(lambda a: a, max_mismatched_ratio=0.0)
    with pytest.raises(AssertionError):
        prof.assert_allclose(lambda a: a * 2)
