"""Barriers between shared accesses of a thread's own slots (cuda-insert-barriers,
barrier_slots.h): a thread reading back the slot it wrote needs none, nor do loop
iterations whose slots are disjoint; a read of another thread's slot keeps its barrier.
Results are checked against numpy on the CPU target (and on CUDA in the suite's CUDA run);
the barriers are counted in the sm_90a code (no GPU needed)."""
import numpy as np

import tilelang.language as T
from tilelang import _tl

from conftest import assert_close, compile_cpu, poison, rand


def cuda_source(func):
    lowered, _, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered).code


def own_slots(rounds=3, stages=2, steps=4):
    """Each thread flags its element of X (flag[s, r * 32 + tx // 4], shared by 4 threads that
    compute the same value) and reads the flag back to pick what it writes: the producer
    pattern of upstream's sparse MLA forward, in our words."""
    n = rounds * stages * steps * 32

    @T.prim_func
    def main(X: T.Tensor((n * 4,), "float32"), Y: T.Tensor((n * 4,), "float32")):
        with T.Kernel(1, threads=128):
            flag = T.alloc_shared((stages, steps * 32), "bool")
            tx = T.get_thread_binding()
            for k in T.serial(rounds):
                for s in T.unroll(stages):
                    for r in T.serial(steps):
                        i = ((k * stages + s) * steps + r) * 32 + tx // 4
                        flag[s, r * 32 + tx // 4] = X[i * 4] > 0
                        if flag[s, r * 32 + tx // 4]:
                            Y[i * 4 + tx % 4] = X[i * 4 + tx % 4]
                        else:
                            Y[i * 4 + tx % 4] = -1.0

    return main, n


def test_own_slots_match_numpy(rng):
    func, n = own_slots()
    x = rand(rng, (n * 4,))
    y = poison((n * 4,))
    compile_cpu(func)(x, y)
    rows = x.reshape(n, 4)
    want = np.where(rows[:, :1] > 0, rows, -1.0).reshape(-1)
    assert_close(y, want)


def test_own_slots_take_one_barrier_per_round():
    src = cuda_source(own_slots()[0])
    # before: one on each side of the store in every step (2 x 4 x 2 per round)
    assert src.count("__syncthreads();") == 1, src


def test_a_read_of_another_threads_slot_keeps_its_barrier(rng):
    @T.prim_func
    def rotate(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding()
            S[tx] = X[tx] * 2.0
            Y[tx] = S[(tx + 1) % 128]

    src = cuda_source(rotate)
    store, load = src.index("S[tx] ="), src.index("Y[tx] =")
    assert "__syncthreads();" in src[store:load], src
    x = rand(rng, (128,))
    y = poison((128,))
    compile_cpu(rotate)(x, y)
    assert_close(y, np.roll(x * 2.0, -1))
