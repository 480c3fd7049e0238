"""TVM's spellings that upstream's tests use: a launch written as nested
`T.thread_binding` loops (blockIdx, then threadIdx), `T.match_buffer` of a `T.handle`
parameter, and `T.unroll(..., unroll_factor=n)`."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, rand
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")


def scaled_rows():
    @T.prim_func
    def main(A: T.Tensor((6, 4, 32), "float32"), B: T.Tensor((6, 4, 32), "float32")):
        for i in T.thread_binding(6, thread="blockIdx.x"):
            for j in T.thread_binding(4, thread="blockIdx.y"):
                for t in T.thread_binding(32, thread="threadIdx.x"):
                    B[i, j, t] = A[i, j, t] * (i + 10 * j) + t

    return main


def test_thread_binding_loops_make_a_launch(rng):
    k = compile_cpu(scaled_rows())
    a = rand(rng, (6, 4, 32))
    b = np.full_like(a, np.nan)
    k(a, b)
    i, j, t = np.meshgrid(np.arange(6), np.arange(4), np.arange(32), indexing="ij")
    np.testing.assert_allclose(b, a * (i + 10 * j) + t, rtol=1e-6)


@needs_compiler
def test_thread_binding_launch_on_cuda():
    src = tilelang.compile(scaled_rows(), target="cuda -arch=sm_80").get_kernel_source()
    assert "__launch_bounds__(32" in src and "blockIdx.y" in src, src


def test_match_buffer_views_a_handle_parameter(rng):
    @T.prim_func
    def main(A_ptr: T.handle, B_ptr: T.handle):
        A = T.match_buffer(A_ptr, (16, 16), dtype=T.float32, align=16)
        B = T.match_buffer(B_ptr, (16, 16), T.float32)
        for _ in T.thread_binding(1, thread="blockIdx.x"):
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                for i in T.unroll(0, 16, step=4):
                    B[tx, i] = A[tx, i] + 1

    a = rand(rng, (16, 16))
    b = np.zeros_like(a)
    compile_cpu(main)(a, b)
    np.testing.assert_array_equal(b[:, ::4], a[:, ::4] + 1)
    np.testing.assert_array_equal(b[:, 1::4], 0)


def unrolled(factor):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.unroll(64, unroll_factor=factor):
                A[i] = A[i] * 2

    return main


@needs_compiler
def test_unroll_factor_is_the_pragma():
    assert "#pragma unroll 4\n" in tilelang.compile(unrolled(4), target="cuda -arch=sm_80").get_kernel_source()


def test_unroll_factor_results_and_checks(rng):
    a = rand(rng, (64,))
    b = a.copy()
    compile_cpu(unrolled(8))(b)
    np.testing.assert_array_equal(b, a * 2)
    with pytest.raises(tilelang.TileLangCompileError, match="unroll_factor must be a positive int, got 0"):
        unrolled(0)


@pytest.mark.parametrize("body, message", [
    ("for t in T.thread_binding(32, thread='threadIdx.x'):\n"
     "    for b in T.thread_binding(4, thread='blockIdx.x'):\n"
     "        A[b * 32 + t] = 1.0",
     "T.thread_binding must be used inside"),
    ("for b in T.thread_binding(4, thread='blockIdx.y'):\n"
     "    for t in T.thread_binding(32, thread='threadIdx.x'):\n"
     "        A[b * 32 + t] = 1.0",
     "blockIdx dimensions must be x, then y, then z"),
])
def test_misordered_bindings_are_errors(tmp_path, body, message):
    import importlib.util
    import textwrap

    src = ("import tilelang.language as T\n\n@T.prim_func\ndef main(A: T.Tensor((128,), 'float32')):\n" +
           textwrap.indent(body, "    ") + "\n")
    path = tmp_path / "bindings.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("bindings", path)
    with pytest.raises(tilelang.TileLangCompileError, match=message):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
