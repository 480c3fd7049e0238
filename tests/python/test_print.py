"""T.print: values and whole tiles from inside a kernel (printf), on both targets."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu

cpu_only = pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") == "1",
                              reason="reads the CPU process's output (CUDA's printf goes to the device's buffer)")


def printing_kernel():
    @T.prim_func
    def main(A: T.Tensor((2, 3), "float32"), B: T.Tensor((2, 3), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((2, 3), "float16")
            T.copy(A, s)
            T.print(s, msg="tile")
            T.print(A[1, 2] * 2, msg="value 50% of 'x'")
            T.print(bx)
            for i, j in T.Parallel(2, 3):
                B[i, j] = s[i, j]

    return main


@cpu_only
def test_print_values_and_tiles(capfd):
    a = np.arange(6, dtype=np.float32).reshape(2, 3) + 0.5
    b = compile_cpu(printing_kernel(), out_idx=[-1])(a)
    np.testing.assert_array_equal(b, a)
    out = capfd.readouterr().out.splitlines()
    assert "tile s[0, 0] = 0.5" in out and "tile s[1, 2] = 5.5" in out, out
    assert "value 50% of 'x' 11" in out, out
    assert "0" in out, out


@cpu_only
def test_print_per_thread_in_thread_level_code(capfd):
    @T.prim_func
    def main(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4) as bx:
            tx = T.get_thread_binding()
            if tx % 2 == 1:
                T.print(A[tx] * 10, msg="odd")

    compile_cpu(main)(np.array([1, 2, 3, 4], np.int32))
    out = capfd.readouterr().out.splitlines()
    assert out == ["odd 20", "odd 40"], out


def test_cuda_print_source():
    from tilelang import _tl
    from tilelang.jit.cuda_backend import _search_dirs
    ok, why = _tl.find_cuda_compiler(_search_dirs())
    if not ok:
        pytest.skip(why)
    src = tilelang.compile(printing_kernel(), target="cuda -arch=sm_90a").get_kernel_source()
    assert "if (threadIdx.x == 0 && threadIdx.y == 0 && threadIdx.z == 0) printf(\"tile s[%lld, %lld] = %.6g\\n\"" in src, src
    assert "printf(\"block (%d, %d, %d) thread (%d, %d, %d): value 50%% of 'x' %.6g\\n\"" in src, src


def test_cuda_print_of_a_register_fragment():
    from tilelang import _tl
    from tilelang.jit.cuda_backend import _search_dirs
    ok, why = _tl.find_cuda_compiler(_search_dirs())
    if not ok:
        pytest.skip(why)

    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 64), "float16")
            b_s = T.alloc_shared((64, 64), "float16")
            c_f = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.gemm(a_s, b_s, c_f, clear_accum=True)
            T.print(c_f, msg="acc")
            T.copy(c_f, C)

    k = tilelang.compile(main, target="cuda -arch=sm_90a")
    assert "each thread prints the elements it holds" in "\n".join(k.get_remarks())
    assert "acc c_f[%lld, %lld] = %.6g" in k.get_kernel_source()
