"""Element atomics in thread-level code: each thread whose own data selects the update
performs it (as on a GPU, where every thread runs the statement), also when that data
reaches the condition or the address through a per-thread variable (T.alloc_var), not
only through the thread index. Upstream's radix top-k keeps each thread's bin that way.
Checked against numpy on whichever target the suite runs, and from the CUDA code."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def histogram(n=256, bins=8):
    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), Hist: T.Tensor((bins,), "int32"), Pos: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            h = T.alloc_shared((bins,), "int32")
            b = T.alloc_var("int32")
            p = T.alloc_var("int32")
            if tx < bins:
                h[tx] = 0
            T.sync_threads()
            b = A[tx] % bins  # this thread's bin, in a per-thread variable
            if b > 0:
                T.atomic_add(h[b], 1)
            T.sync_threads()
            if b > 2:
                p = T.atomic_add(h[b], 1, return_prev=True)
                Pos[tx] = p
            T.sync_threads()
            if tx < bins:
                Hist[tx] = h[tx]

    return main


def test_each_thread_adds_its_own_element():
    rng = np.random.default_rng(4)
    a = rng.integers(0, 1000, 256).astype(np.int32)
    hist, pos = np.full(8, -1, np.int32), np.full(256, -1, np.int32)
    tilelang.compile(histogram())(a, hist, pos)
    b = a % 8
    count = np.bincount(b, minlength=8)
    want = np.where(np.arange(8) > 0, count, 0) + np.where(np.arange(8) > 2, count, 0)
    np.testing.assert_array_equal(hist, want)
    for k in range(3, 8):  # the second adds of bin k saw count[k], count[k] + 1, ...
        assert sorted(pos[b == k].tolist()) == list(range(count[k], 2 * count[k]))
    assert (pos[b <= 2] == -1).all()


def test_cuda_keeps_them_per_thread():
    lowered, _, _ = _tl.lower_cuda(histogram().node, {"tl.target_arch": "sm_90a"}, False)
    code = _tl.codegen_cuda(lowered).code
    assert "tl::atomic_add(" in code and "tx == 0" not in code, code


def _per_thread_counts():
    @T.prim_func
    def main(A: T.Tensor((128,), "int32"), Hist: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            h = T.alloc_shared((4,), "int32")
            if tx < 4:
                h[tx] = 0
            T.sync_threads()
            for s in T.serial(2):
                idx = T.alloc_var("int32", init=s * 64 + tx // 2)  # per thread, per step
                if idx < 100:
                    T.atomic_add(h[A[idx] % 4], 1)
            T.sync_threads()
            if tx < 4:
                Hist[tx] = h[tx]

    return main


def test_a_per_thread_initial_value_runs_on_the_cpu_too():
    # T.alloc_var(dtype, init) with an init of the thread index (upstream's top-k)
    main = _per_thread_counts()
    a = np.random.default_rng(1).integers(0, 50, 128).astype(np.int32)
    hist = np.full(4, -1, np.int32)
    tilelang.compile(main)(a, hist)
    idx = np.array([s * 64 + t // 2 for s in range(2) for t in range(128)])
    np.testing.assert_array_equal(hist, np.bincount(a[idx[idx < 100]] % 4, minlength=4))


def test_no_barrier_under_a_test_of_a_per_thread_variable():
    """`if idx < 100:` with idx from the thread index differs between threads: a barrier
    there would hang the block (the H200 run did, once atomics counted as shared traffic
    that needs barriers). Atomic updates need none among themselves."""
    lowered, _, _ = _tl.lower_cuda(_per_thread_counts().node, {"tl.target_arch": "sm_90a"}, False)
    code = _tl.codegen_cuda(lowered).code
    branch = code[code.find("if ((idx < 100))"):]
    branch = branch[:branch.find("}")]
    assert "tl::atomic_add(" in branch and "__syncthreads" not in branch, code


def _compaction(n=1024, block=128):
    """Stream compaction: each thread whose element is positive takes the next free slot of
    `out` from the counter's old value, bound to a name under the thread's own branch."""

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Out: T.Tensor((n,), "int32"), Counter: T.Tensor((1,), "int32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            tx = T.get_thread_binding()
            i = bx * block + tx
            if i < n and X[i] > 0:
                slot = T.atomic_add(Counter[0], 1, return_prev=True)
                if slot < n:
                    Out[slot] = i

    return main


def test_an_old_value_bound_under_a_thread_branch_is_each_threads_own():
    # (the CPU target once ran such a let once per block, outside the branch: 8 slots taken)
    rng = np.random.default_rng(7)
    x = rng.standard_normal(1024).astype(np.float32)
    out, counter = np.full(1024, -1, np.int32), np.zeros(1, np.int32)
    tilelang.compile(_compaction())(x, out, counter)
    positive = np.flatnonzero(x > 0)
    assert counter[0] == len(positive)
    np.testing.assert_array_equal(np.sort(out[:len(positive)]), positive)
    assert (out[len(positive):] == -1).all()


def test_an_old_value_bound_for_the_whole_block_is_refused_on_both_targets():
    @T.prim_func
    def block_level(Out: T.Tensor((256,), "int32"), Counter: T.Tensor((1,), "int32")):
        with T.Kernel(2, threads=128) as bx:
            slot = T.atomic_add(Counter[0], 1, return_prev=True)
            Out[slot] = bx

    for target in ("cpu", "cuda -arch=sm_90a"):
        with pytest.raises(tilelang.TileLangCompileError, match=r"old value of an atomic \(return_prev=True\) bound "
                                                                r"outside T.Parallel"):
            tilelang.lower(block_level, target=target)
