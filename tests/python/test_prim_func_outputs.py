"""A @T.prim_func that creates its outputs with T.empty and returns them (upstream's
func-attrs tests): parsed in the eager style even when every parameter is annotated in the
signature, and an output may be sized by an integer scalar parameter (each call's value)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, f64, rand
from tilelang.errors import TileLangArgumentError


@T.prim_func
def ramp_rows(A: T.Tensor((4,), "float32"), n: T.int32):
    out = T.empty((3, n * 2 + 1), T.float32)
    with T.Kernel(1, threads=32):
        for i in T.serial(3):
            for j in T.serial(n * 2 + 1):
                out[i, j] = A[i] * j + i
    return out


@T.prim_func
def constant_tile():
    out = T.empty((3, 16), T.float16)
    with T.Kernel(1, threads=1):
        for i, j in T.grid(3, 16):
            out[i, j] = 1.5
    return out


def test_output_sized_by_a_scalar_parameter(rng):
    assert list(ramp_rows.attrs["tilelang_out_idx"]) == [-1]
    kernel = compile_cpu(ramp_rows)
    a = rand(rng, (4,))
    for n in (0, 3, 10):  # one compiled kernel, each call's size
        out = _host(kernel(a, n))
        assert out.shape == (3, 2 * n + 1)
        ref = f64(a[:3])[:, None] * np.arange(2 * n + 1)[None, :] + np.arange(3)[:, None]
        np.testing.assert_allclose(f64(out), ref, rtol=1e-6)


def test_negative_size_is_an_argument_error(rng):
    kernel = compile_cpu(ramp_rows)
    with pytest.raises(TileLangArgumentError, match=r"argument 'n' sizes an output.*got -2"):
        kernel(rand(rng, (4,)), -2)


def _host(x):
    """A returned output as numpy (a torch tensor on the GPU when the suite runs on CUDA)."""
    return x.cpu().numpy() if hasattr(x, "cpu") else np.asarray(x)


def test_kernel_without_parameters_returns_its_output():
    out = _host(compile_cpu(constant_tile)())
    assert out.shape == (3, 16) and out.dtype == np.float16
    assert (f64(out) == 1.5).all()
