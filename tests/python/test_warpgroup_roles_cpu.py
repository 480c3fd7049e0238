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
