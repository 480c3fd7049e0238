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


def test_other_index_forms_stay_an_error_at_their_line():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), Out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((64, 32), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            s_out = T.alloc_shared((64, 64), "float32")
            T.copy(A, a)
            T.gemm(a, a, acc, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                s_out[i, j] = acc[(i + 1) % 64, j]  # a rotation: not a loop variable plus an offset
            T.copy(s_out, Out)

    with pytest.raises(Exception, match=r"at the loop's variables plus offsets the loop does not change") as e:
        tilelang.lower(main, target="cuda -arch=sm_90a")
    assert "acc[(i + 1) % 64, j]" in str(e.value)
