"""Tensor dimensions written as a * n + b of a symbolic n (T.Tensor((n * 4,), ...)): the
runtime takes n from another dimension or solves for it from the tensor's size, checks
that it is a whole number, and sizes outputs from it."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison
from tilelang.errors import TileLangArgumentError


def _fill_kernel(shape_fn):
    n = T.symbolic("n")

    @T.prim_func
    def kernel(A: T.Tensor((shape_fn(n),), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(shape_fn(n)):
                A[i] = i * 2 + 1

    return kernel


@pytest.mark.parametrize("shape_fn,size", [(lambda n: n * 4, 16), (lambda n: n + 1, 16), (lambda n: n * 3 + 1, 16),
                                           (lambda n: n * 3 + 1, 1)])
def test_n_is_solved_from_the_size(shape_fn, size):
    a = np.full(size, -1, np.int32)
    compile_cpu(_fill_kernel(shape_fn))(a)
    np.testing.assert_array_equal(a, np.arange(size) * 2 + 1)


def test_a_size_no_whole_n_gives_is_refused():
    kernel = compile_cpu(_fill_kernel(lambda n: n * 3))
    with pytest.raises(TileLangArgumentError, match=r"dimension 0 is 16, which n \* 3 gives for no integer n"):
        kernel(np.zeros(16, np.int32))


def test_n_from_another_argument_and_an_output_sized_from_it():
    n = T.dynamic("n")

    @T.prim_func
    def pairs(X: T.Tensor((n,), "float32"), Y: T.Tensor((n * 2 + 2,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(n):
                Y[2 * i] = X[i]
                Y[2 * i + 1] = X[i] * 10
            Y[n * 2] = 0.0
            Y[n * 2 + 1] = 0.0

    kernel = compile_cpu(pairs, out_idx=[1])
    x = np.random.default_rng(2).standard_normal(5).astype(np.float32)
    y = kernel(x)
    want = np.zeros(12)
    want[0:10:2], want[1:10:2] = f64(x), f64(x) * 10
    assert_close(y, want)

    given = compile_cpu(pairs)
    with pytest.raises(TileLangArgumentError, match=r"n \* 2 \+ 2 = 12 with n = 5"):
        given(x, poison((13,)))
