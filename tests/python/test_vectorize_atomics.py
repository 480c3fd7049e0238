"""cuda-vectorize-atomics: a fragment's float atomic adds into a global tensor become one
vector reduction per column pair on sm_90+ (checked from the generated code, no GPU), only
where the pair's addresses are provably consecutive and aligned; the same kernels give the
float64 answer on whichever target the suite runs."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def accumulate(M=64, N=64, K=32, col_offset=0, transposed=False, threads=128):
    """out[i, j (+ col_offset)] += (A @ B)[i, j], twice (two row blocks of A add into the same rows)."""
    out_shape = (N, M) if transposed else (M, N + col_offset)

    @T.prim_func
    def main(A: T.Tensor((2 * M, K), "float16"), B: T.Tensor((K, N), "float16"), Out: T.Tensor(out_shape, "float32")):
        with T.Kernel(2, threads=threads) as bx:
            a_s = T.alloc_shared((M, K), "float16")
            b_s = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A[bx * M, 0], a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc)
            for i, j in T.Parallel(M, N):
                if transposed:
                    T.atomic_add(Out[j, i], acc[i, j])
                else:
                    T.atomic_add(Out[i, j + col_offset], acc[i, j])

    return main


def guarded(M=64, N=64, K=32, rows=None, guard="row", threads=128):
    """Out[i, j] += (A @ B)[i, j] where a guard holds: `i < limit` (a row bound, as attention
    backward's sequence length), `j < limit` (a column bound), or none; Out may have fewer
    rows than the tile (`rows`), so the update also carries the bounds guard."""
    rows = rows or M

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), Out: T.Tensor((rows, N), "float32"),
             limit: T.int32):
        with T.Kernel(1, threads=threads) as _:
            a_s = T.alloc_shared((M, K), "float16")
            b_s = T.alloc_shared((K, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc)
            for i, j in T.Parallel(M, N):
                if guard == "row":
                    if i < limit:
                        T.atomic_add(Out[i, j], acc[i, j])
                elif guard == "col":
                    if j < limit:
                        T.atomic_add(Out[i, j], acc[i, j])
                else:
                    T.atomic_add(Out[i, j], acc[i, j])

    return main


def cuda_source(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def test_column_pairs_become_one_vector_reduction():
    code, remarks = cuda_source(accumulate())
    assert "tl::atomic_add_vec(" in code and "tl::atomic_add(" not in code
    # 32 accumulator registers per thread: 16 pairs
    walk = re.search(r"for \(int32_t (\w+) = 0; \1 < 16; \+\+\1\) \{\s*// [^\n]*\n\s*tl::atomic_add_vec\(.*\), "
                     r"acc\[\(\1 \* 2\)\], acc\[\(\(\1 \* 2\) \+ 1\)\]\);", code)
    assert walk, code
    assert any("vector reduction" in r for r in remarks)


def test_row_guarded_pairs_become_one_vector_reduction_under_the_guard():
    # a row bound and the bounds guard of a tensor with fewer rows than the tile: both hold
    # for a whole column pair, so the pair is one reduction under the first register's guards
    code, remarks = cuda_source(guarded(rows=40))
    assert "tl::atomic_add_vec(" in code and "tl::atomic_add(" not in code, code
    body = code[code.index("tl::atomic_add_vec(") - 400:code.index("tl::atomic_add_vec(")]
    assert "< limit)" in body and "< 40)" in body, body
    assert any("vector reduction" in r for r in remarks)


@pytest.mark.parametrize("why, func, arch", [
    ("a column bound differs within a pair", guarded(guard="col"), "sm_90a"),
    ("sm_80 has no vector reductions", accumulate(), "sm_80"),
    ("an odd column offset: pairs start at odd floats", accumulate(col_offset=1), "sm_90a"),
    ("transposed: a pair's floats are a row apart", accumulate(transposed=True), "sm_90a"),
])
def test_scalar_atomics_where_pairs_do_not_qualify(why, func, arch):
    code, remarks = cuda_source(func, arch)
    assert "tl::atomic_add_vec(" not in code and "tl::atomic_add(" in code, why
    assert not any("vector reduction" in r for r in remarks)


@pytest.mark.parametrize("guard, rows, limit", [("row", 64, 37), ("row", 40, 64), ("col", 64, 23), (None, 40, 0)])
def test_guarded_sums_match_float64(guard, rows, limit):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    kernel = tilelang.compile(guarded(rows=rows, guard=guard))
    base = rng.standard_normal((rows, 64)).astype(np.float32)
    out = base.copy()
    kernel(a, b, out, limit)
    prod = (a.astype(np.float64) @ b.astype(np.float64))[:rows]
    mask = np.ones_like(prod, dtype=bool)
    if guard == "row":
        mask[limit:, :] = False
    elif guard == "col":
        mask[:, limit:] = False
    want = base.astype(np.float64) + np.where(mask, prod, 0)
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("col_offset, transposed", [(0, False), (1, False), (0, True), (2, False)])
def test_accumulated_sums_match_float64(col_offset, transposed):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    kernel = tilelang.compile(accumulate(col_offset=col_offset, transposed=transposed))
    base = rng.standard_normal((64, 64) if transposed else (64, 64 + col_offset)).astype(np.float32)
    out = base.copy()
    kernel(a, b, out)
    prod = a[:64].astype(np.float64) @ b.astype(np.float64) + a[64:].astype(np.float64) @ b.astype(np.float64)
    want = base.astype(np.float64)
    if transposed:
        want += prod.T
    else:
        want[:, col_offset:] += prod
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)


def scatter_rows(rows=16, cols=64, out_rows=40, width=4, col_offset=0):
    """Out[Idx[r], c:c+width] += tile[r, c:c+width] through T.atomic_addx4 / _addx2 (sparse
    attention backward's dKV scatter: rows picked by a gathered index, a shared staging tile);
    rows whose index is out of range are dropped by the bounds guard."""
    add = T.atomic_addx4 if width == 4 else T.atomic_addx2

    @T.prim_func
    def main(X: T.Tensor((rows, cols), "float32"), Idx: T.Tensor((rows,), "int32"),
             Out: T.Tensor((out_rows, cols + col_offset), "float32")):
        with T.Kernel(1, threads=128) as _:
            tile = T.alloc_shared((rows, cols), "float32")
            T.copy(X, tile)
            for r, c in T.Parallel(rows, cols // width):
                add(Out[Idx[r], col_offset + c * width], tile[r, c * width])

    return main


def test_atomic_addx4_runs_become_one_vector_reduction():
    code, remarks = cuda_source(scatter_rows())
    assert "tl::atomic_add_vec(" in code and "tl::atomic_add(" not in code, code
    call = code[code.index("tl::atomic_add_vec("):].split(";")[0]
    # four floats in one red.global.add.v4.f32, read from the staging tile as one vector
    assert "tile_group" in call and "tile[" not in call, call
    before = code[:code.index("tl::atomic_add_vec(")]
    assert "tl::copy<16>((&tile_group" in before[before.rindex("float tile_group"):], before[-600:]
    assert any("vector reduction" in r for r in remarks)
    code, _ = cuda_source(scatter_rows(width=2))
    call = code[code.index("tl::atomic_add_vec("):].split(";")[0]
    assert call.count("tile_group") == 2, call


def test_atomic_addx4_at_an_unaligned_column_stays_scalar():
    # columns 1 + 4c: a group of four would start off a 16-byte boundary
    code, _ = cuda_source(scatter_rows(col_offset=1))
    assert "tl::atomic_add_vec(" not in code and "tl::atomic_add(" in code, code


@pytest.mark.parametrize("width, col_offset", [(4, 0), (2, 0), (4, 1)])
def test_scattered_row_sums_match_float64(width, col_offset):
    rng = np.random.default_rng(11 + width + col_offset)
    x = rng.standard_normal((16, 64)).astype(np.float32)
    idx = rng.integers(0, 40, size=16).astype(np.int32)
    idx[3] = idx[7]  # two rows into one: the atomics add both
    idx[5] = 40  # out of range: dropped by the bounds guard
    base = rng.standard_normal((40, 64 + col_offset)).astype(np.float32)
    out = base.copy()
    tilelang.compile(scatter_rows(width=width, col_offset=col_offset))(x, idx, out)
    want = base.astype(np.float64)
    for r in range(16):
        if idx[r] < 40:
            want[idx[r], col_offset:] += x[r].astype(np.float64)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)
