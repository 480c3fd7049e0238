"""Strided tensor arguments, by upstream's rule: a T.Tensor must be contiguous (a size-1
dimension may have any stride); a T.StridedTensor takes any strides its declaration
allows: a static stride must match the argument's, a symbolic one is bound from it and
passed to the kernel as an extra scalar after the dynamic sizes. Results on the CPU target
against float64 numpy; the CUDA code compile-only (no TMA or vectors the strides forbid)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangArgumentError, TileLangRuntimeError
from tilelang.jit.cuda_backend import _search_dirs

from conftest import assert_close, compile_cpu, poison, rand

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


def scaled_copy(M, N, strides, block=16):
    @T.prim_func
    def main(A: T.StridedTensor((M, N), strides, "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, block), T.ceildiv(M, block), threads=64) as (bx, by):
            for i, j in T.Parallel(block, block):
                B[by * block + i, bx * block + j] = A[by * block + i, bx * block + j] * 3

    return main


@pytest.mark.cpu_target
def test_static_row_stride_reads_a_column_slice(rng):
    M, N, W = 32, 48, 80
    k = compile_cpu(scaled_copy(M, N, (W, 1)), out_idx=[1])
    base = rand(rng, (M, W))
    assert_close(k(base[:, :N]), base[:, :N].astype(np.float64) * 3)


@pytest.mark.cpu_target
def test_symbolic_strides_are_bound_per_call(rng):
    M, N = 32, 48
    s0, s1 = T.dynamic("s0"), T.dynamic("s1")
    k = compile_cpu(scaled_copy(M, N, (s0, s1)), out_idx=[1])
    assert [d[0] for d in k.dynamic_dims] == ["s0", "s1"]
    assert all(d[3] == "stride" for d in k.dynamic_dims)
    for view in (rand(rng, (M, 100))[:, 10:10 + N],     # a row pitch of 100
                 rand(rng, (N, M)).T,                    # a transpose: strides (1, M)
                 rand(rng, (2 * M, 3 * N))[::2, ::3]):   # every other row, every third column
        assert_close(k(view), view.astype(np.float64) * 3)


@pytest.mark.cpu_target
def test_torch_views_and_in_place_outputs(rng):
    torch = pytest.importorskip("torch")
    M, N = 32, 32
    s = T.dynamic("s")

    @T.prim_func
    def axpy(X: T.StridedTensor((M, N), (s, 1), "float32"), Y: T.StridedTensor((M, N), (s, 1), "float32")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(M, N):
                Y[i, j] = Y[i, j] + 2 * X[i, j]

    k = compile_cpu(axpy)
    x, y = torch.from_numpy(rand(rng, (M, 64))), torch.from_numpy(rand(rng, (M, 64)))
    ref = y.double().clone()
    ref[:, 8:8 + N] += 2 * x.double()[:, 8:8 + N]
    k(x[:, 8:8 + N], y[:, 8:8 + N])
    assert_close(y.numpy(), ref.numpy())  # the columns outside the views are unchanged
    with pytest.raises(TileLangArgumentError, match=r"stride 's' of argument 'Y' \(dimension 0\) is 48, but s = 64"):
        k(x[:, :N], torch.zeros(M, 48)[:, :N])


@pytest.mark.cpu_target
def test_plain_tensor_stays_contiguous_but_size_one_dims_are_free(rng):
    @T.prim_func
    def main(A: T.Tensor((1, 16), "float32"), B: T.Tensor((1, 16), "float32")):
        with T.Kernel(1, threads=16):
            for i, j in T.Parallel(1, 16):
                B[i, j] = A[i, j] + 1

    k = compile_cpu(main, out_idx=[1])
    base = rand(rng, (4, 16))
    assert_close(k(base[1:2]), base[1:2].astype(np.float64) + 1)  # row stride 16 on a size-1 dim
    with pytest.raises(TileLangArgumentError, match=r"argument 'A' must be C-contiguous"):
        k(rand(rng, (1, 32))[:, ::2])


@pytest.mark.cpu_target
def test_stride_errors_name_the_parameter_and_dimension(rng):
    k = compile_cpu(scaled_copy(16, 16, (40, 1)), out_idx=[1])
    with pytest.raises(TileLangArgumentError,
                       match=r"argument 'A' must have strides \(40, 1\) \(in elements\), got \(16, 1\) "
                             r"\(dimension 0 has stride 16, expected 40\)"):
        k(rand(rng, (16, 16)))
    with pytest.raises(TileLangArgumentError, match=r"strides .* \(in bytes\); a strided tensor needs"):
        k(rand(rng, (16, 40))[::-1, :16])  # a negative row stride


def test_strided_outputs_cannot_be_allocated():
    with pytest.raises(TileLangRuntimeError, match=r"output 'A' is a T.StridedTensor"):
        compile_cpu(scaled_copy(16, 16, (40, 1)), out_idx=[0])


@pytest.mark.cpu_target
def test_eager_stride_names_specialise_from_the_argument(rng):
    @tilelang.jit
    def double(A):
        M, N, sM, sN = T.const("M, N, sM, sN")
        A: T.StridedTensor[[M, N], [sM, sN], T.float32]
        B = T.empty((M, N), T.float32)
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(M, N):
                B[i, j] = A[i, j] * 2
        return B

    base = rand(rng, (16, 2, 24, 2))
    view = base[:, 0, :, 0]
    assert_close(double(view), view.astype(np.float64) * 2)
    dense = rand(rng, (16, 24))
    assert_close(double(dense), dense.astype(np.float64) * 2)  # another specialisation


@needs_cuda_compiler
def test_cuda_strided_tensors_take_real_strides_and_no_tma():
    M, N, W = 64, 64, 96
    s = T.dynamic("s")

    @T.prim_func
    def main(A: T.StridedTensor((M, N), (s, 1), "float16"), B: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, N), "float16")
            T.copy(A, A_s)
            T.copy(A_s, B)

    k = tilelang.compile(main, target="cuda -arch=sm_90a")
    src = k.get_kernel_source()
    # the stride after the tensor parameters (then any TMA descriptor of B's store)
    assert re.search(r"half\* __restrict__ B, int32_t s[,)]", src)
    assert "static_cast<int64_t>(s)" in src and "CUtensorMap" not in src
    assert any("T.copy A -> A_s: 2-byte accesses" in r for r in k.get_remarks())
    # a static pitch that keeps 16-byte rows: the loop vectorizer may use it
    ks = tilelang.compile(scaled_copy(64, 64, (W, 1), block=64), target="cuda -arch=sm_90a")
    assert "* 96)" in ks.get_kernel_source() or "96" in ks.get_kernel_source()
