"""T.reshape and T.view: another shape over the same storage, for global tensors, shared
tiles and fragments, read and written element-wise and by tile ops; and the clear errors
for what views cannot do here."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison
from tilelang.errors import TileLangCompileError


def test_reshape_of_global_shared_and_fragment_tiles():
    N, M = 64, 16

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N // M, M), "float32"), R: T.Tensor((N // M,), "float32"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64):
            T.copy(T.reshape(A, [N // M, M]), B)  # a global tensor
            s = T.alloc_shared((N,), "float32")
            for i in T.Parallel(N):
                s[i] = A[i] * 2
            f = T.alloc_fragment((N // M, M), "float32")
            T.copy(T.reshape(s, [N // M, M]), f)  # a shared tile, 1-D to 2-D
            r = T.alloc_fragment((N // M,), "float32")
            T.reduce_max(f, r, dim=1)
            T.copy(r, R)
            flat = T.view(f, [N])  # a fragment, 2-D to 1-D, read element-wise
            for i in T.Parallel(N):
                C[i] = flat[i] + 1

    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    b, r, c = poison((N // M, M)), poison((N // M,)), poison((N,))
    compile_cpu(main)(a, b, r, c)
    assert_close(b, f64(a).reshape(N // M, M))
    assert_close(r, (2 * f64(a)).reshape(N // M, M).max(axis=1))
    assert_close(c, 2 * f64(a) + 1)


def test_writes_through_a_view_and_a_view_of_a_view():
    @T.prim_func
    def main(A: T.Tensor((4, 6), "float32"), B: T.Tensor((4, 6), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 6), "float32")
            v = T.reshape(s, [3, 8])
            w = T.reshape(v, [24])
            for i in T.Parallel(24):
                w[i] = T.cast(i, "float32")
            T.fill(v[1, 0:8], -1.0)  # a tile op on a slice of a view
            for i, j in T.Parallel(4, 6):
                B[i, j] = s[i, j] + A[i, j]

    a = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    b = poison((4, 6))
    compile_cpu(main)(a, b)
    want = np.arange(24, dtype=np.float64)
    want[8:16] = -1
    assert_close(b, want.reshape(4, 6) + f64(a))


def test_view_errors_name_the_problem():
    with pytest.raises(TileLangCompileError, match="has 30 elements, A has 24"):
        @T.prim_func
        def count(A: T.Tensor((4, 6), "float32")):
            with T.Kernel(1, threads=32):
                T.reshape(A, [5, 6])

    with pytest.raises(TileLangCompileError, match="another dtype is not supported"):
        @T.prim_func
        def dtype(A: T.Tensor((4, 6), "float32")):
            with T.Kernel(1, threads=32):
                T.view(A, [4, 6], dtype="int32")

    @T.prim_func
    def gemm(A: T.Tensor((256,), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((256,), "float16")
            b = T.alloc_shared((16, 16), "float16")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(T.reshape(a, [16, 16]), b, c)
            T.copy(c, C)

    with pytest.raises(TileLangCompileError, match="T.gemm of .*T.reshape / T.view, is not supported"):
        compile_cpu(gemm)
