"""Thread-level code: T.get_thread_binding and T.warp_reduce_* (CUDA only).

The CPU target runs a block as one sequence, so these are a compile error there, at the
user's line. On CUDA the generated code is checked here without a GPU."""
import os

import pytest

import tilelang
import tilelang.language as T
from conftest import marker_line
from tilelang.jit.cuda_backend import _search_dirs
from tilelang import _tl

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")
cpu_only = pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") == "1", reason="checks the CPU target's error")


def warp_sums(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), S: T.Tensor((n // 32,), "float32"),
             Bits: T.Tensor((n // 32,), "int32")):
        with T.Kernel(n // 128, threads=128) as bx:
            tx = T.get_thread_binding()  # ERR-HERE
            v = A[bx * 128 + tx]
            s = T.warp_reduce_sum(v)
            m = T.warp_reduce_max(v)
            b = T.warp_reduce_bitor(tx % 7)
            if tx % 32 == 0:
                S[bx * 4 + tx // 32] = s + m * 0
                Bits[bx * 4 + tx // 32] = b

    return main


@needs_compiler
def test_warp_reductions_and_thread_index_on_cuda():
    k = tilelang.compile(warp_sums(256), target="cuda -arch=sm_90a")
    src = k.get_kernel_source()
    for fn in ("warp_reduce_sum<32>", "warp_reduce_max<32>", "warp_reduce_bitor<32>"):
        assert "tl::" + fn in src, src
    # The thread index is the block's flat index: barrier placement sees it as such.
    assert "threadIdx.x" in src and "thread_binding" not in src, src


@needs_compiler
def test_thread_binding_of_a_2d_block():
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=(16, 8)) as bx:
            x = T.get_thread_binding(0)
            y = T.get_thread_binding(1)
            A[y, x] = T.cast(y * 100 + x, "float32")

    src = tilelang.compile(main, target="cuda -arch=sm_80").get_kernel_source()
    assert "tx % 16" in src and "tx / 16" in src, src


@cpu_only
def test_thread_level_code_is_a_clear_error_on_the_cpu():
    prog = warp_sums(256)
    with pytest.raises(tilelang.TileLangCompileError, match="T.get_thread_binding needs the CUDA target") as info:
        tilelang.compile(prog, target="cpu")
    assert info.value.line == marker_line(warp_sums)


def test_bitwise_warp_reduction_takes_integers():
    with pytest.raises(tilelang.TileLangCompileError, match="T.warp_reduce_bitand takes an integer value, got float32"):
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                A[0] = T.warp_reduce_bitand(A[1])


@needs_compiler
def test_shuffles_on_cuda():
    @T.prim_func
    def main(A: T.Tensor((64,), "float16"), B: T.Tensor((64,), "float16")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            v = A[tx]
            B[tx] = T.shfl_xor(v, 1) + T.shfl_down(v, 2) + T.shfl_up(v, 3) + T.shfl_sync(v, 0)

    src = tilelang.compile(main, target="cuda -arch=sm_80").get_kernel_source()
    for fn in ("tl::shfl_xor(", "tl::shfl_down(", "tl::shfl_up(", "tl::shfl_sync("):
        assert fn in src, src


@cpu_only
def test_shuffle_is_a_clear_error_on_the_cpu():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            A[0] = T.shfl_xor(A[1], 1)

    with pytest.raises(tilelang.TileLangCompileError, match="T.shfl_xor needs the CUDA target"):
        tilelang.compile(main, target="cpu")
