"""T.copy of one row of a 2-D register fragment into a per-row vector (the split-KV combine
of upstream's flash-decoding example: lse[k, :] -> lse_split). The 2-D fragment keeps its
own layout (it used to inherit the vector's 1-D layout, an internal compiler error on CUDA),
and the copy reads the row it names, not the whole fragment."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def split_combine(splits=4, n=128):
    @T.prim_func
    def main(L: T.Tensor((splits, n), "float32"), P: T.Tensor((splits, n), "float32"), O: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            lse = T.alloc_fragment((splits, n), "float32")
            row = T.alloc_fragment((n,), "float32")
            mx = T.alloc_fragment((n,), "float32")
            acc = T.alloc_fragment((n,), "float32")
            T.copy(L, lse)
            T.reduce_max(lse, mx, dim=0, clear=True)
            T.clear(acc)
            for k in T.Pipelined(splits):
                T.copy(lse[k, :], row)
                for i in T.Parallel(n):
                    acc[i] += T.exp2(row[i] - mx[i]) * P[k, i]
            T.copy(acc, O)

    return main


def test_one_row_of_a_2d_fragment_into_a_vector():
    rng = np.random.default_rng(3)
    lse = rng.standard_normal((4, 128)).astype(np.float32)
    p = rng.standard_normal((4, 128)).astype(np.float32)
    out = np.full(128, np.nan, np.float32)
    tilelang.compile(split_combine())(lse, p, out)
    l64 = lse.astype(np.float64)
    ref = (np.exp2(l64 - l64.max(axis=0)) * p).sum(axis=0)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


def test_split_combine_compiles_for_hopper():
    k = tilelang.compile(split_combine(), target="cuda -arch=sm_90a")
    assert "lse" in k.get_kernel_source()


def test_copy_into_part_of_a_register_fragment_is_refused_on_cuda():
    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16"), B: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((128, 64), "float16")
            w_s = T.alloc_shared((64, 64), "float16")
            a = T.alloc_fragment((64, 64), "float32")
            b = T.alloc_fragment((128, 64), "float32")
            T.copy(A, a_s)
            T.copy(A[0:64, :], w_s)
            T.gemm(w_s, w_s, a, clear_accum=True)
            T.gemm(a_s, w_s, b, clear_accum=True)
            T.copy(a, b[0:64, :])
            T.copy(b, B)

    with pytest.raises(tilelang.TileLangCompileError, match="part of register fragment b"):
        tilelang.compile(main, target="cuda -arch=sm_90a")
