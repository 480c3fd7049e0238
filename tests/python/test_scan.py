"""T.cumsum: inclusive prefix sums along either dimension, forward and reversed, in place
or into another tile; checked against numpy in float64."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, poison, rand


def cumsum_program(M, N, bm, dim, reverse, in_place, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            x = T.alloc_shared((bm, N), dtype)
            y = T.alloc_fragment((bm, N), dtype)
            T.copy(X[bx * bm, 0], x)
            if in_place:
                T.copy(x, y)
                T.cumsum(y, dim=dim, reverse=reverse)
            else:
                T.cumsum(x, y, dim=dim, reverse=reverse)
            T.copy(y, Y[bx * bm, 0])
    return main


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("in_place", [False, True])
def test_cumsum(rng, dim, reverse, in_place):
    M, N, bm = 37, 24, 16  # ragged: the last block is partly outside X
    kernel = tilelang.compile(cumsum_program(M, N, bm, dim, reverse, in_place), target="cpu")
    x = rand(rng, (M, N))
    y = poison((M, N))
    kernel(x, y)
    ref = np.zeros((M, N))
    xp = np.zeros((-(-M // bm) * bm, N))
    xp[:M] = x
    for b in range(0, xp.shape[0], bm):  # the scan runs within each block's tile
        tile = xp[b:b + bm]
        if reverse:
            out = np.flip(np.cumsum(np.flip(tile, dim), axis=dim), dim)
        else:
            out = np.cumsum(tile, axis=dim)
        ref[b:min(b + bm, M)] = out[:min(bm, M - b)]
    assert_close(y, ref)


def test_cumsum_shape_mismatch_is_an_error():
    with pytest.raises(tilelang.TileLangCompileError, match="T.cumsum: shape mismatch") as info:
        @T.prim_func
        def bad(X: T.Tensor((16, 8), "float32")):
            with T.Kernel(1, threads=32):
                a = T.alloc_fragment((16, 8), "float32")
                b = T.alloc_fragment((8, 16), "float32")
                T.copy(X, a)
                T.cumsum(a, b, dim=1)  # ERR-HERE
    assert "T.cumsum(a, b, dim=1)" in str(info.value) and "^" in str(info.value)
