"""A convolution as an implicit GEMM (T.im2col into a pipelined T.gemm, the kernel and output
flattened through views of their storage, as upstream's convolution examples write it): the
float64 answer on whichever target the suite runs (on the H200 run, through TMA im2col loads),
and on sm_90a, checked from the generated code without a GPU, the im2col tile loaded by the
producer warpgroup with TMA's im2col mode where it qualifies, element loops (with a remark)
where it does not."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison


def conv(N, H, W, C, F, K, S, D, P, bm=64, bn=64, bk=64, stages=2, threads=128, dtype="float16"):
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), dtype), weight: T.Tensor((K, K, C, F), dtype),
             out: T.Tensor((N, OH, OW, F), "float32")):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OH * OW, bm), threads=threads) as (bx, by):
            data_s = T.alloc_shared((bm, bk), dtype)
            weight_s = T.alloc_shared((bk, bn), dtype)
            acc = T.alloc_fragment((bm, bn), "float32")
            weight_flat = T.Tensor((K * K * C, F), dtype, weight.data)
            out_flat = T.Tensor((N * OH * OW, F), "float32", out.data)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K * K * C, bk), num_stages=stages):
                T.im2col(data, data_s, by, k, K, S, D, P)
                T.copy(weight_flat[k * bk, bx * bn], weight_s)
                T.gemm(data_s, weight_s, acc)
            T.copy(acc, out_flat[by * bm, bx * bn])

    return main, (OH, OW)


def conv_ref(x, w, S, D, P):
    N, H, W, C = x.shape
    K, F = w.shape[0], w.shape[3]
    OH = (H + 2 * P - D * (K - 1) - 1) // S + 1
    OW = (W + 2 * P - D * (K - 1) - 1) // S + 1
    xp = np.zeros((N, H + 2 * P, W + 2 * P, C))
    xp[:, P:P + H, P:P + W] = f64(x)
    out = np.zeros((N, OH, OW, F))
    for kh in range(K):
        for kw in range(K):
            win = xp[:, kh * D:kh * D + S * (OH - 1) + 1:S, kw * D:kw * D + S * (OW - 1) + 1:S]
            out += win @ f64(w[kh, kw])
    return out


# (N, H, W, K, S, D, P): same-size 3x3, strided, dilated without padding, 1x1, and output rows
# that end inside the last tile (N * OH * OW = 2 * 7 * 7 = 98 rows for 64-row tiles)
SHAPES = [(2, 8, 8, 3, 1, 1, 1), (2, 9, 9, 3, 2, 1, 1), (1, 12, 12, 3, 1, 2, 0), (2, 8, 8, 1, 1, 1, 0),
          (2, 7, 7, 3, 1, 1, 1)]


@pytest.mark.parametrize("N, H, W, K, S, D, P", SHAPES)
def test_convolution_matches_float64(N, H, W, K, S, D, P):
    C, F = 64, 64
    func, (OH, OW) = conv(N, H, W, C, F, K, S, D, P)
    rng = np.random.default_rng(K * 100 + S * 10 + D + P)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = (rng.standard_normal((K, K, C, F)) / np.sqrt(K * K * C)).astype(np.float16)
    out = poison((N, OH, OW, F))
    compile_cpu(func)(x, w, out)
    assert_close(out, conv_ref(x, w, S, D, P), dtype="float16")


def _hopper(func):
    from tilelang import _tl
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered), list(remarks)


def test_im2col_tile_is_one_tma_im2col_load_per_stage():
    src, remarks = _hopper(conv(2, 8, 8, 64, 64, 3, 1, 1, 1)[0])
    assert src.code.count("tl::tma_load_im2col_4d(") == 1, src.code
    assert any("1 copies and 1 T.im2col tile(s) with TMA" in r for r in remarks), remarks
    # its tensor map: 64 channels of 64 pixels, stride 1, box corners (-1, -1) and (-1, -1)
    assert [p for p in src.tma_im2col if p] == [[64, 64, 1, -1, -1, -1, -1]]
    # the weight, through its flat view, is a plain 4-D TMA load of its owner
    assert "tl::tma_load_4d(" in src.code


def test_corners_follow_padding_and_filter_extent():
    src, _ = _hopper(conv(1, 12, 12, 64, 64, 3, 2, 2, 0)[0])
    # lower corner -P = 0, upper corner P - (K - 1) * D = -4, traversal stride 2
    assert [p for p in src.tma_im2col if p] == [[64, 64, 2, 0, 0, -4, -4]]


@pytest.mark.parametrize("why, stride, config", [
    ("traversal stride of 8", 9, {}),  # TMA steps at most 8 pixels
    ("switched off", 1, {"tl.disable_tma_im2col": "1"}),
])
def test_im2col_that_does_not_qualify_stays_element_loops(why, stride, config):
    from tilelang import _tl
    func = conv(2, 20, 20, 64, 64, 3, stride, 1, 1)[0]
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a", **config}, False)
    code = _tl.codegen_cuda(lowered).code
    assert "tma_load_im2col" not in code, why
    assert any("warp-specialized" in r and "1 copies with TMA" in r for r in remarks), remarks
    if not config:
        assert any("T.im2col at line" in r and why in r for r in remarks), remarks


def test_strided_convolution_past_tma_stride_matches_float64():
    func, (OH, OW) = conv(1, 20, 20, 64, 64, 3, 9, 1, 1)
    rng = np.random.default_rng(9)
    x = rng.standard_normal((1, 20, 20, 64)).astype(np.float16)
    w = (rng.standard_normal((3, 3, 64, 64)) / 24).astype(np.float16)
    out = poison((1, OH, OW, 64))
    compile_cpu(func)(x, w, out)
    assert_close(out, conv_ref(x, w, 9, 1, 1), dtype="float16")
