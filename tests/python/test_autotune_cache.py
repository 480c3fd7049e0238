"""Autotuning at scale on the CPU: configurations compiled on several threads, then timed
one at a time; the result cached on disk so that another process picks the best
configuration without tuning (it compiles, here loads from the kernel cache, that one only);
the time budget and early stop. No timing assertions: compilations are counted instead."""
import json
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, f64, rand

CONFIGS = [{"block_M": 16, "block_N": 16}, {"block_M": 32, "block_N": 16}, {"block_M": 32, "block_N": 32}]


def matmul_program(M, N, K, block_M=32, block_N=32, block_K=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=64) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), "float32")
            B_s = T.alloc_shared((block_K, block_N), "float32")
            C_f = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * block_M, bx * block_N])

    return main


def ref(a, b):  # numpy or torch inputs (the suite's CUDA mode passes torch tensors)
    from tilelang.profiler import _to_f64

    return (_to_f64(a) @ _to_f64(b)).astype(np.float32)


def tuned(**kw):
    kw = dict(dict(configs=CONFIGS, warmup=1, rep=2, ref_prog=ref, rtol=1e-4, atol=1e-4, verbose=False), **kw)
    return tilelang.autotune(**kw)(tilelang.jit(out_idx=[-1], target="cpu")(matmul_program))


@pytest.fixture(scope="module")
def module_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("autotune-cache")


@pytest.fixture
def private_cache(module_cache, monkeypatch):
    """A cache folder of this module's: kernels compiled by one test are reused by the next,
    tuning results are not."""
    shutil.rmtree(module_cache / "autotune", ignore_errors=True)
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(module_cache))
    monkeypatch.delenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", raising=False)
    return module_cache


def test_parallel_compile_then_the_cache_in_the_same_process(private_cache, rng):
    first = tuned(max_workers=2)
    kernel = first(48, 32, 32)
    assert first.stats["compiled"] == 3 and first.stats["timed"] == 3 and first.stats["workers"] == 2
    assert not first.stats["from_cache"] and kernel.config in CONFIGS
    a, b = rand(rng, (48, 32)), rand(rng, (32, 32))
    assert_close(kernel(a, b), f64(a) @ f64(b), "float32")
    entries = [f for _, _, fs in os.walk(private_cache / "autotune") for f in fs if f.endswith(".json")]
    assert len(entries) == 1

    again = tuned()  # a new tuner, as in a new process: the disk cache answers
    kernel2 = again(48, 32, 32)
    assert again.stats == dict(again.stats, compiled=1, timed=0, from_cache=True)
    assert kernel2.config == kernel.config and kernel2.latency == kernel.latency and kernel2.cache_hit

    # other arguments, configurations or reference: tuned afresh
    other = tuned()
    other(64, 32, 32)
    assert other.stats["compiled"] == 3 and not other.stats["from_cache"]
    fewer = tuned(configs=CONFIGS[:2])
    fewer(48, 32, 32)
    assert fewer.stats["compiled"] == 2 and not fewer.stats["from_cache"]


def test_the_cache_can_be_turned_off(private_cache, monkeypatch):
    tuned()(32, 32, 16)
    monkeypatch.setenv("TILELANG_AUTO_TUNING_DISABLE_CACHE", "1")
    t = tuned()
    t(32, 32, 16)
    assert t.stats["compiled"] == 3 and not t.stats["from_cache"]
    monkeypatch.delenv("TILELANG_AUTO_TUNING_DISABLE_CACHE")
    t = tuned(cache_results=False)
    t(32, 32, 16)
    assert not t.stats["from_cache"]


SCRIPT = textwrap.dedent("""
    import json, sys, time
    sys.path.insert(0, {tests!r})
    import tilelang
    from test_autotune_cache import tuned
    t = tuned(max_workers=2)
    t0 = time.perf_counter()
    kernel = t(40, 32, 16)
    print(json.dumps(dict(t.stats, config=kernel.config, pick_ms=(time.perf_counter() - t0) * 1000,
                          kernel_cache_hit=kernel.cache_hit)))
""")


def test_a_second_process_picks_the_cached_configuration(tmp_path, private_cache):
    script = tmp_path / "tune.py"
    script.write_text(SCRIPT.format(tests=os.path.dirname(__file__)))
    env = dict(os.environ, TILELANG_CACHE_DIR=str(private_cache), TILELANG_DEFAULT_TARGET="cpu",
               TILELANG_PRINT_ON_COMPILATION="0")
    env.pop("TILELANG_AUTO_TUNING_DISABLE_CACHE", None)
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["compiled"] == 3 and not first["from_cache"]
    # the second process compiles nothing new: one kernel, loaded from the kernel cache
    assert second["from_cache"] and second["compiled"] == 1 and second["timed"] == 0
    assert second["kernel_cache_hit"] and second["config"] == first["config"]


