"""None for a tensor argument: a null pointer when the kernel never uses that tensor (an
optional input the program was built without, as upstream's nullptr test passes its bias),
a clear error naming the parameter when it does."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison, rand
from tilelang.errors import TileLangArgumentError


def _scale_rows(with_bias, M=16, N=24):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), C: T.Tensor((M, N), T.float32), Bias: T.Tensor((N,), T.float32)):
        with T.Kernel(T.ceildiv(M, 8), threads=32) as bx:
            for i, j in T.Parallel(8, N):
                if with_bias:
                    C[bx * 8 + i, j] = A[bx * 8 + i, j] * 2 + Bias[j]
                else:
                    C[bx * 8 + i, j] = A[bx * 8 + i, j] * 2

    return main


def test_none_for_a_tensor_the_kernel_never_uses(rng):
    a = rand(rng, (16, 24))
    c = poison((16, 24))
    compile_cpu(_scale_rows(False))(a, c, None)
    np.testing.assert_array_equal(c, a * 2)


def test_the_same_tensor_given_still_works(rng):
    a, bias = rand(rng, (16, 24)), rand(rng, (24,))
    c = poison((16, 24))
    kernel = compile_cpu(_scale_rows(False))
    kernel(a, c, bias)
    np.testing.assert_array_equal(c, a * 2)


def test_none_for_a_tensor_the_kernel_reads_is_an_error(rng):
    kernel = compile_cpu(_scale_rows(True))
    with pytest.raises(TileLangArgumentError, match=r"argument 'Bias' is None, but the kernel uses Bias"):
        kernel(rand(rng, (16, 24)), poison((16, 24)), None)


def test_l2_hit_ratio_hint_is_checked_and_noted(rng):
    M, N, block = 64, 32, 256

    @T.prim_func
    def add(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(M * N // block, threads=block) as bx:
            T.annotate_l2_hit_ratio({B: 0.8})
            for i in T.serial(block):
                idx = bx * block + i
                C[idx // N, idx % N] = A[idx // N, idx % N] + B[idx // N, idx % N]

    a, b = rand(rng, (M, N)), rand(rng, (M, N))
    c = poison((M, N))
    kernel = compile_cpu(add)
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a + b)
    assert any("annotate_l2_hit_ratio({B: 0.8})" in r for r in kernel.get_remarks())

    with pytest.raises(tilelang.errors.TileLangCompileError, match=r"ratio of A must be a number in \(0, 1\]"):

        @T.prim_func
        def bad(A: T.Tensor((M, N), T.float32)):
            with T.Kernel(1, threads=32):
                T.annotate_l2_hit_ratio({A: 1.5})
