"""A cp.async pipeline whose copies are read last by different statements refills each copy's
stage right after its own last reader and waits for each copy just before its first reader
(upstream's order for its dequantizing GEMMs): s loads of each copy in flight. Checked on
kernels with warp specialization off (so cp.async on sm_90a too) against numpy in float64, on
whichever target the suite runs, and in the generated CUDA's waits."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison

# (the schedule is off by default until a GPU run has checked it)
NO_WS = {"tl.disable_warp_specialized": True, "tl.pipeline_refill_per_copy": True}


def scaled_gemm(M, N, K, bm=64, bn=64, bk=32, stages=2, threads=128):
    """C = A @ (B * 2)^T: B's tile is read first (scaled into a second tile), A's last (the GEMM)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), T.float16)
            b_s = T.alloc_shared((bn, bk), T.float16)
            b2 = T.alloc_shared((bn, bk), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], a_s)
                T.copy(B[bx * bn, k * bk], b_s)
                for i, j in T.Parallel(bn, bk):
                    b2[i, j] = b_s[i, j] * T.float16(2)
                T.gemm(a_s, b2, acc, transpose_B=True)
            T.copy(acc, C[by * bm, bx * bn])

    return main


def two_gemms(M, N, K, bm=64, bn=64, bk=32, stages=2, threads=128):
    """D = (A @ B^T) @ V per row block, with K-tiles of B and V read by different GEMMs."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), V: T.Tensor((N, bn), T.float16),
             D: T.Tensor((M, bn), T.float32)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            a_s = T.alloc_shared((bm, K), T.float16)
            b_s = T.alloc_shared((bn, K), T.float16)
            v_s = T.alloc_shared((bn, bn), T.float16)
            s = T.alloc_fragment((bm, bn), T.float32)
            s16 = T.alloc_fragment((bm, bn), T.float16)
            d = T.alloc_fragment((bm, bn), T.float32)
            T.copy(A[bx * bm, 0], a_s)
            T.clear(d)
            for n in T.Pipelined(T.ceildiv(N, bn), num_stages=stages):
                T.copy(B[n * bn, 0], b_s)
                T.copy(V[n * bn, 0], v_s)
                T.gemm(a_s, b_s, s, transpose_B=True, clear_accum=True)
                T.copy(s, s16)
                T.gemm(s16, v_s, d)
            T.copy(d, D[bx * bm, 0])

    return main


@pytest.mark.parametrize("stages", [2, 3])
def test_scaled_gemm_values(stages, rng):
    M, N, K = 128, 128, 320
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K)).astype(np.float16)
    c = poison((M, N))
    tilelang.compile(scaled_gemm(M, N, K, stages=stages), pass_configs=NO_WS)(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ (2 * b.astype(np.float64)).T, rtol=2e-3, atol=2e-2)


@pytest.mark.parametrize("stages", [2, 3])
def test_two_gemms_values(stages, rng):
    M, N, K = 128, 320, 64
    a = (rng.standard_normal((M, K)) / 8).astype(np.float16)
    b = (rng.standard_normal((N, K)) / 8).astype(np.float16)
    v = rng.standard_normal((N, 64)).astype(np.float16)
    d = poison((M, 64))
    tilelang.compile(two_gemms(M, N, K, stages=stages), pass_configs=NO_WS)(a, b, v, d)
    s16 = (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(d, s16 @ v.astype(np.float64), rtol=2e-3, atol=2e-2)


def _cuda(func, **cfg):
    art = tilelang.lower(func, target="cuda -arch=sm_90a", pass_configs=dict(NO_WS, **cfg))
    return art.kernel_source, "\n".join(art.remarks)


@pytest.mark.parametrize("stages", [2, 3])
def test_waits_count_the_groups_of_each_copy(stages):
    src, remarks = _cuda(scaled_gemm(128, 128, 320, stages=stages))
    assert "each copy's stage refilled after its own last reader (b_s after line 33; a_s after line 35)" in remarks, remarks
    loop = src[src.index("for (int32_t k = 0;"):]
    # two groups per step: b_s waited with 1 + (s - 1) * 2 newer groups pending, a_s with one
    # more (b_s's refill in this step); prologue: s steps of two groups
    waits = [int(w) for w in re.findall(r"cp_async_wait<(\d+)>", loop)]
    assert waits[:2] == [1 + (stages - 1) * 2, 1 + (stages - 1) * 2], waits
    assert src[:src.index("for (int32_t k = 0;")].count("cp_async_commit") == 2 * stages


def test_per_copy_refill_is_off_unless_asked():
    art = tilelang.lower(scaled_gemm(128, 128, 320), target="cuda -arch=sm_90a",
                         pass_configs={"tl.disable_warp_specialized": True})
    src, remarks = art.kernel_source, "\n".join(art.remarks)
    assert "each copy's stage refilled" not in remarks
    assert "cp_async_wait<0>();\n    __syncthreads();" in src
