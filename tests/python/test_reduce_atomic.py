"""T.reduce_* (dim=0/1, clear=True/False) and T.atomic_add/max/min on elements and regions."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison, rand

KINDS = ["max", "min", "sum", "abssum", "absmax"]
REF = {
    "max": lambda x, a: x.max(axis=a), "min": lambda x, a: x.min(axis=a), "sum": lambda x, a: x.sum(axis=a),
    "abssum": lambda x, a: np.abs(x).sum(axis=a), "absmax": lambda x, a: np.abs(x).max(axis=a),
}
COMBINE = {"max": np.maximum, "min": np.minimum, "sum": np.add, "abssum": np.add, "absmax": np.maximum}


def make_reduce(M, N, bm, bn, dtype):
    nb, nk = M // bm, N // bn

    @T.prim_func
    def reduce(X: T.Tensor((M, N), dtype), Init: T.Tensor((5, M), dtype),
               RowsP: T.Tensor((5, M), dtype), ColsP: T.Tensor((5, nb, bn), dtype),
               Acc: T.Tensor((5, M), dtype)):
        with T.Kernel(nb, threads=64) as bx:
            tile = T.alloc_fragment((bm, bn), dtype)
            row = T.alloc_fragment((bm,), dtype)
            col = T.alloc_fragment((bn,), dtype)
            accs = [T.alloc_fragment((bm,), dtype) for _ in range(5)]  # a Python list of tiles
            # clear=True on the first column tile, along both dims
            T.copy(X[bx * bm, 0], tile)
            for t, reduce_fn in enumerate([T.reduce_max, T.reduce_min, T.reduce_sum, T.reduce_abssum,
                                           T.reduce_absmax]):
                reduce_fn(tile, row, dim=1)
                T.copy(row, RowsP[t, bx * bm:(bx + 1) * bm])
                reduce_fn(tile, col, dim=0)
                T.copy(col, ColsP[t, bx, :])
                T.copy(Init[t, bx * bm], accs[t])
            # clear=False folds every column tile into the initial values
            for k in T.serial(nk):
                T.copy(X[bx * bm, k * bn], tile)
                T.reduce_max(tile, accs[0], dim=1, clear=False)
                T.reduce_min(tile, accs[1], dim=1, clear=False)
                T.reduce_sum(tile, accs[2], dim=1, clear=False)
                T.reduce_abssum(tile, accs[3], dim=1, clear=False)
                T.reduce_absmax(tile, accs[4], dim=-1, clear=False)
            for t, acc in enumerate(accs):  # a Python iterable: unrolled at compile time
                T.copy(acc, Acc[t, bx * bm])
    return reduce


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_reductions(rng, dtype):
    M, N, bm, bn = 8, 24, 4, 8
    kernel = compile_cpu(make_reduce(M, N, bm, bn, dtype))
    x = rand(rng, (M, N), dtype)
    init = rand(rng, (5, M), dtype)
    init[4] = np.abs(init[4])  # absmax folds into a non-negative running value
    rows, cols, acc = poison((5, M), dtype), poison((5, M // bm, bn), dtype), poison((5, M), dtype)
    kernel(x, init, rows, cols, acc)
    xf = f64(x)
    tol = 1e-5 if dtype == "float32" else 4e-3
    for t, kind in enumerate(KINDS):
        np.testing.assert_allclose(f64(rows[t]), REF[kind](xf[:, :bn], 1), rtol=tol, atol=tol, err_msg=kind)
        ref_cols = np.stack([REF[kind](xf[b * bm:(b + 1) * bm, :bn], 0) for b in range(M // bm)])
        np.testing.assert_allclose(f64(cols[t]), ref_cols, rtol=tol, atol=tol, err_msg=kind)
        ref_acc = COMBINE[kind](f64(init[t]), REF[kind](xf, 1))
        np.testing.assert_allclose(f64(acc[t]), ref_acc, rtol=tol, atol=tol * 8, err_msg=kind + " clear=False")


def test_atomic_split_k_region(rng):
    """Split-K: blocks along grid z accumulate partial products into a global output that
    already holds data (region atomic_add from a fragment, ragged edges clipped)."""
    M, N, K, bm, bn, bk, splits = 19, 21, 64, 8, 8, 8, 4
    per_split = K // splits

    @T.prim_func
    def split_k(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), splits, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bm, bk), "float32")
            B_s = T.alloc_shared((bk, bn), "float32")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for k in T.Pipelined(per_split // bk, num_stages=2):
                T.copy(A[by * bm, bz * per_split + k * bk], A_s)
                T.copy(B[bz * per_split + k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.atomic_add(C[by * bm:(by + 1) * bm, bx * bn:(bx + 1) * bn], C_f)

    kernel = compile_cpu(split_k)
    a, b = rand(rng, (M, K)), rand(rng, (K, N))
    c0 = rand(rng, (M, N))
    for _ in range(3):  # repeated runs: races would show up as varying results
        c = c0.copy()
        kernel(a, b, c)
        assert_close(c, f64(c0) + f64(a) @ f64(b), rtol=1e-5)


def test_atomic_elements_and_region_max_min(rng):
    """Element atomics from many blocks: a histogram (int32 add), a global max/min (float32),
    and region-wise atomic_max/atomic_min of tiles into a shared result."""
    L, bl, nbins, R = 200, 16, 7, 6

    @T.prim_func
    def atomics(Idx: T.Tensor((L,), "int32"), V: T.Tensor((L,), "float32"),
                Hist: T.Tensor((nbins,), "int32"), G: T.Tensor((2,), "float32"),
                TileMax: T.Tensor((R, bl), "float32"), TileMin: T.Tensor((R, bl), "float32")):
        with T.Kernel(T.ceildiv(L, bl), threads=32) as bx:
            t = T.alloc_fragment((R, bl), "float32")
            for i in T.serial(bl):
                g = bx * bl + i
                if g < L:
                    T.atomic_add(Hist[Idx[g]], 1)
                    T.atomic_max(G[0], V[g])
                    T.atomic_min(G[1], V[g])
            for r, c in T.Parallel(R, bl):
                t[r, c] = T.if_then_else(bx * bl + c < L, V[T.min(bx * bl + c, L - 1)] * (r + 1), 0.0)
            T.atomic_max(TileMax[0:R, 0:bl], t)
            T.atomic_min(TileMin[0:R, 0:bl], t)

    kernel = compile_cpu(atomics)
    idx = rng.integers(0, nbins, L).astype(np.int32)
    v = rand(rng, (L,))
    hist0 = rng.integers(1, 5, nbins).astype(np.int32)
    hist, g = hist0.copy(), np.array([-1e30, 1e30], np.float32)
    tmax, tmin = np.full((R, bl), -1e30, np.float32), np.full((R, bl), 1e30, np.float32)
    kernel(idx, v, hist, g, tmax, tmin)
    np.testing.assert_array_equal(hist, hist0 + np.bincount(idx, minlength=nbins))
    np.testing.assert_array_equal(g, [v.max(), v.min()])
    nb = -(-L // bl)
    vp = np.zeros(nb * bl, np.float64)
    vp[:L] = v
    tiles = vp.reshape(nb, 1, bl) * np.arange(1, R + 1).reshape(1, R, 1)  # (nb, R, bl)
    np.testing.assert_allclose(tmax, tiles.max(axis=0), rtol=1e-6)
    np.testing.assert_allclose(tmin, tiles.min(axis=0), rtol=1e-6)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["sum", "abssum"])
def test_long_16bit_sums_round_once(rng, dtype, kind):
    # 512 values per row: folded in the 16-bit type one after another, every step rounds to
    # 8 (bfloat16) or 11 bits and the row drifts far from the true sum; accumulated in
    # float32 and rounded once, the result is the true sum rounded to the type.
    M, N = 16, 512
    reduce_fn = T.reduce_sum if kind == "sum" else T.reduce_abssum

    @T.prim_func
    def rows(X: T.Tensor((M, N), dtype), Y: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=128):
            tile = T.alloc_shared((M, N), dtype)
            out = T.alloc_shared((M,), dtype)
            T.copy(X, tile)
            reduce_fn(tile, out, dim=1)
            T.copy(out, Y)

    kernel = compile_cpu(rows)
    x = (rng.random((M, N)) + 0.5).astype(np.float32)  # all positive: no cancellation to hide drift
    x[:, ::3] *= -1 if kind == "abssum" else 1
    x = x.astype(rand(rng, (1,), dtype).dtype)
    y = poison((M,), dtype)
    kernel(x, y)
    ref = np.abs(f64(x)).sum(axis=1) if kind == "abssum" else f64(x).sum(axis=1)
    bits = 8 if dtype == "bfloat16" else 11  # significand bits: one rounding is at most half a step
    np.testing.assert_allclose(f64(y), ref, rtol=2.0 ** -bits, atol=0)
