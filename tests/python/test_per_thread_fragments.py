"""Fragments used as per-thread storage (per_thread_fragments.h): used element by element
outside T.Parallel loops and tile ops, each thread holds a copy, on both targets (CUDA: its
registers; CPU: per-thread storage of the lockstep emulation), also when every use lies in
one branch on the thread index (a producer's prefetched indices). Checked against numpy."""
import numpy as np

import tilelang
import tilelang.language as T

from conftest import assert_close, compile_cpu, poison, rand


def cuda_remarks(func):
    return "\n".join(tilelang.lower(func, target="cuda -arch=sm_90a").remarks)


def reversed_rows():
    @T.prim_func
    def main(X: T.Tensor((128, 4), "float32"), Y: T.Tensor((128, 4), "float32")):
        with T.Kernel(1, threads=128):
            f = T.alloc_fragment((4,), "float32")
            tx = T.get_thread_binding()
            for r in T.serial(4):
                f[r] = X[tx, r] * 2.0
            for r in T.serial(4):
                Y[tx, r] = f[3 - r]

    return main


def test_thread_dependent_values_stay_each_threads_own(rng):
    x = rand(rng, (128, 4))
    y = poison((128, 4))
    compile_cpu(reversed_rows())(x, y)
    assert_close(y, (x * 2.0)[:, ::-1])
    assert "fragment f: registers, a copy per thread" in cuda_remarks(reversed_rows())


def branch_prefetch():
    """Threads 128..255 prefetch two values each into a fragment used only in their branch;
    threads 0..127 copy X as it is."""

    @T.prim_func
    def main(X: T.Tensor((256, 2), "float32"), Y: T.Tensor((256, 2), "float32")):
        with T.Kernel(1, threads=256):
            pre = T.alloc_fragment((2,), "float32")
            tx = T.get_thread_binding()
            if tx >= 128:
                for s in T.serial(2):
                    pre[s] = X[tx, s] + 1.0
                for s in T.serial(2):
                    Y[tx, 1 - s] = pre[s]
            else:
                for s in T.serial(2):
                    Y[tx, s] = X[tx, s]

    return main


def test_a_fragment_used_only_in_one_branch_is_per_thread(rng):
    x = rand(rng, (256, 2))
    y = poison((256, 2))
    compile_cpu(branch_prefetch())(x, y)
    want = x.copy()
    want[128:] = (x[128:] + 1.0)[:, ::-1]
    assert_close(y, want)
    assert "fragment pre: registers, a copy per thread" in cuda_remarks(branch_prefetch())


def test_a_fragment_one_thread_writes_for_all_stays_shared():
    """`if tx == 0: v[0] = ...` then every thread reads v[0]: one copy for the block."""

    @T.prim_func
    def broadcast(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            v = T.alloc_fragment((1,), "float32")
            tx = T.get_thread_binding()
            if tx == 0:
                v[0] = X[0] * 3.0
            T.sync_threads()
            Y[tx] = X[tx] + v[0]

    assert "fragment v: kept in shared memory" in cuda_remarks(broadcast)
    x = np.arange(128, dtype=np.float32)
    y = poison((128,))
    compile_cpu(broadcast)(x, y)
    assert_close(y, x + x[0] * 3.0)
