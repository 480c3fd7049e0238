"""Hand warp-specialized kernels written as `tid = T.get_thread_binding(); if tid >= 128:
<producer> else: <consumer>` (upstream's minference example) run as the T.ws blocks they
mean: the warpgroup with the tile work becomes the kernel's threads, the other the producer
above them. Also: a register-A GEMM whose B is a stage of a 3-D tile takes wgmma from that
stage (what such kernels do), and T.Parallel(prefer_async=True) copies next to the
program's own cp.async group calls (test_prefer_async_copies.py has the copies). Results
against numpy on whichever target the suite runs; CUDA choices compile-only."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison, rand


def role_branch_gemm(M, N, K, bM=64, bN=64, bK=32, stages=2, dtype="float16"):
    """C = A @ B: threads 128..255 load each stage by TMA, threads 0..127 multiply."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), dtype)
            B_s = T.alloc_shared((stages, bK, bN), dtype)
            acc = T.alloc_fragment((bM, bN), "float32")
            bars = T.alloc_barrier([128] * (2 * stages))  # full[0..s), then empty[0..s)
            tid = T.get_thread_binding()
            if tid >= 128:
                for k in T.serial(T.ceildiv(K, bK)):
                    s = k % stages
                    T.mbarrier_wait_parity(mbarrier=bars[s + stages], parity=((k // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bM:(by + 1) * bM, k * bK:(k + 1) * bK], A_s[s, :, :], barrier=bars[s])
                    T.tma_copy(B[k * bK:(k + 1) * bK, bx * bN:(bx + 1) * bN], B_s[s, :, :], barrier=bars[s])
                    T.mbarrier_arrive(mbarrier=bars[s])
            else:
                T.clear(acc)
                for k in T.serial(T.ceildiv(K, bK)):
                    s = k % stages
                    T.mbarrier_wait_parity(mbarrier=bars[s], parity=(k // stages) % 2)
                    T.gemm(A_s[s, :, :], B_s[s, :, :], acc)
                    T.mbarrier_arrive(mbarrier=bars[s + stages])
                T.copy(acc, C[by * bM, bx * bN])

    return main


def test_role_branch_gemm_matches_numpy(rng):
    # as many k-tiles as stages: the CPU runs the producer branch before the consumer's (in
    # program order), so no load may wait for a stage the consumer has yet to release
    M, N, K = 128, 64, 64
    a, b = rand(rng, (M, K), "float16"), rand(rng, (K, N), "float16")
    c = poison((M, N), "float16")
    compile_cpu(role_branch_gemm(M, N, K))(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")


def test_role_branches_become_the_producer_and_the_consumers_on_cuda():
    k = tilelang.lower(role_branch_gemm(256, 256, 512), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.remarks)
    assert "its branch on the thread index over one warpgroup and the other runs as T.ws blocks" in remarks
    assert "warpgroup 0's T.ws blocks run on the kernel's 128 threads, warpgroup 1's on the producer" in remarks
    assert "128 producer threads above the consumers" in k.kernel_source, k.kernel_source
    assert "__launch_bounds__(256" in k.kernel_source


def staged_attention_step(stages=2):
    """O = softmax-free two-GEMM step per stage: S = Q K_s^T, O += S V_s with V_s a stage
    of a 3-D tile (a register-A GEMM on a stage)."""

    @T.prim_func
    def main(Q: T.Tensor((64, 64), "float16"), K: T.Tensor((stages, 64, 64), "float16"),
             O: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            q = T.alloc_shared((64, 64), "float16")
            ks = T.alloc_shared((stages, 64, 64), "float16")
            s = T.alloc_fragment((64, 64), "float32")
            sc = T.alloc_fragment((64, 64), "float16")
            o = T.alloc_fragment((64, 64), "float32")
            T.copy(Q, q)
            T.copy(K, ks)
            T.clear(o)
            for b in T.serial(stages):
                T.gemm(q, ks[b % stages, :, :], s, transpose_B=True, clear_accum=True)
                T.copy(s, sc)
                T.gemm(sc, ks[b % stages, :, :], o)
            T.copy(o, O)

    return main


def test_register_a_gemm_on_a_stage_matches_numpy(rng):
    q = (rng.standard_normal((64, 64)) / 8).astype(np.float16)
    kv = (rng.standard_normal((2, 64, 64)) / 8).astype(np.float16)
    o = poison((64, 64))
    compile_cpu(staged_attention_step(), pass_configs={"tl.enable_wgmma_stages": True})(q, kv, o)
    want = np.zeros((64, 64))
    for b in range(2):
        s = (q.astype(np.float64) @ kv[b].astype(np.float64).T).astype(np.float16).astype(np.float64)
        want += s @ kv[b].astype(np.float64)
    np.testing.assert_allclose(o, want, rtol=2e-2, atol=2e-2)


def test_register_a_wgmma_reads_the_stage_it_is_given():
    k = tilelang.lower(staged_attention_step(), target="cuda -arch=sm_90a",
                       pass_configs={"tl.enable_wgmma_stages": True})
    assert "A from registers, wgmma m64n64k16 with B from shared memory" in "\n".join(k.remarks), k.remarks
    line = next(l for l in k.kernel_source.splitlines() if "gemm_rs_wgmma" in l)
    assert "(&ks[(b * 4096)])" in line, line  # stage b's panels (4096 elements a stage), not stage 0's


def test_cp_async_groups_around_prefer_async_copies(rng):
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float16"), Y: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float16")
            for i, j in T.Parallel(64, 64, prefer_async=True):
                s[i, j] = X[i, j]
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.copy(s, Y)

    x = rand(rng, (64, 64), "float16")
    y = poison((64, 64), "float16")
    k = compile_cpu(main)
    k(x, y)
    np.testing.assert_array_equal(y, x)
    # on CUDA (tl.prefer_async_copies, on by default) the copy is cp.async,
    # committed and waited for after its loop (no annotation
    # says the program does it); the program's own group calls are real too
    # (test_program_cp_async_groups.py), and with nothing more in flight change nothing
    lowered = tilelang.lower(main, target="cuda -arch=sm_80")
    assert any("cp.async of 16 bytes per group into s, then committed" in r for r in lowered.remarks), lowered.remarks
    src = lowered.kernel_source
    assert src.count("tl::cp_async_commit();") == 2 and src.count("tl::cp_async_wait<0>();") == 2, src
    with pytest.raises(Exception, match="T.ptx_wait_group: count must be a non-negative int"):
        @T.prim_func
        def bad(X: T.Tensor((4,), "float16")):
            with T.Kernel(1, threads=32):
                T.ptx_wait_group(-1)

        tilelang.compile(bad)
