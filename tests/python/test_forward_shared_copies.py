"""cuda-forward-shared-copies: a T.copy between two whole shared tiles (here a fragment that
no GEMM gives a layout, so it is kept in shared memory) is dropped when nothing writes either
tile while the copy's destination is read; the reads read the source (upstream's mHC pre
GEMM: its staged tile -> a bfloat16 fragment -> a float32 fragment). Results against numpy
on whichever target the suite runs; the CUDA choices from the generated code."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison


def row_sums(M=64, K=512, bk=128, then=None):
    """Out[i] = sum_k X[i, k]^2 through X tile -> bfloat16 fragment -> float32 fragment.
    `then`: "fill" zeroes the staged tile after the copy, "sync" puts a barrier there."""

    @T.prim_func
    def main(X: T.Tensor((M, K), "bfloat16"), Out: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_fragment((M, 4), "float32")
            T.clear(acc)
            for ko in T.Pipelined(K // bk, num_stages=2):
                xs = T.alloc_shared((M, bk), "bfloat16")
                T.copy(X[0, ko * bk], xs)
                x16 = T.alloc_fragment((M, bk), "bfloat16")
                T.copy(xs, x16)
                if then == "fill":
                    T.fill(xs, 0)
                if then == "sync":
                    T.sync_threads()
                x32 = T.alloc_fragment((M, bk), "float32")
                T.copy(x16, x32)
                for kk in T.serial(bk // 4):
                    for i, j in T.Parallel(M, 4):
                        acc[i, j] += x32[i, kk * 4 + j] * x32[i, kk * 4 + j]
            out = T.alloc_fragment((M,), "float32")
            T.reduce_sum(acc, out, dim=1)
            T.copy(out, Out)

    return main


@pytest.mark.parametrize("then", [None, "fill", "sync"])
def test_row_sums_match_numpy(rng, then):
    x = rng.standard_normal((64, 512)).astype(ml_dtypes.bfloat16)
    out = poison((64,))
    compile_cpu(row_sums(then=then))(x, out)
    np.testing.assert_allclose(out, (x.astype(np.float64) ** 2).sum(axis=1), rtol=1e-5)


def test_the_fragment_reads_the_staged_tile_in_place():
    k = tilelang.lower(row_sums(), target="cuda -arch=sm_90a")
    assert any("T.copy xs -> x16 (line" in r and "x16 reads xs in place" in r for r in k.remarks), k.remarks
    # and the float32 fragment, read by element loads only, reads it too, converting
    assert any("x32 reads xs in place, converting each element it loads" in r for r in k.remarks), k.remarks
    body = k.kernel_source[k.kernel_source.find("__global__"):]
    assert "x16" not in body and "x32" not in body, body
    assert "static_cast<float>(xs[" in body, body


@pytest.mark.parametrize("then", ["fill", "sync"])
def test_no_forwarding_when_the_source_may_change(then):
    k = tilelang.lower(row_sums(then=then), target="cuda -arch=sm_90a")
    assert not any("x16 reads xs" in r for r in k.remarks), k.remarks
    # x16 itself changes no more after its copy: the float32 fragment still reads it in place
    assert any("x32 reads x16 in place" in r for r in k.remarks), k.remarks
    assert "x16[" in k.kernel_source


def mix_rows(n=4, h=512, blk=128):
    """X[r, j] = sum_i A[i, r] * B[i, j] per block of columns, B's bfloat16 stage read
    through a float32 fragment allocated before the loop (upstream's mHC post)."""

    @T.prim_func
    def main(A: T.Tensor((n, n), "float32"), B: T.Tensor((n, h), "bfloat16"), X: T.Tensor((n, h), "float32")):
        with T.Kernel(1, threads=128):
            b_s = T.alloc_shared((n, blk), "bfloat16")
            b_l = T.alloc_fragment((n, blk), "float32")
            a_l = T.alloc_fragment((n, n), "float32")
            x_l = T.alloc_fragment((n, blk), "float32")
            T.copy(A, a_l)
            for ko in T.Pipelined(h // blk, num_stages=2):
                T.copy(B[0, ko * blk], b_s)
                T.copy(b_s, b_l)
                for r, j in T.Parallel(n, blk):
                    x_l[r, j] = 0
                    for i in T.serial(n):
                        x_l[r, j] += a_l[i, r] * b_l[i, j]
                T.copy(x_l, X[0, ko * blk])

    return main


def test_a_converting_copy_read_by_element_loads_matches_numpy(rng):
    a = rng.standard_normal((4, 4)).astype(np.float32)
    b = rng.standard_normal((4, 512)).astype(ml_dtypes.bfloat16)
    x = poison((4, 512))
    compile_cpu(mix_rows())(a, b, x)
    np.testing.assert_allclose(x, a.astype(np.float64).T @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


def test_a_converting_copy_is_forwarded_as_converting_loads():
    # 96 columns on 128 threads: no layout holds whole columns, so b_l stays in shared memory
    # (with 128 columns it is a register tile: test_whole_column_fragments.py).
    k = tilelang.lower(mix_rows(h=480, blk=96), target="cuda -arch=sm_90a")
    assert any("b_l reads b_s in place, converting each element it loads" in r for r in k.remarks), k.remarks
    body = k.kernel_source[k.kernel_source.find("__global__"):]
    assert "b_l" not in body and "static_cast<float>(b_s[" in body, body
