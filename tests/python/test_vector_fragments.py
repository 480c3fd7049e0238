"""1-D fragments on CUDA: a vector used element-wise on its own (one-loop T.Parallel nests
of vectors, whole copies, fills) lives in registers, runs of consecutive elements dealt to
the threads (layout "vector"); a vector next to a tile is that tile's per-row values, and
a per-row vector's writes to memory are made once per row, not by every thread holding a
copy of it (an atomic add would count the row several times). Layout decisions are checked
from the lowering's remarks and code (no GPU); results against float64 on whichever target
the suite runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from conftest import NP, assert_close, poison


def cuda_lowering(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def scale_vector(L, dtype="float32", threads=128):
    """B = 2 A + 1 through two 1-D fragments."""

    @T.prim_func
    def main(A: T.Tensor((L,), dtype), B: T.Tensor((L,), dtype)):
        with T.Kernel(1, threads=threads):
            a = T.alloc_fragment((L,), dtype)
            b = T.alloc_fragment((L,), dtype)
            T.copy(A, a)
            for i in T.Parallel(L):
                b[i] = a[i] * 2 + 1
            T.copy(b, B)

    return main


def vector_rows_of_matrix(M, L, threads=128):
    """Each block scales one row of A by the row's own elements (a vector per block), with a fill."""

    @T.prim_func
    def main(A: T.Tensor((M, L), "float32"), B: T.Tensor((M, L), "float16")):
        with T.Kernel(M, threads=threads) as bx:
            a = T.alloc_fragment((L,), "float32")
            c = T.alloc_fragment((L,), "float32")
            h = T.alloc_fragment((L,), "float16")
            T.fill(c, 0.5)
            T.copy(A[bx, :], a)
            for i in T.Parallel(L):
                c[i] = c[i] + a[i] * a[i]
            T.copy(c, h)
            T.copy(h, B[bx, :])

    return main


def row_sums(M=64, N=128, threads=128):
    """Out[i] += sum_j A[i, j] (atomic), S[i] = 2 * sum_j A[i, j]: per-row values of a tile."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Out: T.Tensor((M,), "float32"), S: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=threads):
            y = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            T.copy(A, y)
            T.reduce_sum(y, r, dim=1)
            for i in T.Parallel(M):
                T.atomic_add(Out[i], r[i])
            for i in T.Parallel(M):
                S[i] = r[i] * 2

    return main


def test_a_vector_used_on_its_own_is_held_in_registers():
    code, remarks = cuda_lowering(scale_vector(512))
    assert any("fragment a: registers, layout vector(512, 128 threads, vec 4)" in r for r in remarks), remarks
    assert any("fragment b: registers, layout vector(512, 128 threads, vec 4)" in r for r in remarks), remarks
    assert "float a[4];" in code and "(&A[(tx * 4)])" in code, code


def test_vector_too_short_for_the_block_stays_in_shared_memory():
    # 96 elements over 128 threads: no even split, so shared memory (every use works there)
    _, remarks = cuda_lowering(scale_vector(96))
    assert any("fragment a: kept in shared memory" in r for r in remarks), remarks


def test_a_vector_next_to_a_tile_is_its_per_row_values():
    _, remarks = cuda_lowering(row_sums())
    assert any("fragment r: registers, layout strip_rows" in r for r in remarks), remarks


def test_per_row_writes_are_made_by_one_holder_of_each_row():
    code, _ = cuda_lowering(row_sums())
    # 16 lanes hold each row: lane group leader only, for the atomic and for the plain store
    atomic = code.index("tl::atomic_add(")
    assert "if (((tx & 15) == 0)) {" in code[atomic - 60:atomic], code
    store = code.index("S[")
    assert "if (((tx & 15) == 0)) {" in code[store - 60:store], code


@pytest.mark.parametrize("L, dtype", [(512, "float32"), (1024, "float16"), (256, "bfloat16"), (96, "float32")])
def test_vector_results_match_float64(L, dtype, rng):
    a = rng.standard_normal(L).astype(NP[dtype])
    out = poison((L,), dtype)
    tilelang.compile(scale_vector(L, dtype))(a, out)
    assert_close(out, a.astype(np.float64) * 2 + 1, dtype)


def test_vector_copies_fills_and_casts_match_float64(rng):
    a = rng.standard_normal((4, 256)).astype(np.float32)
    out = poison((4, 256), "float16")
    tilelang.compile(vector_rows_of_matrix(4, 256))(a, out)
    assert_close(out, 0.5 + a.astype(np.float64) ** 2, "float16")


def test_per_row_atomics_count_each_row_once(rng):
    a = rng.standard_normal((64, 128)).astype(np.float32)
    base = rng.standard_normal(64).astype(np.float32)
    out, s = base.copy(), poison((64,))
    tilelang.compile(row_sums())(a, out, s)
    sums = a.astype(np.float64).sum(axis=1)
    assert_close(out, base + sums)
    assert_close(s, 2 * sums)
