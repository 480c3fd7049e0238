"""Loop control on values the CPU target's lockstep emulation holds per thread: a break or
continue under such a condition, and a loop whose bounds come from such values (upstream's
radix top-k: `if l_new_topk <= 0: break`, `for s in T.serial(T.ceildiv(l_num_input, B))`
with both values loaded from shared memory by every thread). The emulation runs them when the
threads agree; when they do not, the call fails naming the line, never a wrong answer (on
CUDA each thread goes its own way). Checked against numpy on whichever target the suite runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import cpu_target_only


def budgeted_sum(threads=64, steps=10):
    """Each thread adds A[tx] + k for k = 0, 1, ... while a budget read from Lim lasts."""

    @T.prim_func
    def main(A: T.Tensor((threads,), "int32"), Lim: T.Tensor((1,), "int32"), Out: T.Tensor((threads,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            left = T.alloc_var("int32")
            acc = T.alloc_var("int32")
            left = Lim[0]
            acc = 0
            for k in T.serial(steps):
                if left <= 0:
                    break
                acc = acc + A[tx] + k
                left = left - 1
            Out[tx] = acc

    return main

@pytest.mark.parametrize("budget", [0, 3, 25])
def test_a_break_every_thread_takes_together(budget):
    a = np.random.default_rng(budget).integers(-50, 50, 64).astype(np.int32)
    out = np.full(64, -7, np.int32)
    tilelang.compile(budgeted_sum())(a, np.array([budget], np.int32), out)
    n = min(budget, 10)
    np.testing.assert_array_equal(out, a * n + n * (n - 1) // 2)

def skip_past(threads=64):
    """Counts the k < 12 not below Skip[0] (a continue), from a per-thread copy of Skip[0]."""

    @T.prim_func
    def main(Skip: T.Tensor((1,), "int32"), Out: T.Tensor((threads,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            skip = T.alloc_var("int32")
            acc = T.alloc_var("int32")
            skip = Skip[0]
            acc = 0
            for k in T.serial(12):
                if k < skip:
                    continue
                acc = acc + k + tx
            Out[tx] = acc

    return main

def test_a_continue_every_thread_takes_together():
    out = np.zeros(64, np.int32)
    tilelang.compile(skip_past())(np.array([5], np.int32), out)
    np.testing.assert_array_equal(out, sum(range(5, 12)) + 7 * np.arange(64))

def shared_count_loop(threads=32, block=8):
    """Thread 0 writes a count to shared memory; every thread loops ceildiv(count, block) times
    over it (the top-k's tail pass), each adding its own element per step."""

    @T.prim_func
    def main(N: T.Tensor((1,), "int32"), A: T.Tensor((64, threads), "float32"), Out: T.Tensor((threads,), "float32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            s_n = T.alloc_shared((1,), "int32")
            n = T.alloc_var("int32")
            acc = T.alloc_var("float32")
            if tx == 0:
                s_n[0] = N[0]
            T.sync_threads()
            n = s_n[0]
            acc = 0.0
            for s in T.serial(T.ceildiv(n, block)):
                acc = acc + A[s, tx]
            Out[tx] = acc

    return main

@pytest.mark.parametrize("count", [0, 1, 17, 64])
def test_a_loop_over_a_count_every_thread_read_from_shared_memory(count):
    a = np.random.default_rng(count).standard_normal((64, 32)).astype(np.float32)
    out = np.full(32, np.nan, np.float32)
    tilelang.compile(shared_count_loop())(np.array([count], np.int32), a, out)
    steps = -(-count // 8)
    np.testing.assert_allclose(out, a[:steps].astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-5)

def test_a_break_in_a_loop_under_a_thread_branch_counts_that_branchs_threads():
    @T.prim_func
    def main(Lim: T.Tensor((1,), "int32"), Out: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            lim = T.alloc_var("int32")
            lim = Lim[0]
            Out[tx] = -1
            if tx < 32:
                Out[tx] = 0
                for k in T.serial(8):
                    if k >= lim:
                        break
                    Out[tx] = Out[tx] + 1

    out = np.zeros(64, np.int32)
    tilelang.compile(main)(np.array([5], np.int32), out)
    np.testing.assert_array_equal(out, np.where(np.arange(64) < 32, 5, -1))

@cpu_target_only
def test_threads_that_disagree_fail_the_call_on_the_cpu_naming_the_line():
    @T.prim_func
    def main(A: T.Tensor((64,), "int32"), Out: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            acc = T.alloc_var("int32")
            acc = 0
            for k in T.serial(10):
                if k >= A[tx]:
                    break
                acc = acc + 1
            Out[tx] = acc

    kernel = tilelang.compile(main, target="cpu")
    out = np.zeros(64, np.int32)
    kernel(np.full(64, 4, np.int32), out)  # every thread leaves at k = 4
    np.testing.assert_array_equal(out, 4)
    with pytest.raises(tilelang.TileLangRuntimeError, match=r"at line \d+ a block's threads disagreed"):
        kernel(np.arange(64, dtype=np.int32), out)

    def bounds(synced):
        @T.prim_func
        def main(A: T.Tensor((64,), "int32"), Out: T.Tensor((64,), "int32")):
            with T.Kernel(1, threads=64):
                tx = T.get_thread_binding()
                m = T.alloc_var("int32")
                acc = T.alloc_var("int32")
                m = A[tx]
                acc = 0
                for k in T.serial(m):
                    acc = acc + k
                    if synced:
                        T.sync_threads()
                Out[tx] = acc

        return main

    # a loop of the thread's own work runs once per thread, each with its own bounds
    kernel = tilelang.compile(bounds(False), target="cpu")
    kernel(np.arange(64, dtype=np.int32), out)
    np.testing.assert_array_equal(out, [t * (t - 1) // 2 for t in range(64)])
    # with a barrier inside, the threads must agree on the bounds at run time
    kernel = tilelang.compile(bounds(True), target="cpu")
    kernel(np.full(64, 6, np.int32), out)
    np.testing.assert_array_equal(out, 15)
    with pytest.raises(tilelang.TileLangRuntimeError, match="a loop whose bounds differ between them"):
        kernel(np.arange(64, dtype=np.int32), out)
