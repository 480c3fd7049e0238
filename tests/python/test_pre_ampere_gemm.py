"""T.gemm for architectures before sm_80 (Turing, sm_75): the tensor-core path's mma.sync
shapes are sm_80's, so GEMMs there take the element-wise loops, with a remark, instead of
failing in ptxas (upstream's sm75 dispatch tests). Compile-only (NVRTC), no GPU needed."""
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())

needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


def ss_gemm(dtype, accum="float32", M=64, N=64, K=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((K, N), dtype)
            acc = T.alloc_fragment((M, N), accum)
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.gemm(A_s, B_s, acc)
            T.copy(acc, C)

    return main


@needs_cuda_compiler
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sm75_gemm_compiles_without_sm80_mma(dtype):
    k = tilelang.compile(ss_gemm(dtype), out_idx=[2], target="cuda -arch=sm_75")
    assert "mma.sync" not in k.get_ptx()
    assert any("sm_75 has none of the mma.sync shapes" in r for r in k.get_remarks()), k.get_remarks()


@needs_cuda_compiler
def test_sm80_keeps_the_tensor_cores():
    k = tilelang.compile(ss_gemm("bfloat16"), out_idx=[2], target="cuda -arch=sm_80")
    assert "mma.sync.aligned.m16n8k16" in k.get_ptx()
