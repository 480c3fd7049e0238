"""A register fragment read in a T.Parallel nest at its loop variables plus constants, or in
another order than the nest's (upstream's sparse MLA backward stores its dK/dV accumulator in
halves: `if i < BS // 2: S[i, d] = acc[i + s * (BS // 2), d]`): the nest walks the fragment's
registers, each register's element mapped back to the loop's iteration and guarded to the
loop's range. An iteration no register reaches must do nothing (its guard provably fails);
otherwise the access stays an error at its line. Against numpy on whichever target the
suite runs; the CUDA choice from the generated code."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison


def halves(M=64, N=64, K=32, split=2, guarded=True, transposed=False):
    """Out = A @ B.T written through a shared tile of M // split rows, one part at a time."""
    part = M // split

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), Out: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((N, K), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            s_out = T.alloc_shared((part, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, acc, transpose_B=True, clear_accum=True)
            for s in range(split):
                if transposed:
                    for j, i in T.Parallel(N, M):
                        if i < part:
                            s_out[i, j] = acc[i + s * part, j]
                elif guarded:
                    for i, j in T.Parallel(M, N):
                        if i < part:
                            s_out[i, j] = acc[i + s * part, j]
                else:
                    for i, j in T.Parallel(part, N):
                        s_out[i, j] = acc[i + s * part, j]
                T.copy(s_out, Out[s * part, 0])

    return main


@pytest.mark.parametrize("guarded, transposed", [(True, False), (False, False), (True, True)])
def test_offset_reads_of_an_accumulator_match_numpy(rng, guarded, transposed):
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    out = poison((64, 64))
    compile_cpu(halves(guarded=guarded, transposed=transposed))(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("guarded, transposed", [(True, False), (False, False), (True, True)])
def test_the_nest_walks_the_accumulators_registers_on_cuda(guarded, transposed):
    k = tilelang.lower(halves(guarded=guarded, transposed=transposed), target="cuda -arch=sm_90a")
    assert "fragment acc: registers" in "\n".join(k.remarks)
    body = k.kernel_source[k.kernel_source.find("__global__"):]
    assert body.count("tl.register_walk") == 0 and body.count("s_out[") >= 2, body


def rotated(M=64):
    @T.prim_func
    def main(A: T.Tensor((M, 32), "float16"), Out: T.Tensor((M, M), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, 32), "float16")
            acc = T.alloc_fragment((M, M), "float32")
            s_out = T.alloc_shared((M, M), "float32")
            T.copy(A, a)
            T.gemm(a, a, acc, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(M, M):
                s_out[i, j] = acc[(i + 1) % M, j]  # a rotation: not a loop variable plus an offset
            T.copy(s_out, Out)

    return main


def test_other_index_forms_go_through_shared_memory(rng):
    """No nest walks acc[(i + 1) % 64, j] in registers: the accumulator is written to a shared
    tile for that statement (a remark names the access), and the result is still right."""
    a = rng.standard_normal((64, 32)).astype(np.float16)
    out = poison((64, 64))
    compile_cpu(rotated())(a, out)
    full = a.astype(np.float64) @ a.astype(np.float64).T
    np.testing.assert_allclose(out, np.roll(full, -1, axis=0), rtol=1e-3, atol=1e-3)
    k = tilelang.lower(rotated(), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.remarks)
    assert "fragment acc (registers) goes through shared memory at line" in remarks, remarks
    assert "acc[(i + 1) % 64, j]" in remarks and "(written to a shared tile)" in remarks, remarks
    assert "acc_shared[" in k.kernel_source
