"""T.transpose and T.cummax (upstream tile ops written here as loop nests over the tiles)."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu
from tilelang.errors import TileLangCompileError


@pytest.mark.parametrize("M,N", [(16, 24), (32, 32), (8, 64)])
def test_transpose_shared_and_fragment(rng, M, N):
    @T.prim_func
    def f(A: T.Tensor((M, N), "float32"), B: T.Tensor((N, M), "float32")):
        with T.Kernel(1, threads=128) as bx:
            S = T.alloc_shared((M, N), "float32")
            St = T.alloc_shared((N, M), "float32")
            T.copy(A, S)
            T.transpose(S, St)
            T.copy(St, B)

    a = rng.standard_normal((M, N)).astype(np.float32)
    b = np.full((N, M), np.nan, np.float32)
    compile_cpu(f)(a, b)
    np.testing.assert_array_equal(b, a.T)
    assert "__global__" in tilelang.lower(f, target="cuda -arch=sm_80").kernel_source


def test_transpose_batched(rng):
    @T.prim_func
    def f(A: T.Tensor((2, 4, 8), "float16"), B: T.Tensor((2, 8, 4), "float16")):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_fragment((2, 4, 8), "float16")
            D = T.alloc_fragment((2, 8, 4), "float16")
            T.copy(A, S)
            T.transpose(S, D)
            T.copy(D, B)

    a = rng.standard_normal((2, 4, 8)).astype(np.float16)
    b = np.zeros((2, 8, 4), np.float16)
    compile_cpu(f)(a, b)
    np.testing.assert_array_equal(b, a.transpose(0, 2, 1))


def test_transpose_shape_mismatch_is_an_error():
    with pytest.raises(TileLangCompileError, match="last two dimensions swapped"):
        @T.prim_func
        def f(A: T.Tensor((8, 8), "float32")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((8, 4), "float32")
                D = T.alloc_shared((8, 4), "float32")
                T.transpose(S, D)


@pytest.mark.parametrize("dim,reverse", [(0, False), (1, False), (0, True), (1, True), (-1, False)])
def test_cummax(rng, dim, reverse):
    M, N = 16, 24

    @T.prim_func
    def f(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            F = T.alloc_fragment((M, N), "float32")
            T.copy(A, F)
            T.cummax(F, dim=dim, reverse=reverse)  # in place
            T.copy(F, B)
            S = T.alloc_shared((M, N), "float32")
            G = T.alloc_shared((M, N), "float32")
            T.copy(A, S)
            T.cummax(src=S, dst=G, dim=dim, reverse=reverse)
            T.copy(G, C)

    a = rng.standard_normal((M, N)).astype(np.float32)
    b, c = np.zeros_like(a), np.zeros_like(a)
    compile_cpu(f)(a, b, c)
    ax = dim % 2
    ref = np.flip(np.maximum.accumulate(np.flip(a, ax), ax), ax) if reverse else np.maximum.accumulate(a, ax)
    np.testing.assert_array_equal(b, ref)
    np.testing.assert_array_equal(c, ref)


def test_cummax_1d_int(rng):
    @T.prim_func
    def f(A: T.Tensor((32,), "int32"), B: T.Tensor((32,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((32,), "int32")
            T.copy(A, S)
            T.cummax(S)
            T.copy(S, B)

    a = rng.integers(-100, 100, 32).astype(np.int32)
    b = np.zeros_like(a)
    compile_cpu(f)(a, b)
    np.testing.assert_array_equal(b, np.maximum.accumulate(a))
    with pytest.raises(TileLangCompileError, match="dim must be an int in \\[-1, 1\\), got 1"):
        @T.prim_func
        def g(A: T.Tensor((32,), "int32")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((32,), "int32")
                T.cummax(S, dim=1)


def test_transpose_regions_and_out_of_range_destination():
    src_shape, dst_shape = (2, 3, 4), (2, 4, 3)

    @T.prim_func
    def f(src: T.Tensor(src_shape, "float32"), dst: T.Tensor(dst_shape, "float32")):
        with T.Kernel(1):
            T.fill(dst, -1.0)
            T.transpose(src[0:2, 0:3, 0:4], dst[0:2, 0:4, 1:4])

    a = np.arange(24, dtype=np.float32).reshape(src_shape)
    b = np.zeros(dst_shape, np.float32)
    compile_cpu(f)(a, b)
    ref = np.full(dst_shape, -1.0)
    for bb in range(2):
        for i in range(3):
            for j in range(4):
                if 1 + i < 3:
                    ref[bb, j, 1 + i] = a[bb, i, j]
    np.testing.assert_array_equal(b, ref)


def test_cummax_on_a_row_region(rng):
    @T.prim_func
    def f(A: T.Tensor((4, 16), "float32"), B: T.Tensor((4, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((4, 16), "float32")
            T.copy(A, S)
            T.cummax(S[2, 0:16], dim=1)
            T.copy(S, B)

    a = rng.standard_normal((4, 16)).astype(np.float32)
    b = np.zeros_like(a)
    compile_cpu(f)(a, b)
    ref = a.copy()
    ref[2] = np.maximum.accumulate(a[2])
    np.testing.assert_array_equal(b, ref)


@pytest.mark.parametrize("kind", ["bitand", "bitor", "bitxor"])
@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("clear", [True, False])
def test_bitwise_reductions(rng, kind, dim, clear):
    M, N = 8, 12
    ax = dim % 2
    out_shape = (N,) if ax == 0 else (M,)

    @T.prim_func
    def f(A: T.Tensor((M, N), "int32"), Init: T.Tensor(out_shape, "int32"), B: T.Tensor(out_shape, "int32")):
        with T.Kernel(1, threads=32):
            src = T.alloc_fragment((M, N), "int32")
            dst = T.alloc_fragment(out_shape, "int32")
            T.copy(A, src)
            T.copy(Init, dst)
            getattr(T, f"reduce_{kind}")(src, dst, dim=dim, clear=clear)
            T.copy(dst, B)

    a = rng.integers(0, 1 << 20, (M, N)).astype(np.int32)
    a[:, 0] |= 0x7  # and-reductions keep some bits
    init = rng.integers(0, 1 << 20, out_shape).astype(np.int32)
    b = np.zeros(out_shape, np.int32)
    compile_cpu(f)(a, init, b)
    uf = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}[kind]
    ref = uf.reduce(a, axis=ax)
    if not clear:
        ref = uf(ref, init)
    np.testing.assert_array_equal(b, ref)


def test_bitwise_reduction_needs_integers():
    with pytest.raises(TileLangCompileError, match="T.reduce_bitor takes an integer tile"):
        @T.prim_func
        def f(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_fragment((8,), "float32")
                d = T.alloc_fragment((1,), "float32")
                T.reduce_bitor(s, d, dim=0)
