"""T.reshape and T.view: another shape over the same storage, for global tensors, shared
tiles and fragments, read and written element-wise and by tile ops; and the clear errors
for what views cannot do here."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import NP, assert_close, compile_cpu, f64, poison
from tilelang.errors import TileLangCompileError


def test_reshape_of_global_shared_and_fragment_tiles():
    N, M = 64, 16

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N // M, M), "float32"), R: T.Tensor((N // M,), "float32"),
             C: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=64):
            T.copy(T.reshape(A, [N // M, M]), B)  # a global tensor
            s = T.alloc_shared((N,), "float32")
            for i in T.Parallel(N):
                s[i] = A[i] * 2
            f = T.alloc_fragment((N // M, M), "float32")
            T.copy(T.reshape(s, [N // M, M]), f)  # a shared tile, 1-D to 2-D
            r = T.alloc_fragment((N // M,), "float32")
            T.reduce_max(f, r, dim=1)
            T.copy(r, R)
            flat = T.view(f, [N])  # a fragment, 2-D to 1-D, read element-wise
            for i in T.Parallel(N):
                C[i] = flat[i] + 1

    a = np.random.default_rng(0).standard_normal(N).astype(np.float32)
    b, r, c = poison((N // M, M)), poison((N // M,)), poison((N,))
    compile_cpu(main)(a, b, r, c)
    assert_close(b, f64(a).reshape(N // M, M))
    assert_close(r, (2 * f64(a)).reshape(N // M, M).max(axis=1))
    assert_close(c, 2 * f64(a) + 1)


def test_writes_through_a_view_and_a_view_of_a_view():
    @T.prim_func
    def main(A: T.Tensor((4, 6), "float32"), B: T.Tensor((4, 6), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 6), "float32")
            v = T.reshape(s, [3, 8])
            w = T.reshape(v, [24])
            for i in T.Parallel(24):
                w[i] = T.cast(i, "float32")
            T.fill(v[1, 0:8], -1.0)  # a tile op on a slice of a view
            for i, j in T.Parallel(4, 6):
                B[i, j] = s[i, j] + A[i, j]

    a = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    b = poison((4, 6))
    compile_cpu(main)(a, b)
    want = np.arange(24, dtype=np.float64)
    want[8:16] = -1
    assert_close(b, want.reshape(4, 6) + f64(a))


def test_view_errors_name_the_problem():
    with pytest.raises(TileLangCompileError, match="has 30 elements, A has 24"):
        @T.prim_func
        def count(A: T.Tensor((4, 6), "float32")):
            with T.Kernel(1, threads=32):
                T.reshape(A, [5, 6])

    with pytest.raises(TileLangCompileError, match="preserve the logical bit count of 'A': 768 bits != 384 bits"):
        @T.prim_func
        def bits(A: T.Tensor((4, 6), "float16")):
            with T.Kernel(1, threads=32):
                T.view(A, [4, 6], dtype="int32")

    with pytest.raises(TileLangCompileError, match="whole bytes, got float4_e2m1fn"):
        @T.prim_func
        def nibbles(A: T.Tensor((4, 8), "uint8")):
            with T.Kernel(1, threads=32):
                T.view(A, [4, 16], dtype="float4_e2m1fn")

    @T.prim_func
    def gemm(A: T.Tensor((256,), "float16"), B: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((256,), "float16")
            b = T.alloc_shared((16, 16), "float16")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(T.reshape(a, [16, 16]), b, c)
            T.copy(c, C)

    with pytest.raises(TileLangCompileError, match="T.gemm of .*T.reshape / T.view, is not supported"):
        compile_cpu(gemm)


def _flat_weight_gemm(KH=3, C=32, F=64, bk=16, bn=64, rows=64, stages=2):
    """out = X @ W.reshape(KH * C, F): the weight read through a flat view of its storage
    (upstream's convolution example flattens its 4-D kernel this way), one k-tile a step."""
    K = KH * C

    @T.prim_func
    def main(X: T.Tensor((rows, K), "float16"), W: T.Tensor((KH, C, F), "float16"),
             Out: T.Tensor((rows, F), "float32")):
        with T.Kernel(1, threads=128):
            w_flat = T.Tensor((K, F), "float16", W.data)
            x_s = T.alloc_shared((rows, bk), "float16")
            w_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((rows, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=stages):
                T.copy(X[0, k * bk], x_s)
                T.copy(w_flat[k * bk, 0], w_s)
                T.gemm(x_s, w_s, acc)
            T.copy(acc, Out)

    return main


@pytest.mark.parametrize("bk", [16, 32])
def test_copy_from_a_flat_view_of_a_global_tensor(bk):
    rng = np.random.default_rng(bk)
    x = rng.standard_normal((64, 96)).astype(np.float16)
    w = rng.standard_normal((3, 32, 64)).astype(np.float16)
    out = poison((64, 64))
    compile_cpu(_flat_weight_gemm(bk=bk))(x, w, out)
    assert_close(out, f64(x) @ f64(w).reshape(96, 64), dtype="float16")


def test_copy_from_a_flat_view_stays_a_copy_of_its_owner():
    """Each k-tile of the view lies in one row of the owner's channel dimension, so the copy
    is a rectangle of the owner: on sm_90a a TMA load of the 3-D weight, not an element loop
    through divisions of the flat index."""
    pytest.importorskip("tilelang._tl")
    from tilelang import _tl
    kernel = _flat_weight_gemm(KH=3, C=64, F=64, bk=64)
    lowered, remarks, _ = _tl.lower_cuda(kernel.node, {"tl.target_arch": "sm_90a"}, False)
    code = _tl.codegen_cuda(lowered).code
    assert "tl::tma_load_3d(" in code, code
    assert any("warp-specialized" in r and "2 copies with TMA" in r for r in remarks), remarks


@pytest.mark.parametrize("rows", [12, 9])
def test_a_view_range_across_owner_rows(rows):
    """A k-tile of the (KH * C)-row view straddles the owner's C-channel rows: 12 rows from
    a multiple of 12 are two runs of whole owner rows (two copies of the owner), 9 rows are
    no such run (an element loop through the view). Both exact."""
    rng = np.random.default_rng(7)
    KH, C, F = 6, 6, 8
    tiles = KH * C // rows

    @T.prim_func
    def main(W: T.Tensor((KH, C, F), "float32"), Out: T.Tensor((tiles, rows, F), "float32")):
        with T.Kernel(tiles, threads=32) as bx:
            flat = T.Tensor((KH * C, F), "float32", W.data)
            s = T.alloc_shared((rows, F), "float32")
            T.copy(flat[bx * rows, 0], s)
            T.copy(s, Out[bx, 0, 0])

    w = rng.standard_normal((KH, C, F)).astype(np.float32)
    out = poison((tiles, rows, F))
    compile_cpu(main)(w, out)
    assert_close(out, f64(w).reshape(tiles, rows, F))


def _flat_epilogue(N, H, W, F, bm, bn):
    """out_flat[by * bm, bx * bn] <- a shared tile, out_flat a (N * H * W, F) view of the
    4-D output (upstream's convolution epilogue)."""
    @T.prim_func
    def main(X: T.Tensor((N * H * W, F), "float16"), Out: T.Tensor((N, H, W, F), "float16")):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * H * W, bm), threads=128) as (bx, by):
            out_flat = T.Tensor((N * H * W, F), "float16", Out.data)
            s = T.alloc_shared((bm, bn), "float16")
            T.copy(X[by * bm, bx * bn], s)
            for i, j in T.Parallel(bm, bn):
                s[i, j] = s[i, j] * 2
            T.copy(s, out_flat[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("bm,bn", [(64, 64), (32, 128), (16, 64)])
def test_a_tile_stored_into_a_flat_view_over_several_owner_rows(bm, bn):
    """Tiles of bm rows over W = 16-pixel rows of the owner (bn past F = 64 with 128: the
    columns past the edge are not stored)."""
    N, H, W, F = 2, 4, 16, 64
    x = np.random.default_rng(3).standard_normal((N * H * W, F)).astype(np.float16)
    out = poison((N, H, W, F), "float16")
    compile_cpu(_flat_epilogue(N, H, W, F, bm, bn))(x, out)
    assert_close(out, (f64(x) * 2).reshape(N, H, W, F))


def test_tile_into_a_flat_view_is_tma_stored_one_owner_row_at_a_time():
    """On sm_90a each run of W rows is a TMA box of the 4-D owner; the runs of one copy share
    one barrier and one wait."""
    from tilelang import _tl
    lowered, remarks, _ = _tl.lower_cuda(_flat_epilogue(2, 4, 16, 64, 64, 64).node, {"tl.target_arch": "sm_90a"},
                                         False)
    code = _tl.codegen_cuda(lowered).code
    stores = [line.strip() for line in code.splitlines() if "tl::tma_store_4d(" in line]
    assert len(stores) == 4, code
    for k, line in enumerate(stores):  # rows 16k.. of the tile: 16 rows of 128 bytes each
        assert line.startswith(f"tl::tma_store_4d(tl_tma_0, (&s[{k * 1024}]),"), line
    assert code.count("tl::tma_store_wait<0, true>();") == 1, code
    assert sum("s -> Out is a TMA store" in r for r in remarks) == 1, remarks


def test_element_accesses_through_a_merging_view_split_per_dimension():
    """A view merging owner dims re-indexes each of its indices over its own group, so the
    flat output of a convolution-style epilogue addresses the owner without 64-bit division
    chains (guarded writes past the last dim included)."""
    N, H, W, F = 2, 4, 8, 16

    @T.prim_func
    def main(X: T.Tensor((N * H * W, F), "float32"), Out: T.Tensor((N, H, W, F), "float32")):
        with T.Kernel(2, threads=64) as bx:
            flat = T.Tensor((N * H * W, F), "float32", Out.data)
            for i, j in T.Parallel(32, 32):
                if j < 24:
                    flat[bx * 32 + i, j] = X[bx * 32 + i, j % F] + 1.0

    x = np.random.default_rng(5).standard_normal((N * H * W, F)).astype(np.float32)
    out = poison((N, H, W, F))
    compile_cpu(main)(x, out)
    assert_close(out, (f64(x) + 1).reshape(N, H, W, F))
    from tilelang import _tl
    lowered, _, _ = _tl.lower_cuda(main.node, {"tl.target_arch": "sm_90a"}, False)
    code = _tl.codegen_cuda(lowered).code
    assert "int64_t" not in code, code


# ---- views with another dtype: the owner's bits, row-major and little-endian

def _global_dtype_view(n, m, dtype, new_dtype, new_m):
    @T.prim_func
    def main(A: T.Tensor((n * m,), dtype), B: T.Tensor((n, new_m), new_dtype)):
        with T.Kernel(1, threads=128):
            T.copy(T.view(A, (n, new_m), dtype=new_dtype), B)

    return main


@pytest.mark.parametrize("dtype,new_dtype,ratio", [("float32", "float16", 2), ("float16", "float32", 0.5),
                                                   ("int32", "int8", 4), ("uint8", "float32", 0.25),
                                                   ("float64", "int32", 2), ("bfloat16", "int16", 1)])
def test_global_view_as_another_dtype_has_the_same_bits(rng, dtype, new_dtype, ratio):
    n, m = 8, 32
    new_m = int(m * ratio)
    a = rng.integers(0, 256, n * m * np.dtype(NP[dtype]).itemsize, dtype=np.uint8).view(NP[dtype])
    b = poison((n, new_m), new_dtype)
    compile_cpu(_global_dtype_view(n, m, dtype, new_dtype, new_m))(a, b)
    want = a.view(NP[new_dtype]).reshape(n, new_m)
    assert b.tobytes() == want.tobytes()  # bit for bit (NaN patterns included)


def _shared_dtype_view(shape, dtype, new_shape, new_dtype, write_view=False):
    """Written through the tile, read through its view (or, widening, the other way)."""

    @T.prim_func
    def main(A: T.Tensor(shape if not write_view else new_shape, dtype if not write_view else new_dtype),
             B: T.Tensor(new_shape if not write_view else shape, new_dtype if not write_view else dtype)):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared(shape, dtype)
            v = T.view(s, new_shape, dtype=new_dtype)
            if write_view:
                T.copy(A, v)
                T.copy(s, B)
            else:
                T.copy(A, s)
                T.copy(v, B)

    return main


@pytest.mark.parametrize("shape,dtype,new_shape,new_dtype", [
    ((64, 64), "float32", (64, 128), "bfloat16"),  # narrowing (upstream's shared view tests)
    ((64, 128), "bfloat16", (64, 64), "float32"),  # widening
    ((2, 64, 64), "float16", (2, 64, 128), "int8")])
def test_shared_tile_read_through_a_view_of_another_dtype(rng, shape, dtype, new_shape, new_dtype):
    nbytes = int(np.prod(shape)) * np.dtype(NP[dtype]).itemsize
    a = rng.integers(0, 256, nbytes, dtype=np.uint8).view(NP[dtype]).reshape(shape)
    b = poison(new_shape, new_dtype)
    compile_cpu(_shared_dtype_view(shape, dtype, new_shape, new_dtype))(a, b)
    assert b.tobytes() == a.tobytes()


def test_writes_through_a_wider_view_and_refused_through_a_narrower_one(rng):
    # widening view (bfloat16 tile seen as float32): each write fills two whole elements
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = poison((64, 64), "bfloat16")
    compile_cpu(_shared_dtype_view((64, 64), "bfloat16", (64, 32), "float32", write_view=True))(a, b)
    assert b.tobytes() == a.tobytes()
    # narrowing view (float32 tile seen as bfloat16): a write would change half an element
    with pytest.raises(TileLangCompileError, match="would change part of an element of s"):
        compile_cpu(_shared_dtype_view((64, 32), "float32", (64, 64), "bfloat16", write_view=True))
