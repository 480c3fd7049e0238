"""Warp-specialized loops whose staged tiles are read with ordinary loads (element reads,
ldmatrix for mma.sync) fence the proxies before releasing the stage: the producer's next
TMA into that stage writes through the async proxy, which the mbarrier's release/acquire
alone does not order after those loads (upstream's example_gqa_bwd gave a different wrong
dK on every run on the H200 with 2 stages). Loops read only by wgmma need no fence."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def staged_tile_sum(M=64, bk=64, K=1024, stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), C: T.Tensor((M, bk), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((M, bk), "float16")
            acc = T.alloc_fragment((M, bk), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=stages):
                T.copy(A[0, k * bk], a_s)
                for i, j in T.Parallel(M, bk):
                    acc[i, j] += T.cast(a_s[i, j], "float32") * (k + 1)
            T.copy(acc, C)

    return main


def staged_mma_sync_gemm(M=128, N=72, K=32, steps=8, stages=2):
    """dK += dS @ q over steps as attention backward has it: dS in registers, q staged by
    TMA; rows of 72 columns (144 bytes) cannot take wgmma panels, so q is read by ldmatrix
    for mma.sync."""
    @T.prim_func
    def main(S: T.Tensor((steps, M, K), "float16"), Q: T.Tensor((steps * K, N), "float16"),
             D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256) as bx:
            s_f = T.alloc_fragment((M, K), "float16")
            q_s = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.clear(acc)
            for k in T.Pipelined(steps, num_stages=stages):
                T.copy(Q[k * K, 0], q_s)
                T.copy(S[k, 0, 0], s_f)
                T.gemm(s_f, q_s, acc)
            T.copy(acc, D)

    return main


@pytest.mark.parametrize("stages", [2, 3])
def test_staged_tiles_read_element_wise(stages):
    rng = np.random.default_rng(stages)
    a = rng.standard_normal((64, 1024)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    tilelang.compile(staged_tile_sum(stages=stages))(a, c)
    weights = np.repeat(np.arange(1, 17, dtype=np.float64), 64)
    ref = (a.astype(np.float64) * weights).reshape(64, 16, 64).sum(axis=1)
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def test_staged_tile_read_by_mma_sync_gemm():
    rng = np.random.default_rng(11)
    s = rng.standard_normal((8, 128, 32)).astype(np.float16)
    q = rng.standard_normal((256, 72)).astype(np.float16)
    d = np.full((128, 72), np.nan, np.float32)
    tilelang.compile(staged_mma_sync_gemm())(s, q, d)
    ref = sum(s[k].astype(np.float64) @ q[32 * k:32 * (k + 1)].astype(np.float64) for k in range(8))
    np.testing.assert_allclose(d, ref, rtol=1e-3, atol=1e-2)


def _release_lines(kernel):
    lines = [line.strip() for line in kernel.get_kernel_source().splitlines()]
    return [lines[i - 1] for i, line in enumerate(lines) if line.startswith("tl::mbarrier_arrive(")]


def test_generic_reads_fence_the_proxies_before_the_release():
    for func in (staged_tile_sum(), staged_mma_sync_gemm()):
        k = tilelang.compile(func, target="cuda -arch=sm_90a")
        assert any("warp-specialized" in r for r in k.get_remarks()), k.get_remarks()
        before = _release_lines(k)
        assert before and all(b == "tl::fence_proxy_async_shared();" for b in before), before


def test_wgmma_only_loops_release_without_a_fence():
    @T.prim_func
    def gemm(A: T.Tensor((64, 512), "float16"), B: T.Tensor((512, 128), "float16"),
             C: T.Tensor((64, 128), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 64), "float16")
            b_s = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((64, 128), "float32")
            T.clear(acc)
            for k in T.Pipelined(8, num_stages=3):
                T.copy(A[0, k * 64], a_s)
                T.copy(B[k * 64, 0], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C)

    k = tilelang.compile(gemm, target="cuda -arch=sm_90a")
    assert any("warp-specialized" in r for r in k.get_remarks()), k.get_remarks()
    src = k.get_kernel_source()
    assert "mbarrier_arrive(" in src, src
    assert "fence_proxy_async_shared" not in "\n".join(_release_lines(k))


def tiles_allocated_in_the_loop(stages):
    @T.prim_func
    def main(A: T.Tensor((32, 512), "float16"), W: T.Tensor((64, 512), "float16"), C: T.Tensor((32, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            acc = T.alloc_fragment((32, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=stages):
                a_s = T.alloc_shared((32, 128), "float16")  # allocated in the body, as upstream's mHC example
                w_s = T.alloc_shared((64, 128), "float16")
                T.copy(A[0, k * 128], a_s)
                T.copy(W[0, k * 128], w_s)
                T.gemm(a_s, w_s, acc, transpose_B=True)
            T.copy(acc, C)

    return main


@pytest.mark.parametrize("stages", [1, 2])
def test_tiles_allocated_inside_a_pipelined_body(stages):
    """The pipeline loads a stage in a prologue before the loop: tiles allocated in the
    body are allocated before it (an internal compiler error on CUDA before)."""
    rng = np.random.default_rng(stages)
    a = rng.standard_normal((32, 512)).astype(np.float16)
    w = rng.standard_normal((64, 512)).astype(np.float16)
    c = np.full((32, 64), np.nan, np.float32)
    tilelang.compile(tiles_allocated_in_the_loop(stages))(a, w, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ w.astype(np.float64).T, rtol=1e-3, atol=1e-2)
    assert tilelang.compile(tiles_allocated_in_the_loop(stages), target="cuda -arch=sm_90a").get_kernel_source()


def gemm_on_a_tile_the_loop_writes(bn=64):
    """dQ = P^T K with P written to shared memory by the consumers in each iteration (from a
    register fragment: a lowered cast_copy, not a BufferStore): the wgmma reading it needs
    its proxy fence (the H200 fuzz run found dQ wrong without it)."""
    @T.prim_func
    def main(K: T.Tensor((128, 128), "float16"), Q: T.Tensor((2 * bn, 128), "float16"),
             DQ: T.Tensor((2 * bn, 128), "float32")):
        with T.Kernel(1, threads=256) as bx:
            k_s = T.alloc_shared((128, 128), "float16")
            q_s = T.alloc_shared((bn, 128), "float16")
            p_s = T.alloc_shared((128, bn), "float16")
            s_f = T.alloc_fragment((128, bn), "float32")
            p_f = T.alloc_fragment((128, bn), "float16")
            dq = T.alloc_fragment((bn, 128), "float32")
            T.copy(K, k_s)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(Q[k * bn, 0], q_s)
                T.gemm(k_s, q_s, s_f, transpose_B=True, clear_accum=True)
                for i, j in T.Parallel(128, bn):
                    p_f[i, j] = T.cast(s_f[i, j] * 0.125, "float16")
                T.copy(p_f, p_s)
                T.gemm(p_s, k_s, dq, transpose_A=True, clear_accum=True)
                T.copy(dq, DQ[k * bn, 0])

    return main


@pytest.mark.parametrize("bn", [64, 128])
def test_wgmma_on_a_tile_written_in_the_loop_keeps_its_proxy_fence(bn):
    rng = np.random.default_rng(bn)
    kk = rng.standard_normal((128, 128)).astype(np.float16)
    q = rng.standard_normal((2 * bn, 128)).astype(np.float16)
    dq = np.full((2 * bn, 128), np.nan, np.float32)
    tilelang.compile(gemm_on_a_tile_the_loop_writes(bn))(kk, q, dq)
    for k in range(2):
        p = (kk.astype(np.float64) @ q[k * bn:(k + 1) * bn].astype(np.float64).T * 0.125).astype(np.float16)
        np.testing.assert_allclose(dq[k * bn:(k + 1) * bn], p.astype(np.float64).T @ kk.astype(np.float64),
                                   rtol=2e-2, atol=5e-2)
    src = tilelang.compile(gemm_on_a_tile_the_loop_writes(bn), target="cuda -arch=sm_90a").get_kernel_source()
    calls = [line.strip() for line in src.splitlines() if "tl::gemm_ss_wgmma<" in line and "p_s[0]" in line]
    # <M, N, K, trans_a, trans_b, proxy_fence, ...>: the fence is kept (true, or left at its default)
    assert calls and all(", false, false>" not in c and "false, false, 2>" not in c for c in calls), calls
    assert all(c.split("<")[1].split(">")[0].split(", ")[5:6] in ([], ["true"]) for c in calls), calls
