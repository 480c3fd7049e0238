"""Row reductions and row-wise element work on tiles that no T.gemm touches, for thread
counts that are not powers of two and shapes with ragged edges.

On CUDA these tiles live in registers (a strip layout: rows split over lanes, lanes folded
by shuffles, warps through shared memory); the suite's CUDA mode (TILELANG_TEST_CUDA=1)
runs each case there, and the layout choice is printed by test_cuda_register_tiles."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison, rand


def make_row_stats(M, N, bm, bn, threads, dtype):
    """Per row: max, sum, abs-sum (clear=False across column tiles) and x / rowmax(|x|)."""

    @T.prim_func
    def row_stats(X: T.Tensor((M, N), dtype), Stats: T.Tensor((3, M), "float32"), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=threads) as bx:
            x = T.alloc_fragment((bm, bn), "float32")
            y = T.alloc_fragment((bm, bn), dtype)
            mx = T.alloc_fragment((bm,), "float32")
            sm = T.alloc_fragment((bm,), "float32")
            ab = T.alloc_fragment((bm,), "float32")
            amax = T.alloc_fragment((bm,), "float32")
            T.fill(mx, -T.infinity("float32"))
            T.clear(sm)
            T.clear(ab)
            T.clear(amax)
            for k in T.serial(T.ceildiv(N, bn)):
                T.copy(X[bx * bm, k * bn], x)  # past the edges: zeros
                for i, j in T.Parallel(bm, bn):  # columns past N must not win the max
                    x[i, j] = T.if_then_else(k * bn + j < N, x[i, j], -T.infinity("float32"))
                T.reduce_max(x, mx, dim=1, clear=False)
                for i, j in T.Parallel(bm, bn):
                    x[i, j] = T.if_then_else(k * bn + j < N, x[i, j], 0)
                T.reduce_sum(x, sm, dim=1, clear=False)
                T.reduce_abssum(x, ab, dim=1, clear=False)
                T.reduce_absmax(x, amax, dim=1, clear=False)
            for i in T.Parallel(bm):
                Stats[0, bx * bm + i] = mx[i]
                Stats[1, bx * bm + i] = sm[i]
                Stats[2, bx * bm + i] = ab[i]
            for k in T.serial(T.ceildiv(N, bn)):
                T.copy(X[bx * bm, k * bn], x)
                for i, j in T.Parallel(bm, bn):
                    y[i, j] = x[i, j] / amax[i]
                T.copy(y, Y[bx * bm, k * bn])

    return row_stats


@pytest.mark.parametrize("M,N,bm,bn,threads", [
    (37, 300, 4, 128, 128),   # 32 lanes per row, a ragged last row block and column tile
    (13, 200, 1, 256, 256),   # one row over 8 warps: partials meet in shared memory
    (30, 96, 6, 64, 96),      # 96 threads: 16 lanes per row, 6 row groups
    (20, 72, 2, 24, 48),      # 48 threads: a partial second warp
    (9, 50, 3, 16, 160),      # 160 threads and 3 rows: no even split (shared-memory path)
])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_row_stats(rng, M, N, bm, bn, threads, dtype):
    kernel = compile_cpu(make_row_stats(M, N, bm, bn, threads, dtype))
    x = rand(rng, (M, N), dtype)
    stats, y = poison((3, M), "float32"), poison((M, N), dtype)
    kernel(x, stats, y)
    xf = f64(x)
    tol = 1e-5 if dtype == "float32" else 2e-3
    np.testing.assert_allclose(stats[0], xf.max(axis=1), rtol=1e-6)
    np.testing.assert_allclose(stats[1], xf.sum(axis=1), rtol=tol, atol=tol * np.abs(xf).sum(axis=1).max())
    np.testing.assert_allclose(stats[2], np.abs(xf).sum(axis=1), rtol=tol)
    assert_close(y, xf / np.abs(xf).max(axis=1, keepdims=True), dtype)