def test_time_budget_and_early_stop(private_cache):
    t = tuned(time_budget=0)
    with pytest.raises(tilelang.TileLangRuntimeError, match="time budget exhausted"):
        t(32, 32, 16)
    assert not os.path.exists(private_cache / "autotune")  # nothing is cached from a failed tuning
    # early_stop_factor=0: every configuration after the first is behind "0 x the best" at its
    # first look, so only the first is timed in full and it wins
    t = tuned(early_stop=True, early_stop_factor=0.0, cache_results=False)
    kernel = t(32, 32, 16)
    assert kernel.config == CONFIGS[0] and t.stats["timed"] == 3


def test_progress_goes_to_stderr(private_cache, capfd):
    t = tuned(verbose=True, cache_results=False)
    t(32, 32, 16)
    err = capfd.readouterr().err
    assert "compile" in err and "3/3" in err and "best " in err


def test_eager_style_compiles_in_parallel(private_cache, rng):
    @tilelang.autotune(configs=[{"block": 16}, {"block": 32}], warmup=1, rep=2, verbose=False, max_workers=2)
    @tilelang.jit(target="cpu")
    def twice(X, block=16):
        N = T.const("N")
        X: T.Tensor((N,), T.float32)
        Y = T.empty((N,), T.float32)
        with T.Kernel(T.ceildiv(N, block), threads=32) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Y[bx * block + i] = X[bx * block + i] * 2.0
        return Y

    x = rand(rng, (100,))
    np.testing.assert_array_equal(twice(x), x * 2)
    assert twice.stats["compiled"] == 2


def test_results_tuned_on_given_inputs_are_keyed_by_them(private_cache, rng):
    from test_autotune import scalar_program
    from tilelang.autotuner import set_autotune_inputs

    def scalar_tuned():
        return tilelang.autotune(configs=[{"threads": 64}, {"threads": 128}], warmup=1, rep=1,
                                 verbose=False)(tilelang.jit(target="cpu")(scalar_program))

    a = rand(rng, (256,))
    with set_autotune_inputs(a.copy(), 0.25):
        scalar_tuned()()
    # a cached result of tuning on given inputs does not answer a call without them: the
    # tuner still cannot invent the scalar
    with pytest.raises(ValueError, match="set_autotune_inputs"):
        scalar_tuned()()
    with set_autotune_inputs(a.copy(), 0.25):  # the same inputs: the cache answers
        again = scalar_tuned()
        again()
        assert again.stats["from_cache"]
    # other tensor values of the same shapes: the cache too; another scalar (it may steer the
    # kernel, as a loop bound would): tuned afresh
    with set_autotune_inputs(rand(rng, (256,)), 0.25):
        same_shape = scalar_tuned()
        same_shape()
        assert same_shape.stats["from_cache"]
    with set_autotune_inputs(a.copy(), 0.5):
        other_scalar = scalar_tuned()
        other_scalar()
        assert not other_scalar.stats["from_cache"]


def test_autotuner_object_cache_key():
    import inspect
    import threading
    from dataclasses import replace

    from tilelang.autotuner import AutoTuner
    from tilelang.autotuner.param import CompileArgs, ProfileArgs

    def key(compile_args=None, profile_args=None, configs=({"block_M": 16},)):
        t = AutoTuner(matmul_program, configs=list(configs))
        t.compile_args = compile_args or CompileArgs()
        t.profile_args = profile_args or ProfileArgs()
        return t.generate_cache_key(inspect.signature(matmul_program).parameters, {})

    base = key()
    assert isinstance(base, str) and base == key()
    assert base != key(compile_args=CompileArgs(out_idx=[2]))
    assert base != key(configs=({"block_M": 32},))
    for change in (dict(skip_check=True), dict(cache_input_tensors=False), dict(rtol=1e-3)):
        assert base != key(profile_args=replace(ProfileArgs(), **change))
    lock = threading.Lock()
    for callback in ("ref_prog", "supply_prog", "manual_check_prog"):
        assert key(profile_args=ProfileArgs(**{callback: lambda *a: lock})) is None
