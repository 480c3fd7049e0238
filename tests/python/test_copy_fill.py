"""T.copy between global, shared, fragment and local memory; T.fill / T.clear; edge clipping."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import NP, assert_close, compile_cpu, f64, poison, rand
from tilelang.errors import TileLangCompileError

ACC = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64", "int8": "int32"}


def make_copy_4d(B, H, S, D, bm, dtype):
    acc = ACC[dtype]
    nt = T.ceildiv(S, bm)

    @T.prim_func
    def copy4d(Q: T.Tensor((B, H, S, D), dtype),
               O: T.Tensor((B, H, S, D), dtype),
               Tiles: T.Tensor((B, H, nt, bm, D), dtype)):
        with T.Kernel(T.ceildiv(S, bm), H, B, threads=(32, 4)) as (bx, by, bz):
            Q_shared = T.alloc_shared((bm, D), dtype)
            frag = T.alloc_fragment((bm, D), acc)
            O_shared = T.alloc_shared((bm, D), dtype)
            # slice form on a 4-D tensor into a 2-D tile; rows past S read as zero
            T.copy(Q[bz, by, bx * bm:(bx + 1) * bm, :], Q_shared)
            T.copy(Q_shared, Tiles[bz, by, bx, :, :])
            T.copy(Q_shared, frag)  # shared -> fragment, widening cast
            for i, j in T.Parallel(bm, D):
                frag[i, j] = frag[i, j] * 2 + 1
            T.copy(frag, O_shared)  # fragment -> shared, narrowing cast
            # start-corner form on the destination; rows past S are not written
            T.copy(O_shared, O[bz, by, bx * bm, 0])
    return copy4d


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64", "int8"])
def test_copy_4d_tiles_and_clipping(rng, dtype):
    B, H, S, D, bm = 2, 3, 13, 8, 4  # S is not a multiple of bm
    kernel = compile_cpu(make_copy_4d(B, H, S, D, bm, dtype))
    q = rand(rng, (B, H, S, D), dtype, -20, 20)
    o = poison((B, H, S, D), dtype)
    nt = -(-S // bm)
    tiles = poison((B, H, nt, bm, D), dtype)
    kernel(q, o, tiles)
    # every element of O written exactly once with the right value; nothing spilled into
    # the next head (the flat memory right after row S-1 is the next head's row 0)
    ref = f64(q) * 2 + 1
    assert_close(o, ref.astype(NP[dtype]), dtype)
    # the tiles: in-range rows are Q, out-of-range rows were read as zero
    padded = np.zeros((B, H, nt * bm, D))
    padded[:, :, :S] = f64(q)
    assert_close(tiles, padded.reshape(B, H, nt, bm, D), dtype)
    assert (f64(tiles)[:, :, -1, S % bm:, :] == 0).all()


def test_copy_regions_fill_clear_1d_grid(rng):
    """1-D grid, int threads; T.fill on a whole tile and on a region; T.clear; copies of
    sub-regions in both forms; fragment -> fragment with a cast; a local tile."""
    M, N, bm = 10, 12, 4

    @T.prim_func
    def regions(A: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float16"),
                F: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=64) as bx:
            s = T.alloc_shared((bm, N), "float32")
            f32 = T.alloc_fragment((bm, N), "float32")
            f16 = T.alloc_fragment((bm, N), "float16")
            loc = T.alloc_local((bm, 4), "float32")
            T.copy(A[bx * bm, 0], s)               # start-corner form, full width
            T.copy(s, f32)
            T.copy(f32, f16)                       # fragment -> fragment, cast
            T.copy(f16, C[bx * bm:(bx + 1) * bm, 0:N])
            T.fill(f32, 1.5)
            T.fill(f32[0:2, 4:8], -2.0)           # a region only
            T.clear(loc)
            T.copy(loc, f32[1:1 + bm, 8:12])      # rows beyond the tile are clipped
            T.copy(f32, F[bx * bm, 0])

    kernel = compile_cpu(regions)
    a = rand(rng, (M, N))
    c, f = poison((M, N), "float16"), poison((M, N))
    kernel(a, c, f)
    assert_close(c, a.astype(np.float16), "float16")
    tile = np.full((bm, N), 1.5)
    tile[0:2, 4:8] = -2.0
    tile[1:bm, 8:12] = 0.0
    ref = np.concatenate([tile] * 3)[:M]
    np.testing.assert_array_equal(f, ref)


def test_copy_out_idx_multiple_outputs(rng):
    """out_idx with two outputs (negative and positive indices): a list comes back."""
    M, N = 6, 5

    @T.prim_func
    def split(A: T.Tensor((M, N), "float32"), X: T.Tensor((M, N), "float32"), Y: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=1) as _:
            s = T.alloc_shared((M, N), "float32")
            T.copy(A, s)
            T.copy(s, X)
            for i, j in T.Parallel(N, M):
                Y[i, j] = s[j, i]

    kernel = compile_cpu(split, out_idx=[1, -1])
    a = rand(rng, (M, N))
    x, y = kernel(a)
    np.testing.assert_array_equal(x, a)
    np.testing.assert_array_equal(y, a.T)
    assert tilelang.compile(split, out_idx=-1, target="cpu")(a, poison((M, N))).shape == (N, M)


def test_copy_middle_index_and_global_to_global(rng):
    """A 3-D tensor with its middle dimension indexed gives a 2-D tile; global -> global
    copies (keyword form); two T.Kernel launches in one function."""
    B, S, D = 3, 5, 4
    dt = "bfloat16"

    @T.prim_func
    def k(X: T.Tensor((B, S, D), dt), Z: T.Tensor((S, B, D), dt), G: T.Tensor((2, D), dt)):
        with T.Kernel(S) as s:
            t = T.alloc_shared((B, D), dt)
            T.copy(X[:, s, :], t)
            T.copy(t, Z[s, :, :])
        with T.Kernel(1):
            T.copy(src=X[1, 2, 0:D], dst=G[0, :])
            T.copy(X[2, 4, :], G[1, 0:D])

    kernel = compile_cpu(k)
    x = rand(rng, (B, S, D), dt)
    z, g = poison((S, B, D), dt), poison((2, D), dt)
    kernel(x, z, g)
    np.testing.assert_array_equal(f64(z), f64(x).transpose(1, 0, 2))
    np.testing.assert_array_equal(f64(g), f64(np.stack([x[1, 2], x[2, 4]])))


def test_parallel_global_access_is_guarded(rng):
    N, b = 10, 4

    @T.prim_func
    def k(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(T.ceildiv(N, b)) as bx:
            for i in T.Parallel(b):
                B[bx * b + i] = A[bx * b + i] + A[bx * b + i + 1]

    kernel = compile_cpu(k)
    # A and B are views into larger guard arrays: stray accesses only touch memory we own
    ga = np.full(3 * N, 1000.0, np.float32)
    a = ga[N:2 * N]
    a[:] = rand(rng, (N,))
    gb = np.full(3 * N, np.nan, np.float32)
    bv = gb[N:2 * N]
    kernel(a, bv)
    assert np.isnan(gb[:N]).all() and np.isnan(gb[2 * N:]).all(), "wrote past the end of B"
    np.testing.assert_allclose(bv, a + np.append(a[1:], 0), rtol=1e-6)


def test_copy_corner_form_with_a_unit_trailing_dimension(rng):
    """A (8, 1) tile copied to Y[row, 0] lands as 8 rows of one column (dimension by
    dimension when the ranks match), as the row maxima of a keepdim-style reduction."""
    import tilelang.language as T
    from conftest import compile_cpu

    M, N = 64, 96

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, 1), "float32")):
        with T.Kernel(M // 8, threads=64) as bx:
            x = T.alloc_fragment((8, N), "float32")
            r = T.alloc_fragment((8, 1), "float32")
            T.copy(X[bx * 8, 0], x)
            T.reduce_max(x, r, dim=1)
            T.copy(r, Y[bx * 8, 0])

    x = rand(rng, (M, N))
    y = compile_cpu(main, out_idx=[-1])(x)
    np.testing.assert_array_equal(y[:, 0], x.max(axis=1))


def test_copy_between_regions_of_different_extents_runs_over_the_smaller(rng):
    """Upstream's rule: T.copy(A[:, :2], B[:, :3]) runs over the source (global to global:
    the source), the destination being at least as large; the rest of B stays, and a
    remark says so. A destination smaller than the source is an error."""

    @T.prim_func
    def wider(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
        with T.Kernel(1, threads=32):
            T.copy(A[:, :2], B[:, :3])

    k = compile_cpu(wider)
    a, b = rng.standard_normal((16, 8)).astype(np.float32), poison((16, 8))
    k(a, b)
    assert np.array_equal(b[:, :2], a[:, :2]) and np.isnan(b[:, 2:]).all()
    assert any("A is 16x2 and B is 16x3; copied over A's 16x2" in r for r in k.get_remarks()), k.get_remarks()

    with pytest.raises(TileLangCompileError, match="shape mismatch: source A tile is 16x3 but destination B tile is 16x2"):
        @T.prim_func
        def narrower(A: T.Tensor((16, 8), "float32"), B: T.Tensor((16, 8), "float32")):
            with T.Kernel(1, threads=32):
                T.copy(A[:, :3], B[:, :2])


def test_dynamic_slice_against_a_static_tile_runs_over_the_tile(rng):
    # Upstream's issue 1237: `T.copy(g[0:length], shared)` with `length` dynamic. The copy
    # runs over the shared tile (upstream's rule); reads past g's end give 0, and the other
    # direction skips writes past the tensor's end (said in a remark).
    length = T.symbolic("length", dtype=T.int32)

    @T.prim_func
    def roundtrip(G: T.Tensor[(length,), T.int32], Out: T.Tensor[(64,), T.int32], Back: T.Tensor[(length,), T.int32]):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((64,), T.int32)
            T.fill(s, -1)
            T.copy(G[0:length], s)
            T.copy(s, Out)
            for i in T.Parallel(64):
                s[i] = s[i] * 2
            T.copy(s, Back[0:length])

    kernel = compile_cpu(roundtrip)
    assert any("reads past its end give 0" in r for r in kernel.get_remarks()), kernel.get_remarks()
    for n in (10, 64, 100):
        g = rand(rng, (n,), "int32", low=1, high=1000)
        out, back = poison((64,), "int32"), poison((n,), "int32")
        kernel(g, out, back)
        m = min(n, 64)
        np.testing.assert_array_equal(out[:m], g[:m])
        np.testing.assert_array_equal(out[m:], 0)
        np.testing.assert_array_equal(back[:m], 2 * g[:m])
        np.testing.assert_array_equal(back[m:], poison((n - m,), "int32"))  # past the tile: untouched
