"""T.Pipelined(n, num_stages=1): the loaded tiles stay single, and the next iteration's load
into each is issued as cp.async right after that tile's last reader, as upstream does (its
fused-MoE example: the up-projection's weights load under the gate GEMM, the next gate
weights under the up GEMM). Values against numpy in float64 on whichever target the suite
runs; the schedule in the generated CUDA (warp specialization off, so cp.async on sm_90a)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison

NO_WS = {"tl.disable_warp_specialized": True}


def gate_up(M, N, K, bm=64, bn=64, bk=32, threads=128, stages=1):
    """G = silu-free gate/up product: (X @ Wg^T) * (X @ Wu^T), X's tile loaded into registers,
    each weight tile read by its own GEMM (two refill points)."""

    @T.prim_func
    def main(X: T.Tensor((M, K), T.float16), Wg: T.Tensor((N, K), T.float16), Wu: T.Tensor((N, K), T.float16),
             G: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            x = T.alloc_fragment((bm, bk), T.float16)
            wg = T.alloc_shared((bn, bk), T.float16)
            wu = T.alloc_shared((bn, bk), T.float16)
            g = T.alloc_fragment((bm, bn), T.float32)
            u = T.alloc_fragment((bm, bn), T.float32)
            T.clear(g)
            T.clear(u)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(X[by * bm, k * bk], x)
                T.copy(Wg[bx * bn, k * bk], wg)
                T.gemm(x, wg, g, transpose_B=True)
                T.copy(Wu[bx * bn, k * bk], wu)
                T.gemm(x, wu, u, transpose_B=True)
            for i, j in T.Parallel(bm, bn):
                g[i, j] = g[i, j] * u[i, j]
            T.copy(g, G[by * bm, bx * bn])

    return main


def gemm(M, N, K, bm=64, bn=64, bk=32, threads=128, stages=1):
    """C = A @ B with both tiles read by one GEMM: one refill point, after it."""

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((K, N), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), T.float16)
            b_s = T.alloc_shared((bk, bn), T.float16)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], a_s)
                T.copy(B[k * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("K", [32, 96, 320])
def test_gate_up_values(K, rng):
    M, N = 128, 128
    x = (rng.standard_normal((M, K)) / 4).astype(np.float16)
    wg = (rng.standard_normal((N, K)) / 4).astype(np.float16)
    wu = (rng.standard_normal((N, K)) / 4).astype(np.float16)
    out = poison((M, N))
    tilelang.compile(gate_up(M, N, K), pass_configs=NO_WS)(x, wg, wu, out)
    x64 = x.astype(np.float64)
    ref = (x64 @ wg.astype(np.float64).T) * (x64 @ wu.astype(np.float64).T)
    np.testing.assert_allclose(out, ref, rtol=3e-3, atol=3e-2)


@pytest.mark.parametrize("K", [32, 288])
def test_gemm_values(K, rng):
    M, N = 128, 64
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = poison((M, N))
    tilelang.compile(gemm(M, N, K), pass_configs=NO_WS)(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=2e-3, atol=2e-2)


def _cuda(func, **cfg):
    art = tilelang.lower(func, target="cuda -arch=sm_90a", pass_configs=dict(NO_WS, **cfg))
    return art.kernel_source, "\n".join(art.remarks)


def _loop(src):
    start = src.index("for (int32_t k = 0;")
    return src[:start], src[start:]


def test_two_refill_points_each_after_its_gemm():
    src, remarks = _cuda(gate_up(128, 128, 320))
    assert re.search(r"one stage; the next iteration's loads issued as cp\.async after the tiles' last reader "
                     r"\(wg after line \d+; wu after line \d+\)", remarks), remarks
    prologue, loop = _loop(src)
    # the prologue loads both tiles of step 0, one group each; the tiles get no stage dimension
    assert prologue.count("cp_async_commit") == 2
    assert "wu = reinterpret_cast<tl::half*>(tl_smem + 4096)" in src, "wg should be one 64x32 tile"
    # wg is waited for with wu's group still pending, wu with wg's refill (issued after the
    # first GEMM) pending; each refill follows its reader behind a barrier
    waits = [int(w) for w in re.findall(r"cp_async_wait<(\d+)>", loop)]
    assert waits[:2] == [1, 1], waits
    first_gemm = loop.index("gemm_")
    second_gemm = loop.index("gemm_", first_gemm + 1)
    refills = [m.start() for m in re.finditer(r"cp_async_zfill_16|cp_async_commit", loop)]
    assert any(first_gemm < r < second_gemm for r in refills), "wg's refill does not run under the up GEMM"
    assert "__syncthreads" in loop[first_gemm:second_gemm]


def test_one_refill_point_waits_before_the_reader():
    src, remarks = _cuda(gemm(128, 128, 320))
    assert re.search(r"one stage; .*\(a_s, b_s after line \d+\)", remarks), remarks
    prologue, loop = _loop(src)
    assert prologue.count("cp_async_commit") == 1
    waits = [int(w) for w in re.findall(r"cp_async_wait<(\d+)>", loop)]
    assert waits[0] == 0, waits
    # the refill comes after the GEMM, behind a barrier
    g = loop.index("gemm_")
    assert loop.index("cp_async_commit") > g and "__syncthreads" in loop[g:loop.index("cp_async_commit")]


def test_single_stage_off_loads_in_order():
    src, remarks = _cuda(gate_up(128, 128, 320), **{"tl.pipeline_single_stage": False})
    assert "one stage" not in remarks
    assert "cp_async" not in _loop(src)[1]


def test_program_cp_async_groups_keep_their_order():
    """A loop that commits and waits for its own cp.async groups runs as written (its waits
    count its groups); it was never an error."""

    @T.prim_func
    def main(A: T.Tensor((256,), T.float32), B: T.Tensor((256,), T.float32), C: T.Tensor((64,), T.float32)):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), T.float32)
            t = T.alloc_shared((64,), T.float32)
            acc = T.alloc_fragment((64,), T.float32)
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=1):
                T.copy(A[k * 64:(k + 1) * 64], s)
                for i in T.Parallel(64):
                    T.ptx_cp_async(T.access_ptr(t[i], "w", 1), T.access_ptr(B[k * 64 + i], "r", 1), 1)
                T.ptx_commit_group()
                T.ptx_wait_group(0)
                for i in T.Parallel(64):
                    acc[i] += s[i] * t[i]
            T.copy(acc, C)

    src, remarks = _cuda(main)
    assert "automatic pipelining and warp specialization are off, its loops run as written" in remarks, remarks
    assert "one stage" not in remarks
    a = np.arange(256, dtype=np.float32) / 256
    b = np.arange(256, dtype=np.float32)[::-1].copy() / 256
    c = poison((64,))
    tilelang.compile(main)(a, b, c)
    np.testing.assert_allclose(c, (a.reshape(4, 64).astype(np.float64) * b.reshape(4, 64)).sum(0), rtol=1e-5)
