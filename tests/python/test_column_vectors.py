"""A vector of per-column values next to a GEMM accumulator (V[j] read in a T.Parallel over
C[i, j], as upstream's sparse MLA kernels read their mask of valid key columns): on CUDA the
vector is held in registers as the accumulator's columns (each thread the columns it holds
there, computed by that thread), instead of in shared memory behind a barrier. Values are
checked against float64 on the default target (the CPU; the CUDA suite runs the same tests on
the GPU); the sm_90a layout choice and the one write per column to memory are checked from
the generated code on any machine."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def masked_scores(rows, cols, dim, block, threads, policy=T.GemmWarpPolicy.FullRow, stages=2):
    """out[r, c] = A[r] . B[c] where idx[c] <= limit[row block], else -inf; count[row block, c]
    counts the valid columns once per block (an atomic add per column of the vector)."""
    blocks = rows // 64

    @T.prim_func
    def scores(A: T.Tensor((rows, dim), "float16"), B: T.Tensor((cols, dim), "float16"),
               idx: T.Tensor((cols,), "int32"), limit: T.Tensor((blocks,), "int32"),
               out: T.Tensor((rows, cols), "float32"), count: T.Tensor((blocks, cols), "int32")):
        with T.Kernel(blocks, threads=threads) as bx:
            A_s = T.alloc_shared((64, dim), "float16")
            B_s = T.alloc_shared((block, dim), "float16")
            acc = T.alloc_fragment((64, block), "float32")
            valid = T.alloc_fragment((block,), "bool")
            T.copy(A[bx * 64, 0], A_s)
            for t in T.Pipelined(cols // block, num_stages=stages):
                T.copy(B[t * block, 0], B_s)
                for j in T.Parallel(block):
                    valid[j] = idx[t * block + j] <= limit[bx]
                for i, j in T.Parallel(64, block):
                    acc[i, j] = T.if_then_else(valid[j], 0, -T.infinity("float32"))
                T.gemm(A_s, B_s, acc, transpose_B=True, policy=policy)
                for j in T.Parallel(block):
                    T.atomic_add(count[bx, t * block + j], T.if_then_else(valid[j], 1, 0))
                T.copy(acc, out[bx * 64, t * block])

    return scores


def _run(kernel, rng, rows, cols, dim):
    a = rng.standard_normal((rows, dim)).astype(np.float16)
    b = rng.standard_normal((cols, dim)).astype(np.float16)
    idx = rng.integers(0, 100, cols).astype(np.int32)
    limit = rng.integers(20, 80, rows // 64).astype(np.int32)
    out = np.full((rows, cols), np.nan, np.float32)
    count = np.zeros((rows // 64, cols), np.int32)
    kernel(a, b, idx, limit, out, count)
    valid = idx[None, :] <= limit[:, None]  # (row block, column)
    want = a.astype(np.float64) @ b.astype(np.float64).T
    want = np.where(np.repeat(valid, 64, axis=0), want, -np.inf)
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)
    np.testing.assert_array_equal(count, valid.astype(np.int32))


@pytest.mark.parametrize("rows,cols,dim,block,threads", [
    (128, 256, 64, 64, 128),
    (64, 256, 64, 64, 256),   # two warpgroups share the 64 columns on wgmma
    (128, 128, 32, 32, 128),
])
def test_masked_scores_match_float64(rng, rows, cols, dim, block, threads):
    _run(tilelang.compile(masked_scores(rows, cols, dim, block, threads)), rng, rows, cols, dim)


def test_square_policy_matches_float64(rng):
    kernel = tilelang.compile(masked_scores(128, 256, 64, 64, 128, policy=T.GemmWarpPolicy.Square))
    _run(kernel, rng, 128, 256, 64)


def _sm90(kernel, **kw):
    return tilelang.compile(kernel, target="cuda -arch=sm_90a", **kw)


@pytest.mark.parametrize("threads", [128, 256])
def test_vector_is_held_as_the_accumulators_columns_on_cuda(threads):
    k = _sm90(masked_scores(64, 256, 64, 64, threads))
    remarks = "\n".join(k.get_remarks())
    acc = [r for r in remarks.splitlines() if r.startswith("fragment acc: registers, layout ")]
    assert acc, remarks
    tile = acc[0][len("fragment acc: registers, layout "):].split(" (")[0]
    assert f"fragment valid: registers, layout mma_cols({tile})" in remarks, remarks
    assert "fragment valid: kept in shared memory" not in remarks
    src = k.get_kernel_source()
    assert "bool valid[" in src
    assert "__shared__" not in src.split("valid[")[0].splitlines()[-1]


def test_one_write_per_column_to_memory_on_cuda():
    # Every thread of a warp's lane group and every warp of the warp column hold copies of a
    # column: the atomic add of each column runs in its first copy's thread only (lanes 0-3 of
    # the first warp row; 4 warps along M here).
    src = _sm90(masked_scores(64, 256, 64, 64, 128)).get_kernel_source()
    lines = src.splitlines()
    at = [n for n, line in enumerate(lines) if "tl::atomic_add" in line]
    assert len(at) == 1, src
    guard = lines[at[0] - 1]
    assert "if (" in guard and "(tx & 31) < 4" in guard and "(tx >> 5) == 0" in guard, guard


def test_key_off_keeps_the_vector_in_shared_memory(rng):
    off = {"tl.mma_column_vectors": False}
    remarks = "\n".join(_sm90(masked_scores(64, 256, 64, 64, 128), pass_configs=off).get_remarks())
    assert "fragment valid: kept in shared memory" in remarks
    _run(tilelang.compile(masked_scores(128, 256, 64, 64, 128), pass_configs=off), rng, 128, 256, 64)


def copied_mask_scores(rows, cols, dim, block, threads, stages=2):
    """The shape of upstream's GQA decoding step: the per-column vector is copied from a mask
    tensor with T.copy (not computed), then read next to the accumulator."""
    blocks = rows // 64

    @T.prim_func
    def scores(A: T.Tensor((rows, dim), "float16"), B: T.Tensor((cols, dim), "float16"),
               keep: T.Tensor((cols,), "uint8"), out: T.Tensor((rows, cols), "float32")):
        with T.Kernel(blocks, threads=threads) as bx:
            A_s = T.alloc_shared((64, dim), "float16")
            B_s = T.alloc_shared((block, dim), "float16")
            acc = T.alloc_fragment((64, block), "float32")
            keep_local = T.alloc_fragment((block,), "uint8")
            T.copy(A[bx * 64, 0], A_s)
            for t in T.Pipelined(cols // block, num_stages=stages):
                T.copy(B[t * block, 0], B_s)
                T.copy(keep[t * block:(t + 1) * block], keep_local)
                T.clear(acc)
                T.gemm(A_s, B_s, acc, transpose_B=True)
                for i, j in T.Parallel(64, block):
                    acc[i, j] = T.if_then_else(keep_local[j] != 0, acc[i, j], -T.infinity("float32"))
                T.copy(acc, out[bx * 64, t * block])

    return scores


def test_vector_copied_from_memory_stays_in_shared_memory(rng):
    # There its copy is a tile copy the pipeline prefetches; in registers each thread would
    # load its scattered columns in the step (upstream's GQA decoding: 0.94x that way).
    remarks = "\n".join(_sm90(copied_mask_scores(64, 256, 64, 64, 128)).get_remarks())
    assert "fragment keep_local: kept in shared memory" in remarks, remarks
    kernel = tilelang.compile(copied_mask_scores(128, 256, 64, 64, 128))
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((256, 64)).astype(np.float16)
    keep = rng.integers(0, 2, 256).astype(np.uint8)
    out = np.full((128, 256), np.nan, np.float32)
    kernel(a, b, keep, out)
    want = np.where(keep[None, :] != 0, a.astype(np.float64) @ b.astype(np.float64).T, -np.inf)
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)


def vector_atomics(m=64, n=64, k=32, blocks=3):
    """A per-column vector (computed) and a per-row vector (a row reduction) next to one
    accumulator, each added atomically into global memory by every block; plus a column
    reduction of the accumulator (its destination stays in shared memory)."""

    @T.prim_func
    def f(A: T.Tensor((m, k), "float16"), B: T.Tensor((n, k), "float16"), idx: T.Tensor((n,), "int32"),
          out: T.Tensor((m, n), "float32"), col_total: T.Tensor((n,), "float32"),
          row_total: T.Tensor((m,), "float32"), col_sum: T.Tensor((n,), "float32")):
        with T.Kernel(blocks, threads=128) as bx:
            A_s = T.alloc_shared((m, k), "float16")
            B_s = T.alloc_shared((n, k), "float16")
            acc = T.alloc_fragment((m, n), "float32")
            w = T.alloc_fragment((n,), "float32")
            r = T.alloc_fragment((m,), "float32")
            s = T.alloc_fragment((n,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            for j in T.Parallel(n):
                w[j] = T.cast(idx[j], "float32") * 0.5
            T.clear(acc)
            T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(m, n):
                acc[i, j] = acc[i, j] * w[j]
            T.reduce_sum(acc, r, dim=1)
            T.reduce_sum(acc, s, dim=0)
            T.copy(acc, out)
            T.atomic_add(col_total[0:n], w)
            T.atomic_add(row_total[0:m], r)
            if bx == 0:
                T.copy(s, col_sum)

    return f


def test_vectors_added_atomically_once_per_block(rng):
    kernel = tilelang.compile(vector_atomics())
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    idx = rng.integers(0, 10, 64).astype(np.int32)
    out = np.full((64, 64), np.nan, np.float32)
    col_total, row_total, col_sum = np.zeros(64, np.float32), np.zeros(64, np.float32), np.zeros(64, np.float32)
    kernel(a, b, idx, out, col_total, row_total, col_sum)
    want = (a.astype(np.float64) @ b.astype(np.float64).T) * (idx * 0.5)
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(col_total, 3 * idx * 0.5)
    np.testing.assert_allclose(row_total, 3 * want.sum(1), rtol=1e-2, atol=5e-2)
    np.testing.assert_allclose(col_sum, want.sum(0), rtol=1e-2, atol=5e-2)


def test_vector_atomics_and_column_reduction_on_cuda():
    k = _sm90(vector_atomics())
    remarks = "\n".join(k.get_remarks())
    assert "fragment w: registers, layout mma_cols(" in remarks, remarks
    assert "fragment r: registers, layout mma_rows(" in remarks, remarks
    assert "fragment s: kept in shared memory" in remarks, remarks  # (a reduction across rows)
    lines = k.get_kernel_source().splitlines()
    col = [n for n, line in enumerate(lines) if "tl::atomic_add" in line and "col_total" in line]
    row = [n for n, line in enumerate(lines) if "tl::atomic_add" in line and "row_total" in line]
    assert len(col) == 1 and len(row) == 1, (col, row)
    # each add into global memory is made by the first copy of its element only
    assert "(tx & 31) < 4" in lines[col[0] - 1] and "(tx >> 5) == 0" in lines[col[0] - 1], lines[col[0] - 1]
    assert "(tx & 3) == 0" in lines[row[0] - 1], lines[row[0] - 1]


def column_vector_total(m=64, n=64, k=32):
    """sum_j w[j] of a per-column vector held as an accumulator's columns (each column has
    copies in several threads: each must count once)."""

    @T.prim_func
    def f(A: T.Tensor((m, k), "float16"), B: T.Tensor((n, k), "float16"), idx: T.Tensor((n,), "int32"),
          out: T.Tensor((m, n), "float32"), total: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((m, k), "float16")
            B_s = T.alloc_shared((n, k), "float16")
            acc = T.alloc_fragment((m, n), "float32")
            w = T.alloc_fragment((n,), "float32")
            t = T.alloc_shared((1,), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            for j in T.Parallel(n):
                w[j] = T.cast(idx[j], "float32")
            T.clear(acc)
            T.gemm(A_s, B_s, acc, transpose_B=True)
            for i, j in T.Parallel(m, n):
                acc[i, j] = acc[i, j] * w[j]
            T.copy(acc, out)
            T.reduce_sum(w, t, dim=0)
            T.copy(t, total)

    return f


def test_sum_of_a_column_vector_counts_each_column_once(rng):
    kernel = tilelang.compile(column_vector_total())
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((64, 32)).astype(np.float16)
    idx = rng.integers(0, 10, 64).astype(np.int32)
    out, total = np.full((64, 64), np.nan, np.float32), np.full(1, np.nan, np.float32)
    kernel(a, b, idx, out, total)
    np.testing.assert_allclose(total, [idx.sum()])
    k = _sm90(column_vector_total())
    assert "fragment w: registers, layout mma_cols(" in "\n".join(k.get_remarks())
    src = k.get_kernel_source()
    # only the first copy of each column enters the sum (lanes 0-3 of the first warp row)
    fold = [line for line in src.splitlines() if "tl::AllReduce" in line]
    assert len(fold) == 1 and "(tx & 31) < 4" in fold[0] and "(tx >> 5) == 0" in fold[0], fold


def masked_scores_with_wide_sum(rows=128, cols=128, dim=32, block=64, wide=384, threads=128):
    """masked_scores with a second, wide accumulator in the same loop (total = count of steps
    times A W^T): 64 x 384 float32 over 128 threads is 192 registers a thread on its own."""
    blocks = rows // 64

    @T.prim_func
    def scores(A: T.Tensor((rows, dim), "float16"), B: T.Tensor((cols, dim), "float16"),
               W: T.Tensor((wide, dim), "float16"), idx: T.Tensor((cols,), "int32"),
               limit: T.Tensor((blocks,), "int32"), out: T.Tensor((rows, cols), "float32"),
               total: T.Tensor((rows, wide), "float32")):
        with T.Kernel(blocks, threads=threads) as bx:
            A_s = T.alloc_shared((64, dim), "float16")
            B_s = T.alloc_shared((block, dim), "float16")
            W_s = T.alloc_shared((wide, dim), "float16")
            acc = T.alloc_fragment((64, block), "float32")
            acc_w = T.alloc_fragment((64, wide), "float32")
            valid = T.alloc_fragment((block,), "bool")
            T.copy(A[bx * 64, 0], A_s)
            T.copy(W, W_s)
            T.clear(acc_w)
            for t in T.Pipelined(cols // block, num_stages=2):
                T.copy(B[t * block, 0], B_s)
                for j in T.Parallel(block):
                    valid[j] = idx[t * block + j] <= limit[bx]
                for i, j in T.Parallel(64, block):
                    acc[i, j] = T.if_then_else(valid[j], 0, -T.infinity("float32"))
                T.gemm(A_s, B_s, acc, transpose_B=True)
                T.gemm(A_s, W_s, acc_w, transpose_B=True)
                T.copy(acc, out[bx * 64, t * block])
            T.copy(acc_w, total[bx * 64, 0])

    return scores


def test_vector_stays_in_shared_memory_where_registers_are_short(rng):
    """The register fragments take more than 192 registers a thread: a column vector would be
    recomputed by every thread holding its columns in a loop that has no registers to spare."""
    func = masked_scores_with_wide_sum()
    remarks = "\n".join(tilelang.lower(func, target="cuda -arch=sm_90a").remarks)
    assert "per-column vectors next to GEMM accumulators stay in shared memory" in remarks, remarks
    assert "fragment valid: kept in shared memory" in remarks
    forced = tilelang.lower(func, target="cuda -arch=sm_90a", pass_configs={"tl.mma_column_vectors": True}).remarks
    assert any(r.startswith("fragment valid: registers, layout mma_cols(") for r in forced), forced
    # the values, wherever the vector lives
    a, b, w = (rng.standard_normal(s).astype(np.float16) for s in [(128, 32), (128, 32), (384, 32)])
    idx = rng.integers(0, 100, 128).astype(np.int32)
    limit = rng.integers(20, 80, 2).astype(np.int32)
    out = np.full((128, 128), np.nan, np.float32)
    total = np.full((128, 384), np.nan, np.float32)
    tilelang.compile(func)(a, b, w, idx, limit, out, total)
    valid = np.repeat(idx[None, :] <= limit[:, None], 64, axis=0)
    want = np.where(valid, a.astype(np.float64) @ b.astype(np.float64).T, -np.inf)
    np.testing.assert_allclose(out, want, rtol=1e-2, atol=1e-2)
    np.testing.assert_allclose(total, 2 * (a.astype(np.float64) @ w.astype(np.float64).T), rtol=1e-2, atol=5e-2)
