"""@tilelang.autotune: every configuration is compiled, checked and timed; the fastest wins;
failing configurations are skipped and reported."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, f64, rand


def matmul_ref(a, b):  # numpy or torch inputs (the suite's CUDA mode passes torch tensors)
    from tilelang.profiler import _to_f64

    return (_to_f64(a) @ _to_f64(b)).astype(np.float32)


@tilelang.autotune(configs=[{"block_M": 16, "block_N": 16}, {"block_M": 32, "block_N": 32},
                            {"block_M": 32, "block_N": 16, "pass_configs": {"tl.disable_warp_specialized": True}}],
                   warmup=1, rep=3, ref_prog=matmul_ref, rtol=1e-4, atol=1e-4)
@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M=64, block_N=64, block_K=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
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


def test_autotune_picks_a_checked_configuration(rng, capfd):
    kernel = matmul(64, 48, 40)
    assert kernel.config in matmul.configs
    assert kernel.latency > 0 and kernel.ref_latency > 0
    assert "config 3/3" in capfd.readouterr().err
    a, b = rand(rng, (64, 40)), rand(rng, (40, 48))
    assert_close(kernel(a, b), f64(a) @ f64(b), "float32", rtol=1e-5)
    assert matmul(64, 48, 40) is kernel  # tuned once per argument tuple


def test_failing_configurations_are_skipped_and_all_failing_is_an_error():
    def wrong(a, b):
        return np.full((a.shape[0], b.shape[1]), 7, np.float32)

    tuned = tilelang.autotune(configs=[{"block_M": 16, "block_N": 16}], warmup=1, rep=2, ref_prog=wrong)(matmul.jitted)
    with pytest.raises(tilelang.TileLangRuntimeError, match="no configuration compiled and passed its checks"):
        tuned(32, 32, 16)


def test_configs_from_a_function_and_the_object_form():
    def configs(M, N, K):
        return [{"block_M": m, "block_N": 16} for m in (16, 32) if M % m == 0]

    tuned = tilelang.autotune(configs=configs, warmup=1, rep=2, verbose=False)(matmul.jitted)
    kernel = tuned(32, 32, 16)
    assert kernel.config in configs(32, 32, 16)

    from tilelang.autotuner import AutoTuner

    def program(block_M=16, block_N=16):
        return matmul.jitted.func(32, 32, 16, block_M=block_M, block_N=block_N)

    result = AutoTuner.from_kernel(program, [{"block_M": 16}, {"block_M": 32}]).set_compile_args(
        out_idx=[-1], target="cpu").set_profile_args(warmup=1, rep=2, ref_prog=matmul_ref).run()
    assert result.config in ({"block_M": 16}, {"block_M": 32}) and result.latency > 0


def test_configurations_share_one_set_of_inputs(monkeypatch):
    """Random inputs are made once per tuning, not per configuration (for large operands
    their generation, not the timing, was most of a tuning's time)."""
    from tilelang.profiler import Profiler

    made = []
    real = Profiler._make_inputs
    monkeypatch.setattr(Profiler, "_make_inputs", lambda self: made.append(1) or real(self))
    tuned = tilelang.autotune(configs=[{"block_M": 16, "block_N": 16}, {"block_M": 32, "block_N": 16},
                                       {"block_M": 16, "block_N": 32}],
                              warmup=1, rep=2, ref_prog=matmul_ref, rtol=1e-4, atol=1e-4,
                              cache_results=False, verbose=False)(matmul.jitted)
    kernel = tuned(32, 32, 24)
    assert kernel.config in tuned.configs
    assert len(made) == 1, f"inputs were made {len(made)} times for 3 configurations"


def test_return_kernel_keyword_returns_the_tuned_kernel(rng):
    """upstream's `f(M, N, K, __return_kernel=True)`: the tuned kernel itself (the keyword is
    the tuner's, never passed on to the kernel function)."""
    kernel = matmul(64, 48, 40, __return_kernel=True)
    assert kernel is matmul(64, 48, 40)
    a, b = rand(rng, (64, 40)), rand(rng, (40, 48))
    assert_close(kernel(a, b), f64(a) @ f64(b), "float32", rtol=1e-5)


def scalar_program(N=256, BLOCK_N=128, threads=64):
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), s: T.float32):
        with T.Kernel(T.ceildiv(N, BLOCK_N), threads=threads) as b:
            for i in T.Parallel(BLOCK_N):
                A[b * BLOCK_N + i] = A[b * BLOCK_N + i] + s
    return main


add_scalar = tilelang.autotune(configs=[{"threads": 64}, {"threads": 128}], warmup=1, rep=1,
                               cache_results=False)(tilelang.jit(scalar_program))


def test_scalar_inputs_need_set_autotune_inputs(rng):
    with pytest.raises(ValueError, match=r"scalar argument\(s\) s, .*set_autotune_inputs"):
        add_scalar()
    from tilelang.autotuner import set_autotune_inputs

    a = rand(rng, (256,))
    with set_autotune_inputs(a.copy(), 0.25):
        kernel = add_scalar()
    got = a.copy()
    kernel(got, 0.25)
    assert_close(got, f64(a) + 0.25, "float32")
