"""Python names that are C++ keywords or names generated code relies on (a kernel called
`double`, tensors called `int` and `threadIdx`, a loop variable `min`) still compile and run."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs
from conftest import compile_cpu, poison, rand

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())


def program():
    @T.prim_func
    def double(int: T.Tensor((64, 8), "float32"), threadIdx: T.Tensor((64, 8), "float32")):
        with T.Kernel(2, threads=64) as max:
            for min, j in T.Parallel(32, 8):
                threadIdx[max * 32 + min, j] = int[max * 32 + min, j] * 2.0 + min
    return double


def test_reserved_names_on_the_cpu(rng):
    k = compile_cpu(program())
    a = rand(rng, (64, 8))
    out = poison((64, 8))
    k(a, out)
    np.testing.assert_allclose(out, a * 2.0 + (np.arange(64) % 32)[:, None], rtol=1e-6)


@pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")
def test_reserved_names_compile_for_cuda():
    k = tilelang.compile(program(), target="cuda -arch=sm_90a")
    assert "void __launch_bounds__(64, 1) double_(" in k.get_kernel_source()
