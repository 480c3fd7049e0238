"""T.CUDASourceCodeKernel: a launch whose body is hand-written CUDA (upstream's name). The
code is checked and compiled without a GPU; with TILELANG_TEST_CUDA=1 the kernel runs."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")
ON_GPU = os.environ.get("TILELANG_TEST_CUDA") == "1"

SOURCE = """
extern "C" __global__ void scaled_copy(const float* A, float* B, int n) {
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) B[i] = 3.0f * A[i];
}
extern "C" __global__ void __launch_bounds__(128) other(float* A, float* B, int n) {}
"""


def source_kernel(source, entry_name="scaled_copy"):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), B: T.Tensor((N,), T.float32)):
        T.CUDASourceCodeKernel(T.ceildiv(N, 128), threads=128, source_code_or_path=source, entry_name=entry_name)

    return main


@needs_compiler
def test_the_source_is_the_kernel_and_its_entry_is_named(tmp_path):
    k = tilelang.compile(source_kernel(SOURCE), target="cuda -arch=sm_80")
    assert "B[i] = 3.0f * A[i];" in k.get_kernel_source()
    # parameters in order, then the dynamic size as an int: the entry's own signature
    assert k._cuda.src.entry == "scaled_copy" and list(k._cuda.src.arg_kinds) == ["ptr", "ptr", "i32"]
    # the same from a file
    path = tmp_path / "kernel.cu"
    path.write_text(SOURCE)
    assert "3.0f * A[i]" in tilelang.compile(source_kernel(path), target="cuda -arch=sm_80").get_kernel_source()


@needs_compiler
@pytest.mark.parametrize("source, entry, message", [
    (SOURCE, "main_kernel", "entry_name main_kernel is no __global__ function of the source. Available entries: "
                            "scaled_copy, other"),
    (SOURCE, None, "several kernels; name one with entry_name="),
    (SOURCE.replace('extern "C" ', ""), "scaled_copy", 'declare scaled_copy extern "C"'),
    ("int x;", None, "defines no __global__ function"),
])
def test_entries_that_cannot_launch_are_errors(source, entry, message):
    with pytest.raises(tilelang.TileLangCompileError, match=message):
        tilelang.compile(source_kernel(source, entry), target="cuda -arch=sm_80")


def test_it_is_cuda_only():
    if ON_GPU:
        pytest.skip("checks the CPU target's error")
    with pytest.raises(tilelang.TileLangCompileError, match="runs on the cuda target only"):
        tilelang.compile(source_kernel(SOURCE), target="cpu")


def test_it_is_a_launch_of_its_own():
    with pytest.raises(tilelang.TileLangCompileError, match="call it outside `with T.Kernel"):
        @T.prim_func
        def main(A: T.Tensor((128,), T.float32)):
            with T.Kernel(1, threads=128):
                T.CUDASourceCodeKernel(1, threads=128, source_code_or_path=SOURCE, entry_name="scaled_copy")


@pytest.mark.skipif(not ON_GPU, reason="runs the hand-written kernel on the GPU")
def test_the_kernel_runs(rng=np.random.default_rng(5)):
    a = rng.standard_normal(1000).astype(np.float32)
    b = np.full_like(a, np.nan)
    tilelang.compile(source_kernel(SOURCE), target="cuda")(a, b)
    np.testing.assert_array_equal(b, 3 * a)
