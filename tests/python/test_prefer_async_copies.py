"""T.Parallel(..., prefer_async=True): an element copy from a global tensor into a shared
tile (rows gathered through an index table, zero-filled under a guard, into a stage the
program picks) is issued as cp.async, 16 bytes per thread at a time. Without
upstream's annotation "parallel_async_without_async_commit_wait" the copies are committed and
waited for after the loop; with it the program does that itself (T.ptx_commit_group /
T.ptx_wait_group), as upstream's minference example prefetches the next stage while computing
on the current one. The CUDA forms are read from the generated source (no GPU needed); the
values are checked on whichever target the suite runs (the CPU copies at once).
tl.prefer_async_copies (on by default) turns it off with 0."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison

M, D, N = 64, 64, 256
ON = {"tl.prefer_async_copies": True}


def gather(own_groups=False, body="copy", wait=True):
    """Out[i, :] = K[Idx[i], :] for i < cnt (zeros below), through stage 1 of a 2-stage tile."""

    @T.prim_func
    def main(K: T.Tensor((N, D), "float16"), Idx: T.Tensor((M,), "int32"), cnt: T.int32,
             Out: T.Tensor((M, D), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((2, M, D), "float16")
            idx = T.alloc_shared((M,), "int32")
            for i in T.Parallel(M):
                idx[i] = Idx[i]
            for i, j in T.Parallel(M, D, prefer_async=True,
                                   annotations={"parallel_async_without_async_commit_wait": own_groups}):
                if body == "copy":
                    S[1, i, j] = T.if_then_else(i < cnt, K[idx[i], j], 0)
                else:  # not a copy: computed values cannot be cp.async
                    S[1, i, j] = K[idx[i], j] * T.float16(2)
            if own_groups:
                T.ptx_commit_group()
                if wait:
                    T.ptx_wait_group(0)
            for i, j in T.Parallel(M, D):
                Out[i, j] = S[1, i, j]

    return main


def cuda(func, arch="sm_90a", configs=ON):
    k = tilelang.lower(func, target=f"cuda -arch={arch}", pass_configs=configs)
    return k.kernel_source, [r for r in k.remarks if "prefer_async" in r]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("own_groups", [False, True])
def test_the_copy_is_cp_async(arch, own_groups):
    src, remarks = cuda(gather(own_groups), arch)
    want = "committed and waited for by the program" if own_groups else "then committed and waited for"
    assert len(remarks) == 1 and "cp.async of 16 bytes per group into S" in remarks[0] and want in remarks[0], remarks
    body = src[src.index("tl::ptx_cp_async("):]
    assert body.count("tl::ptx_cp_async(") == 1 and ", 16, " in body, src  # one 16-byte copy per group
    # the rows the guard rules out read no address of theirs (the index may be anything there)
    assert ": (&K[0])), 16," in body, src
    # the wait is followed by a barrier before other threads read the tile
    wait = body.index("tl::cp_async_wait<0>();")
    assert "__syncthreads();" in body[wait:body.index("Out[")], src


def test_other_bodies_are_refused_with_the_reason():
    src, remarks = cuda(gather(body="scaled"))
    assert len(remarks) == 1 and "not issued as the program's cp.async (not an element copy" in remarks[0], remarks
    assert "ptx_cp_async" not in src


def test_without_a_wait_in_the_kernel_it_is_refused():
    src, remarks = cuda(gather(own_groups=True, wait=False))
    assert len(remarks) == 1 and "not issued as the program's cp.async (the kernel has no T.ptx_wait_group" in remarks[0], remarks
    assert "ptx_cp_async" not in src


def test_on_by_default_and_off_with_the_key():
    src, remarks = cuda(gather(), configs={})
    assert len(remarks) == 1 and "cp.async of 16 bytes per group into S" in remarks[0], remarks
    src, remarks = cuda(gather(), configs={"tl.prefer_async_copies": False})
    assert len(remarks) == 1 and "not issued as the program's cp.async (tl.prefer_async_copies=0)" in remarks[0], remarks
    assert "ptx_cp_async" not in src


def test_before_sm_80_it_is_refused():
    src, remarks = cuda(gather(), "sm_75")
    assert len(remarks) == 1 and "not issued as the program's cp.async (cp.async is sm_80's)" in remarks[0], remarks


@pytest.mark.parametrize("own_groups", [False, True])
@pytest.mark.parametrize("cnt", [64, 37, 0])
def test_values_match_numpy(own_groups, cnt):
    rng = np.random.default_rng(cnt + 3 * own_groups)
    k = rng.standard_normal((N, D)).astype(np.float16)
    idx = rng.integers(0, N, size=M).astype(np.int32)
    idx[cnt:] = -7  # rows past cnt: an index no row has (never read)
    out = poison((M, D), "float16")
    compile_cpu(gather(own_groups), pass_configs=ON)(k, idx, cnt, out)
    want = np.zeros((M, D), np.float16)
    want[:cnt] = k[idx[:cnt]]
    np.testing.assert_array_equal(out, want)


def staged_sum(own_groups):
    """Out = sum over k of K[Idx[k * 8 + i], :], one 8-row stage per step of a serial loop
    (prefetched one step ahead when the program commits and waits itself)."""
    steps = 4

    @T.prim_func
    def main(K: T.Tensor((N, D), "float16"), Idx: T.Tensor((8 * steps,), "int32"),
             Out: T.Tensor((8, D), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((2, 8, D), "float16")
            acc = T.alloc_fragment((8, D), "float32")
            T.clear(acc)
            if own_groups:
                for i, j in T.Parallel(8, D, prefer_async=True,
                                       annotations={"parallel_async_without_async_commit_wait": True}):
                    S[0, i, j] = K[Idx[i], j]
                T.ptx_commit_group()
            for k in T.serial(steps):
                if own_groups:
                    if k + 1 < steps:
                        for i, j in T.Parallel(8, D, prefer_async=True,
                                               annotations={"parallel_async_without_async_commit_wait": True}):
                            S[(k + 1) % 2, i, j] = K[Idx[(k + 1) * 8 + i], j]
                    T.ptx_commit_group()
                    T.ptx_wait_group(1)
                else:
                    for i, j in T.Parallel(8, D, prefer_async=True):
                        S[k % 2, i, j] = K[Idx[k * 8 + i], j]
                for i, j in T.Parallel(8, D):
                    acc[i, j] += T.cast(S[k % 2, i, j], "float32")
            T.copy(acc, Out)

    return main


@pytest.mark.parametrize("own_groups", [False, True])
def test_in_a_loop_other_threads_read_the_stage_after_a_barrier(own_groups):
    # The copies' threads are not the readers' (8 rows of 64 halves: 64 threads issue them,
    # all 128 read): inside the loop, a __syncthreads between the wait and the reads, and one
    # before the stage is overwritten (the GPU fuzzer's async_gathers found them missing).
    src, remarks = cuda(staged_sum(own_groups))
    assert remarks and all("cp.async of 16 bytes per group into S" in r for r in remarks), remarks
    loop = src[src.index("for (int32_t k = 0;"):]
    wait = loop.index("tl::cp_async_wait<")
    read = loop.index("acc[")
    assert "__syncthreads();" in loop[wait:read], src
    assert "__syncthreads();" in loop[:loop.index("tl::ptx_cp_async(")], src


@pytest.mark.parametrize("own_groups", [False, True])
def test_staged_values_match_numpy(own_groups):
    rng = np.random.default_rng(11 + own_groups)
    k = rng.standard_normal((N, D)).astype(np.float16)
    idx = rng.integers(0, N, size=32).astype(np.int32)
    out = poison((8, D), "float32")
    compile_cpu(staged_sum(own_groups), pass_configs=ON)(k, idx, out)
    want = k.astype(np.float64)[idx].reshape(4, 8, D).sum(axis=0)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)



def test_a_copy_of_several_rounds_per_thread_takes_one_barrier_in_front():
    # 64 rows of 64 halves over 128 threads: each thread issues 4 rounds of 16-byte copies
    # (the loop of rounds is the compiler's, as in upstream's minference prefetch). They
    # write different rows and nothing reads them before the wait: one barrier in front of
    # the rounds (for the previous step's readers), none between them.
    @T.prim_func
    def main(K: T.Tensor((N, D), "float16"), Idx: T.Tensor((M,), "int32"), Out: T.Tensor((M, D), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((M, D), "float16")
            acc = T.alloc_fragment((M, D), "float32")
            T.clear(acc)
            for r in T.serial(2):
                for i, j in T.Parallel(M, D, prefer_async=True):
                    S[i, j] = K[Idx[i] + r, j]
                for i, j in T.Parallel(M, D):
                    acc[i, j] += T.cast(S[i, j], "float32")
            T.copy(acc, Out)

    src, remarks = cuda(main)
    assert len(remarks) == 1 and "cp.async of 16 bytes per group into S" in remarks[0], remarks
    loop = src[src.index("for (int32_t r = 0;"):]
    rounds = loop[loop.index("#pragma unroll"):loop.index("tl::cp_async_commit();")]
    assert "tl::ptx_cp_async(" in rounds and "__syncthreads();" not in rounds, src
    assert "__syncthreads();" in loop[:loop.index("#pragma unroll")], src
