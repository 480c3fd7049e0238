"""Register walks in groups (cuda-vectorize-loops): a T.Parallel over a register fragment
that reads shared tiles or tensors, and a copy of a register fragment into a swizzled shared
tile, access memory in 4-, 8- or 16-byte groups through a small register array, the
arithmetic staying per element (checked from the code on sm_90a, no GPU); a load under a
bounds guard stays per element. Results against float64 on whichever target the suite runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from conftest import assert_close, poison


def add_through_shared(M, N, bm=32, bn=32, dtype="float32"):
    """C = A + B, staged through shared tiles, summed in a register fragment, stored from a
    shared tile (upstream's element-wise example)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), dtype), B: T.Tensor((M, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, bn), dtype)
            b_s = T.alloc_shared((bm, bn), dtype)
            c = T.alloc_fragment((bm, bn), dtype)
            c_s = T.alloc_shared((bm, bn), dtype)
            T.copy(A[by * bm, bx * bn], a_s)
            T.copy(B[by * bm, bx * bn], b_s)
            for i, j in T.Parallel(bm, bn):
                c[i, j] = a_s[i, j] + b_s[i, j] * 2
            T.copy(c, c_s)
            T.copy(c_s, C[by * bm, bx * bn])

    return main


def scale_from_global(M, N, bm=32, bn=32):
    """C = 3 A, the fragment read straight from the tensor in a T.Parallel (edge-guarded when
    M and N are not multiples of the tile)."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            c = T.alloc_fragment((bm, bn), "float32")
            for i, j in T.Parallel(bm, bn):
                c[i, j] = A[by * bm + i, bx * bn + j] * 3
            T.copy(c, C[by * bm, bx * bn])

    return main


def cuda_source(func):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def test_shared_reads_and_writes_of_a_walk_are_16_byte_groups():
    code, remarks = cuda_source(add_through_shared(256, 256))
    body = code.split("main_kernel", 1)[1]
    assert "alignas(16) float a_s_group[4];" in body and "tl::copy<16>((&a_s_group[0]), (&a_s[" in body, code
    assert "tl::copy<16>((&b_s_group[0]), (&b_s[" in body, code
    assert "(a_s_group[j] + (b_s_group[j] * 2.0f))" in body, code
    # the copy into the (swizzled) shared tile: one 16-byte store per four registers
    assert "tl::copy<16>((&c_s[" in body and "(&c_s_group[0]));" in body, code
    assert any("register walk(s): their shared-memory and tensor accesses" in r for r in remarks)


def test_tensor_reads_in_a_walk_are_grouped_when_unguarded():
    code, _ = cuda_source(scale_from_global(256, 256))
    # (the walk's step l apart from the thread's address: tl.loop_terms_apart)
    assert "tl::copy<16>((&A_group[0]), ((&A[" in code and "]) + (l * 4)));" in code, code


def test_guarded_tensor_reads_stay_per_element():
    # 250 columns: the edge guard selects per element, so no group load may run past it
    code, _ = cuda_source(scale_from_global(250, 250))
    assert "A_group" not in code, code


@pytest.mark.parametrize("M, N, dtype", [(256, 256, "float32"), (128, 192, "float16"), (64, 96, "bfloat16")])
def test_grouped_walks_match_float64(M, N, dtype, rng):
    from conftest import NP
    a = rng.standard_normal((M, N)).astype(NP[dtype])
    b = rng.standard_normal((M, N)).astype(NP[dtype])
    c = poison((M, N), dtype)
    tilelang.compile(add_through_shared(M, N, dtype=dtype))(a, b, c)
    assert_close(c, a.astype(np.float64) + 2 * b.astype(np.float64), dtype)


@pytest.mark.parametrize("M, N", [(256, 256), (250, 250)])
def test_tensor_reads_match_float64_at_the_edges(M, N, rng):
    a = rng.standard_normal((M, N)).astype(np.float32)
    c = poison((M, N))
    tilelang.compile(scale_from_global(M, N))(a, c)
    assert_close(c, 3 * a.astype(np.float64))


def narrow_from_shared(M=64, N=64):
    """H = half(A - 1), A staged through a shared tile: a grouped walk whose conversions pair."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), H: T.Tensor((M, N), "float16")):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((M, N), "float32")
            h = T.alloc_fragment((M, N), "float16")
            T.copy(A, a_s)
            for i, j in T.Parallel(M, N):
                h[i, j] = a_s[i, j] - 1
            T.copy(h, H)

    return main


def test_grouped_walks_still_convert_in_pairs():
    code, _ = cuda_source(narrow_from_shared())
    assert "tl::copy<16>((&a_s_group[0])" in code and "tl::__float22half2_rn(" in code, code


def test_grouped_pairs_match_float64(rng):
    a = rng.standard_normal((64, 64)).astype(np.float32)
    h = poison((64, 64), "float16")
    tilelang.compile(narrow_from_shared())(a, h)
    assert_close(h, a.astype(np.float64) - 1, "float16")


def scaled_rows_epilogue(M, N, K=32, bm=64, bn=64):
    """The fused-MoE epilogue: a GEMM's accumulator stored for the first `rows` rows of the
    block only, each row scaled by its weight from a tensor (read under the tensor's edge
    guard when M is not a multiple of the block): the guards and the weight are the same for
    both registers of a pair, so the stores go two halves at a time."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), W: T.Tensor((M,), "float16"),
             rows: T.int32, C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            a_s = T.alloc_shared((bm, K), "float16")
            b_s = T.alloc_shared((bn, K), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.copy(A[by * bm, 0], a_s)
            T.copy(B[bx * bn, 0], b_s)
            T.gemm(a_s, b_s, acc, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(bm, bn):
                if i < rows:
                    C[by * bm + i, bx * bn + j] = acc[i, j] * W[by * bm + i]

    return main


@pytest.mark.parametrize("M", [128, 100])
def test_guarded_row_stores_go_in_pairs(M):
    code, remarks = cuda_source(scaled_rows_epilogue(M, 128))
    store = code[code.rindex("for (int32_t l"):]
    assert "tl::copy<4>((&C[" in store and "tl::__float22half2_rn(" in store, store
    assert "< rows)" in store, store
    assert any("register walk(s): their shared-memory and tensor accesses" in r for r in remarks)


@pytest.mark.parametrize("M, rows", [(128, 64), (128, 37), (100, 64), (100, 5)])
def test_guarded_row_stores_match_float64(M, rows, rng):
    N, K = 128, 32
    a = (rng.standard_normal((M, K)) / 4).astype(np.float16)
    b = (rng.standard_normal((N, K)) / 4).astype(np.float16)
    w = rng.standard_normal(M).astype(np.float16)
    c = poison((M, N), "float16")
    tilelang.compile(scaled_rows_epilogue(M, N))(a, b, w, rows, c)
    ref = (a.astype(np.float64) @ b.astype(np.float64).T) * w.astype(np.float64)[:, None]
    kept = (np.arange(M) % 64) < rows
    assert_close(c[kept], ref[kept], "float16")
    assert np.isnan(c[~kept]).all(), "rows past `rows` of each block must stay untouched"
