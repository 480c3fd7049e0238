"""T.rng_init / T.rng_rand / T.rng_rand_float: Philox-4x32-10 on both targets (the same
numbers on the CPU and on CUDA), checked against the generator's published known answers,
its offset and sequence semantics, and the distributions' moments."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import compile_cpu
from tilelang.errors import TileLangCompileError


def _draws(n, seed, seq, off, threads=1):
    @T.prim_func
    def draw(A: T.Tensor((threads, n), "uint32")):
        with T.Kernel(1, threads=threads) as bx:
            tx = T.get_thread_binding()
            T.rng_init(seed, seq + tx, off)
            for j in T.serial(n):
                A[tx, j] = T.rng_rand()

    a = np.zeros((threads, n), np.uint32)
    compile_cpu(draw)(a)
    return a


def test_known_answers_and_offsets():
    # Random123's known answer for Philox-4x32-10: counter 0, key 0
    assert list(_draws(4, 0, 0, 0)[0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    whole = _draws(16, 1234, 7, 0)[0]
    for off in (1, 3, 4, 9):
        assert np.array_equal(_draws(16 - off, 1234, 7, off)[0], whole[off:]), f"offset {off} skips {off} outputs"


def test_threads_draw_their_own_streams():
    a = _draws(64, 99, 0, 0, threads=8)
    assert len({tuple(row) for row in a}) == 8  # sequence = seq + tx: eight distinct streams
    assert np.array_equal(a[3], _draws(64, 99, 3, 0)[0]), "thread 3 draws stream 3"


def test_float_distributions():
    n = 4096

    @T.prim_func
    def floats(U: T.Tensor((n,), "float32"), U64: T.Tensor((n,), "float64"), Z: T.Tensor((n,), "float32"),
               Z64: T.Tensor((n,), "float64")):
        with T.Kernel(1, threads=1) as bx:
            T.rng_init(2024, 0, 0)
            for i in T.serial(n):
                U[i] = T.rng_rand_float()
                U64[i] = T.rng_rand_float(bit=64)
                Z[i] = T.rng_rand_float(dist="normal")
                Z64[i] = T.rng_rand_float(bit=64, dist="normal")

    u, u64, z, z64 = np.zeros(n, np.float32), np.zeros(n), np.zeros(n, np.float32), np.zeros(n)
    compile_cpu(floats)(u, u64, z, z64)
    for x in (u, u64):
        assert x.min() > 0 and x.max() <= 1 and abs(x.mean() - 0.5) < 0.02 and abs(x.var() - 1 / 12) < 0.01
    for x in (z, z64):
        assert abs(x.mean()) < 0.06 and abs(x.std() - 1) < 0.05
    assert len(np.unique(u)) > n - 8


def test_misuse_is_an_error_at_the_line():
    with pytest.raises(TileLangCompileError, match="call T.rng_init"):

        @T.prim_func
        def no_init(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=1) as bx:
                A[0] = T.rng_rand()

    with pytest.raises(TileLangCompileError, match="generator must be one of"):

        @T.prim_func
        def bad_generator(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=1) as bx:
                T.rng_init(1, 0, 0, generator="mt19937")


def test_long_loops_of_draws_are_not_fully_unrolled_on_cuda():
    """128 draws per thread in each of five loops (upstream's T.rng test, one thread per
    block): fully unrolled, NVRTC took over a minute; a draw counts as 32 statements toward
    the full-unroll limit, so these loops unroll by 4."""
    import tilelang

    @T.prim_func
    def draws(A: T.Tensor((1024,), "float32"), B: T.Tensor((1024,), "float64")):
        with T.Kernel(8, threads=1) as bx:
            T.rng_init(42, 0, bx * 128)
            for i, j in T.Parallel(1, 128):
                A[bx * 128 + j] = T.rng_rand_float(dist="normal")
            for i, j in T.Parallel(1, 4):
                B[bx * 128 + j] = T.rng_rand_float(bit=64)

    src = tilelang.compile(draws, target="cuda -arch=sm_90a").get_kernel_source()
    lines = [line.strip() for line in src.splitlines()]
    loops = {lines[k + 1].split(";")[1].strip(): lines[k] for k in range(len(lines) - 1)
             if lines[k].startswith("#pragma unroll") and lines[k + 1].startswith("for (")}
    assert any("< 128" in cond and pragma == "#pragma unroll 4" for cond, pragma in loops.items()), loops
    # four draws: short enough to unroll fully
    assert all(pragma == "#pragma unroll" for cond, pragma in loops.items() if "< 4" in cond), loops
