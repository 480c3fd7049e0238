"""The CPU target's warpgroup roles (cpu/emulate_roles.cc, templates/tl/cpu/roles.h): the
branches of a top-level `if tx < 128: ... else: ...` that wait on each other's mbarriers run
at the same time, each its own lockstep emulation, so a consumer written before its producer
runs (lockstep alone stops at the consumer's first wait). A wait that no role can release
fails the call with its line instead of hanging. Checked against numpy in float64."""
import numpy as np
import pytest

import tilelang.language as T
from tilelang.errors import TileLangRuntimeError

from conftest import assert_close, compile_cpu, f64, marker_line, poison, rand

pytestmark = pytest.mark.cpu_target  # (the CPU's own machinery; CUDA runs these as T.ws kernels)


def consumer_first(M=64, N=64, K=256, bK=32, stages=2, dtype="float16"):
    """C = A @ B: warpgroup 0 (first in the program) multiplies each stage once warpgroup 1
    has filled it, warpgroup 1 refills a stage once warpgroup 0 has freed it."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((stages, M, bK), dtype)
            B_s = T.alloc_shared((stages, bK, N), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            full = T.alloc_barrier(arrive_count=[128] * stages)
            empty = T.alloc_barrier(arrive_count=[128] * stages)
            tx = T.get_thread_binding()
            if tx < 128:
                T.clear(acc)
                for k in T.serial(K // bK):
                    T.barrier_wait(full[k % stages], (k // stages) % 2)
                    T.gemm(A_s[k % stages, :, :], B_s[k % stages, :, :], acc)
                    T.barrier_arrive(empty[k % stages])
                T.copy(acc, C)
            else:
                for k in T.serial(K // bK):
                    T.barrier_wait(empty[k % stages], (k // stages) % 2 ^ 1)
                    T.copy(A[0, k * bK], A_s[k % stages, :, :])
                    T.copy(B[k * bK, 0], B_s[k % stages, :, :])
                    T.barrier_arrive(full[k % stages])

    return main


@pytest.mark.parametrize("K,stages", [(256, 2), (96, 3), (64, 1)])
def test_consumer_written_before_its_producer_runs(rng, K, stages):
    a, b = rand(rng, (64, K), "float16"), rand(rng, (K, 64), "float16")
    c = poison((64, 64))
    kernel = compile_cpu(consumer_first(K=K, stages=stages))
    kernel(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")
    c2 = poison((64, 64))
    kernel(a, b, c2)  # again, from fresh barriers
    assert_close(c2, f64(a) @ f64(b), "float16")


def never_released():
    @T.prim_func
    def main(X: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            ready = T.alloc_barrier(arrive_count=128)
            done = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            if tx < 128:
                T.barrier_wait(ready, 0)  # ERR-HERE
                X[tx] = 1.0
            else:
                T.barrier_wait(done, 0)  # ERR-OR-HERE
                T.barrier_arrive(ready)

    return main


def test_a_wait_no_role_can_release_fails_with_its_line():
    """Both roles wait forever: the call fails naming one of the two waits (whichever role
    found that no other could go on)."""
    func = never_released()
    x = np.zeros(256, np.float32)
    lines = (marker_line(never_released), marker_line(never_released, "# ERR-OR-HERE"))
    with pytest.raises(TileLangRuntimeError, match=f"line ({lines[0]}|{lines[1]}) "):
        compile_cpu(func)(x)


def named_barrier_handoff(rounds=6, consumer_first=True):
    """Two warps hand a value over through shared memory `rounds` times, ordered by named
    barriers only (upstream's issue 2188 pattern): the producer writes, arrives at `ready`
    and waits at `empty`; the consumer waits at `ready`, reads, arrives at `empty`."""

    @T.prim_func
    def main(inp: T.Tensor((rounds,), "int32"), out: T.Tensor((rounds,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            slot = T.alloc_shared((1,), "int32")
            if (tx >= 32) if consumer_first else (tx < 32):
                for r in T.serial(rounds):
                    if consumer_first:
                        T.sync_threads(10, 64)
                        if tx == 32:
                            out[r] = slot[0] * 10
                        T.named_barrier_arrive(11, 64)
                    else:
                        if tx == 0:
                            slot[0] = inp[r] + 1
                        T.named_barrier_arrive(10, 64)
                        T.sync_threads(11, 64)
            else:
                for r in T.serial(rounds):
                    if consumer_first:
                        if tx == 0:
                            slot[0] = inp[r] + 1
                        T.named_barrier_arrive(10, 64)
                        T.sync_threads(11, 64)
                    else:
                        T.sync_threads(10, 64)
                        if tx == 32:
                            out[r] = slot[0] * 10
                        T.named_barrier_arrive(11, 64)

    return main


@pytest.mark.parametrize("consumer_first", [True, False])
def test_named_barriers_between_roles(rng, consumer_first):
    """Named barriers met by two branches run them as roles at the same time: each round's
    value arrives, whichever branch the program writes first."""
    kernel = compile_cpu(named_barrier_handoff(consumer_first=consumer_first))
    inp = rng.integers(-100, 100, size=6).astype(np.int32)
    out = poison((6,), "int32")
    kernel(inp, out)
    np.testing.assert_array_equal(out, (inp + 1) * 10)


def test_a_named_barrier_no_role_completes_fails_with_its_line():
    @T.prim_func
    def main(out: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            if tx < 32:
                T.sync_threads(5, 96)  # ERR-HERE
                out[0] = 1
            else:
                T.named_barrier_arrive(5, 96)

    line = marker_line(test_a_named_barrier_no_role_completes_fails_with_its_line)
    with pytest.raises(TileLangRuntimeError, match=f"line {line} "):
        compile_cpu(main)(np.zeros(1, np.int32))
