"""tl.pipeline_refill_first (src/transform/cuda/pipeline_async.cc; off by default): a cp.async
pipeline refills the next stage before it waits for the one the step reads, as upstream's code
does, behind a second barrier. Checked as sm_90a text here; the GPU suite
(TILELANG_TEST_CUDA=1) runs the values."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T

SM90 = "cuda -arch=sm_90a"
NO_WS = {"tl.disable_warp_specialized": True}  # (a cp.async pipeline, not a TMA producer)


def gemm(M=128, N=128, K=256, stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            a_s = T.alloc_shared((64, 32), "float16")
            b_s = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=stages):
                T.copy(A[by * 64, k * 32], a_s)
                T.copy(B[k * 32, bx * 64], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C[by * 64, bx * 64])

    return main


def loop_of(src):
    return src[src.index("for (int32_t k = 0;"):]


def schedule(src):
    """The loop body's barriers, commits, waits and GEMMs, in order (GEMMs as "gemm")."""
    found = re.findall(r"__syncthreads\(\)|cp_async_commit\(\)|cp_async_wait<\d+>\(\)|tl::gemm_ss\w*<", loop_of(src))
    return ["gemm" if m.startswith("tl::gemm") else m for m in found]


def test_the_wait_comes_first_by_default():
    art = tilelang.lower(gemm(), target=SM90, pass_configs=NO_WS)
    assert schedule(art.kernel_source)[:4] == ["cp_async_wait<0>()", "__syncthreads()", "cp_async_commit()",
                                               "gemm"], loop_of(art.kernel_source)
    assert not any("tl.pipeline_refill_first" in r for r in art.remarks), art.remarks


@pytest.mark.parametrize("stages", [2, 3])
def test_the_key_refills_before_the_wait(stages):
    art = tilelang.lower(gemm(stages=stages), target=SM90, pass_configs={**NO_WS, "tl.pipeline_refill_first": True})
    assert schedule(art.kernel_source)[:5] == ["__syncthreads()", "cp_async_commit()",
                                               f"cp_async_wait<{stages - 1}>()", "__syncthreads()",
                                               "gemm"], loop_of(art.kernel_source)
    assert any("refilled before the wait" in r and "tl.pipeline_refill_first" in r for r in art.remarks), art.remarks


@pytest.mark.parametrize("stages, refill_first, K", [(2, True, 256), (3, True, 256), (2, True, 32), (2, False, 96)])
def test_values_match_float64(stages, refill_first, K):
    # every step's stage complete before it is read, for step counts below and above s
    rng = np.random.default_rng(K + stages)
    a = rng.standard_normal((128, K)).astype(np.float16)
    b = rng.standard_normal((K, 128)).astype(np.float16)
    c = np.full((128, 128), np.nan, np.float32)
    kernel = tilelang.compile(gemm(K=K, stages=stages),
                              pass_configs={**NO_WS, "tl.pipeline_refill_first": refill_first})
    kernel(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)
