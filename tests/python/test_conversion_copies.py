"""T.copy between tiles of float32, float16 and bfloat16 in global and shared memory
converts in vectors on CUDA (tl::cast_copy: one load, the conversions in registers, one
store; at most 16 bytes a side, so swizzled tiles keep their 16-byte chunks), zero-filling
what lies outside the tensor. Results against numpy on whichever target the suite runs;
the CUDA choices from the generated code (compile-only)."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def scale_rows(M, N, src_dtype, tile_dtype, out_dtype, bm=32, bn=64, threads=128):
    """Out = 2 * X, through a shared tile of another dtype (X -> tile -> Out, both T.copy)."""

    @T.prim_func
    def main(X: T.Tensor((M, N), src_dtype), Out: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            tile = T.alloc_shared((bm, bn), tile_dtype)
            res = T.alloc_shared((bm, bn), tile_dtype)
            T.copy(X[by * bm, bx * bn], tile)
            for i, j in T.Parallel(bm, bn):
                res[i, j] = tile[i, j] * 2
            T.copy(res, Out[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("src, tile, out", [("bfloat16", "float32", "bfloat16"), ("float16", "float32", "float32"),
                                            ("float32", "float16", "float32"), ("float32", "bfloat16", "float16")])
def test_converting_copies_match_numpy(rng, src, tile, out):
    M, N = 70, 200  # partial tiles on both edges: rows and columns past the end
    x = rng.standard_normal((M, N)).astype(NP[src])
    o = np.full((M, N), np.nan, NP[out])
    compile_cpu(scale_rows(M, N, src, tile, out))(x, o)
    want = (x.astype(NP[tile]).astype(np.float64) * 2).astype(NP[tile]).astype(NP[out])
    np.testing.assert_array_equal(o.astype(np.float64), want.astype(np.float64))


def test_the_copies_convert_in_vectors_on_cuda():
    k = tilelang.lower(scale_rows(70, 200, "bfloat16", "float32", "bfloat16"), target="cuda -arch=sm_90a")
    src = k.kernel_source
    # 4 elements a vector: 8 bytes of bfloat16, 16 of float32
    assert src.count("tl::cast_copy<4, tl::__bfloat1622float2>(") == 1, src  # two at a time
    assert src.count("tl::cast_copy<4, tl::__float22bfloat162_rn>(") == 1, src
    assert "tl::vec_zero<16>((&tile[" in src, src  # the load's edge: zero-filled float32
    assert "static_cast<float>(X[" not in src, src
