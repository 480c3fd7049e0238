"""T.fill / T.clear of part of a register fragment (upstream's alias test clears
`C_local[:block_M, :block_K]`): each thread sets the registers whose element lies inside the
region. Checked against numpy on the CPU target (and on CUDA by the GPU suite); the CUDA
lowering is compiled for sm_90a and sm_80 here."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison, rand


def _gemm_with_partly_cleared_accumulator(M=128, N=128, K=64, bm=64, bn=64, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), T.float16), B: T.Tensor((N, K), T.float16), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), T.float16)
            B_s = T.alloc_shared((bn, bk), T.float16)
            C_l = T.alloc_fragment((bm, bn), T.float32)
            T.fill(C_l, 7)
            window = C_l[16:48, 8:40]  # an alias of part of the accumulator
            T.clear(window)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=True)
            T.copy(C_l, C[by * bm, bx * bn])

    return main


def _elementwise_with_partial_fill(M=64, N=64):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=128):
            F = T.alloc_fragment((M, N), T.float32)
            T.copy(A, F)
            T.fill(F[8:24, 40:64], -1.5)
            for i, j in T.Parallel(M, N):
                F[i, j] = F[i, j] * 2
            T.copy(F, B)

    return main


def test_partly_cleared_gemm_accumulator(rng):
    a, b = rand(rng, (128, 64), "float16"), rand(rng, (128, 64), "float16")
    c = poison((128, 128))
    compile_cpu(_gemm_with_partly_cleared_accumulator())(a, b, c)
    start = np.full((64, 64), 7.0)
    start[16:48, 8:40] = 0
    assert_close(c, f64(a) @ f64(b).T + np.tile(start, (2, 2)))


def test_partial_fill_of_an_elementwise_register_tile(rng):
    a = rand(rng, (64, 64))
    b = poison((64, 64))
    compile_cpu(_elementwise_with_partial_fill())(a, b)
    want = a.copy()
    want[8:24, 40:64] = -1.5
    np.testing.assert_array_equal(b, want * 2)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("make", [_gemm_with_partly_cleared_accumulator, _elementwise_with_partial_fill])
def test_partial_fills_stay_in_registers_on_cuda(arch, make):
    kernel = tilelang.compile(make(), target=f"cuda -arch={arch}")
    remarks = "\n".join(kernel.get_remarks())
    assert "kept in shared memory" not in remarks, remarks
