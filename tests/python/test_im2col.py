"""T.im2col (upstream's convolution examples): a (block_M, block_K) tile of the im2col matrix of an
NHWC image, padding read as 0, against a numpy im2col of the same convolution."""
import numpy as np
import pytest
import tilelang
import tilelang.language as T


def _im2col_ref(x, kernel, stride, dilation, pad):
    n, h, w, c = x.shape
    oh = (h + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1
    ow = (w + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1
    out = np.zeros((n * oh * ow, kernel * kernel * c), x.dtype)
    for b in range(n):
        for p in range(oh):
            for q in range(ow):
                for kh in range(kernel):
                    for kw in range(kernel):
                        hh, ww = p * stride + kh * dilation - pad, q * stride + kw * dilation - pad
                        if 0 <= hh < h and 0 <= ww < w:
                            out[(b * oh + p) * ow + q, (kh * kernel + kw) * c:(kh * kernel + kw + 1) * c] = x[b, hh, ww]
    return out


@pytest.mark.parametrize("kernel,stride,dilation,pad", [(3, 1, 1, 1), (3, 2, 1, 0), (2, 1, 2, 1)])
def test_im2col_tiles_match_numpy(kernel, stride, dilation, pad):
    n, h, w, c, bm, bk = 2, 6, 7, 4, 16, 8
    oh = (h + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1
    ow = (w + 2 * pad - (kernel - 1) * dilation - 1) // stride + 1
    rows, cols = n * oh * ow, kernel * kernel * c
    gm, gk = -(-rows // bm), -(-cols // bk)

    @T.prim_func
    def f(X: T.Tensor((n, h, w, c), "float32"), O: T.Tensor((gm * bm, gk * bk), "float32")):
        with T.Kernel(gk, gm, threads=64) as (kx, by):
            tile = T.alloc_shared((bm, bk), "float32")
            T.im2col(X, tile, by, kx, kernel, stride, dilation, pad)
            T.copy(tile, O[by * bm, kx * bk])

    x = np.random.default_rng(kernel * 10 + stride).standard_normal((n, h, w, c)).astype(np.float32)
    o = np.full((gm * bm, gk * bk), np.nan, np.float32)
    tilelang.compile(f, target="cpu")(x, o)
    ref = _im2col_ref(x, kernel, stride, dilation, pad)
    np.testing.assert_array_equal(o[:rows, :cols], ref)
