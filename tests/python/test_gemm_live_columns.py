"""Tiles wider than the tensors they meet, for every block (a 256-column tile of a 128-column
matrix, as upstream's convolution example takes on Hopper). shrink-tiles-to-tensors
(tl.shrink_tiles) cuts the tiles of a GEMM's N to the part that can lie inside the tensors;
where it cannot (an epilogue reads the staged tile element by element), the wgmmas cover only
the columns of B that can be non-zero (tl.gemm_live_columns): past the tensor's edge B is
loaded as zeros, so those products are zero. Checked without a GPU from the generated code
and remarks (what is cut, to what, and what is not); the float64 checks run the same kernels
on the CPU target (which cuts the same tiles) and, with TILELANG_TEST_CUDA=1, on the GPU."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from test_warp_specialize import lower


def gemm(M, N, K, bm, bn, bk, threads=256, trans_b=False, stages=3, epilogue=None, b_offset=0):
    """C = A B with a tile of bm x bn; epilogue "relu" reads C's fragment element by element
    (a fused epilogue), "stage" goes through a shared tile, "stage_scale" through a shared
    tile read element by element; b_offset shifts B's column window."""
    b_shape = (N, K) if trans_b else (K, N)
    b_tile = (bn, bk) if trans_b else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor(b_shape, "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared(b_tile, "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            C_s = T.alloc_shared((bm, bn), "float16")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn + b_offset, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn + b_offset], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=trans_b)
            if epilogue == "relu":
                for i, j in T.Parallel(bm, bn):
                    C_l[i, j] = T.max(C_l[i, j], 0)
            if epilogue == "stage":
                T.copy(C_l, C_s)
                T.copy(C_s, C[by * bm, bx * bn])
            elif epilogue == "stage_scale":
                T.copy(C_l, C_s)
                for i, j in T.Parallel(bm, bn):
                    C_s[i, j] = C_s[i, j] * 2
                T.copy(C_s, C[by * bm, bx * bn])
            else:
                T.copy(C_l, C[by * bm, bx * bn])

    return main


def conv(N, C, H, W, F, KS, bm=128, bn=256, bk=64, stages=3, threads=256):
    """A 3x3 convolution (stride 1, padding 1), NHWC, as an implicit GEMM through T.im2col,
    with a tile of bn output channels over F of them."""
    OH, OW = H, W

    @T.prim_func
    def main(data: T.Tensor((N, H, W, C), "float16"), kernel: T.Tensor((KS, KS, C, F), "float16"),
             out: T.Tensor((N, OH, OW, F), "float16")):
        with T.Kernel(T.ceildiv(F, bn), T.ceildiv(N * OH * OW, bm), threads=threads) as (bx, by):
            data_s = T.alloc_shared((bm, bk), "float16")
            kernel_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            out_s = T.alloc_shared((bm, bn), "float16")
            kernel_flat = T.Tensor((KS * KS * C, F), "float16", kernel.data)
            out_flat = T.Tensor((N * OH * OW, F), "float16", out.data)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(KS * KS * C, bk), num_stages=stages):
                T.im2col(data, data_s, by, k, KS, 1, 1, 1)
                T.copy(kernel_flat[k * bk, bx * bn], kernel_s)
                T.gemm(data_s, kernel_s, acc)
            T.copy(acc, out_s)
            T.copy(out_s, out_flat[by * bm, bx * bn])

    return main


def wgmma_calls(code):
    return [line.strip() for line in code.splitlines() if "tl::gemm_ss_wgmma" in line]


def clip_remarks(remarks):
    return [r for r in remarks if "tl.gemm_live_columns" in r]


def shrink_remarks(remarks):
    return [r for r in remarks if "tl.shrink_tiles" in r]


NO_SHRINK = {"tl.shrink_tiles": False}


def test_tiles_twice_the_matrix_are_cut_to_it():
    src, remarks, _ = lower(gemm(1024, 128, 1152, 128, 256, 64, epilogue="stage"))
    assert shrink_remarks(remarks) == [
        "tiles B_s, C_l, C_s cut from 256 to 128 along a GEMM's N: positions from 128 on lie outside B, C for "
        "every block (loaded as zeros, stored nowhere; tl.shrink_tiles)"]
    # the kernel a 128-column tile gives: 128 accumulators a thread, B's tile 64 x 128, TMA
    # boxes of 64 columns (two for B, two for C), four stages in flight
    assert [c.split("(")[0] for c in wgmma_calls(src.code)] == ["tl::gemm_ss_wgmma_issue<128, 128, 64, false, false, false>"]
    assert "float C_l[64];" in src.code
    assert src.code.count("tl::tma_store_2d(") == 2 and not clip_remarks(remarks)
    assert any("with one stage more than num_stages: 4" in r for r in remarks)


def test_convolution_tiles_are_cut_to_the_output_channels():
    src, remarks, _ = lower(conv(2, 64, 16, 16, 128, 3))
    assert shrink_remarks(remarks) == [
        "tiles acc, kernel_s, out_s cut from 256 to 128 along a GEMM's N: positions from 128 on lie outside "
        "kernel, out for every block (loaded as zeros, stored nowhere; tl.shrink_tiles)"]
    assert [c.split("(")[0] for c in wgmma_calls(src.code)] == ["tl::gemm_ss_wgmma_issue<128, 128, 64, false, false, false>"]


def test_a_decode_steps_rows_cut_the_tiles_to_one_warpgroups_rows():
    # 16 rows in 128-row tiles: A's, the accumulator's and the staging tile's rows cut to 64
    # (one wgmma's rows), the two warpgroups then splitting N
    src, remarks, _ = lower(gemm(16, 1024, 1024, 128, 256, 64, epilogue="stage"))
    assert shrink_remarks(remarks) == [
        "tiles A_s, C_l, C_s cut from 128 to 64 along a GEMM's M: positions from 16 on lie outside A, C for "
        "every block (loaded as zeros, stored nowhere; tl.shrink_tiles)"]
    assert [c.split("(")[0] for c in wgmma_calls(src.code)] == [
        "tl::gemm_ss_wgmma_issue<64, 256, 64, false, false, false, 2>"]
    # 100 rows: block 0 stores all but 28 of its 128 rows; nothing to cut
    _, remarks, _ = lower(gemm(100, 1024, 1024, 128, 256, 64, epilogue="stage"))
    assert not shrink_remarks(remarks)


def test_an_epilogue_reading_the_staged_tile_keeps_the_tiles_and_clips_the_gemm():
    src, remarks, _ = lower(gemm(1024, 128, 1152, 128, 256, 64, epilogue="stage_scale"))
    assert not shrink_remarks(remarks)
    assert [c.split("(")[0] for c in wgmma_calls(src.code)] == ["tl::gemm_ss_wgmma_issue<128, 128, 64, false, false, false>"]
    assert "from 128 on lie outside B" in clip_remarks(remarks)[0]


def test_a_tile_twice_the_matrix_multiplies_only_its_columns():
    src, remarks, _ = lower(gemm(1024, 128, 1152, 128, 256, 64, epilogue="stage"), **NO_SHRINK)
    # N-major B (64 x 256): the wgmmas of two warpgroups cover the first two 64-column panels
    assert [c.split("(")[0] for c in wgmma_calls(src.code)] == ["tl::gemm_ss_wgmma_issue<128, 128, 64, false, false, false>"]
    assert clip_remarks(remarks) == [
        "T.gemm A_s x B_s -> C_l: wgmma m64n128k16 from shared memory, 2 warpgroup(s); over its first 128 of 256 "
        "columns: B's columns from 128 on lie outside B for every block and step, so their products are zero "
        "(tl.gemm_live_columns)"]
    # the accumulator keeps all 256 columns (the epilogue stores them; TMA drops those outside C)
    assert "float C_l[128];" in src.code


def test_k_major_b_is_clipped_to_sixteen_rows():
    # B as N x K (K = 64: one 128-byte panel per row): 100 live rows -> wgmma n112
    src, remarks, _ = lower(gemm(512, 100, 256, 128, 256, 64, trans_b=True), **NO_SHRINK)
    assert [c.split("(")[0] for c in wgmma_calls(src.code)][0].startswith("tl::gemm_ss_wgmma_issue<128, 112, 64, false, true")
    assert "over its first 112 of 256 columns: B's columns from 100 on" in clip_remarks(remarks)[0]


def test_convolution_weights_narrower_than_the_tile():
    # upstream's convolution example on Hopper: 256-column tiles over 128 output channels
    src, remarks, _ = lower(conv(2, 64, 16, 16, 128, 3), **NO_SHRINK)
    assert [c.split("(")[0] for c in wgmma_calls(src.code)] == ["tl::gemm_ss_wgmma_issue<128, 128, 64, false, false, false>"]
    assert "B's columns from 128 on lie outside kernel for" in clip_remarks(remarks)[0]


@pytest.mark.parametrize("why, func, configs", [
    # every column is inside B for some block (block 1 has 44 live columns, block 0 all 256)
    ("two column blocks", gemm(512, 300, 256, 128, 256, 64), {}),
    # a fused epilogue reads C's elements: they would be the same, but the rule keeps C plain
    ("C read by a fused epilogue", gemm(512, 128, 256, 128, 256, 64, epilogue="relu"), {}),
    # the window may start left of column 0 (bx * 256 - 64): not proven
    ("a start that may be negative", gemm(512, 128, 256, 128, 256, 64, b_offset=-64), {}),
    # K-major B whose k steps cross 128-byte panels: the panel stride counts all N rows
    ("K-major B over two panels", gemm(512, 100, 256, 128, 256, 128, trans_b=True), NO_SHRINK),
    ("switched off", gemm(1024, 128, 1152, 128, 256, 64), {"tl.gemm_live_columns": False, **NO_SHRINK}),
])
def test_not_clipped(why, func, configs):
    src, remarks, _ = lower(func, **configs)
    assert not clip_remarks(remarks) and not shrink_remarks(remarks), (why, remarks)
    assert all("256, " in c.split("(")[0] for c in wgmma_calls(src.code)), (why, wgmma_calls(src.code))


@pytest.mark.parametrize("configs", [{}, NO_SHRINK], ids=["shrink", "clip"])
@pytest.mark.parametrize("M, N, K, bm, bn, bk, trans_b, epilogue", [
    (384, 128, 320, 128, 256, 64, False, "stage"),   # warp-specialized, TMA store
    (256, 100, 192, 128, 256, 64, False, None),      # unaligned N: cp.async, guarded stores
    (256, 72, 192, 128, 256, 64, True, None),        # K-major B, n80 (clipped) or a 128-row tile
    (256, 128, 192, 64, 256, 64, False, "stage"),    # one warpgroup
    (256, 128, 192, 128, 256, 64, False, "stage_scale"),  # clipped either way
    (16, 512, 192, 128, 256, 64, False, "stage"),    # rows cut to 64 (shrink only)
    (48, 256, 192, 128, 128, 64, True, None),        # rows cut, K-major B
])
def test_clipped_gemm_matches_float64(M, N, K, bm, bn, bk, trans_b, epilogue, configs):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    threads = 256 if bm == 128 else 128
    k = tilelang.compile(gemm(M, N, K, bm, bn, bk, threads=threads, trans_b=trans_b, epilogue=epilogue),
                         pass_configs=configs)
    k(a, b, c)
    want = a.astype(np.float64) @ (b.T if trans_b else b).astype(np.float64)
    if epilogue == "stage_scale":
        want *= 2
    np.testing.assert_allclose(c.astype(np.float64), want, rtol=1e-2, atol=0.25)


@pytest.mark.parametrize("configs", [{}, NO_SHRINK], ids=["shrink", "clip"])
def test_clipped_convolution_matches_float64(configs):
    N, C, H, W, F = 2, 64, 8, 8, 128
    rng = np.random.default_rng(12)
    x = rng.standard_normal((N, H, W, C)).astype(np.float16)
    w = (rng.standard_normal((3, 3, C, F)) / 8).astype(np.float16)
    out = np.full((N, H, W, F), np.nan, np.float16)
    tilelang.compile(conv(N, C, H, W, F, 3), pass_configs=configs)(x, w, out)
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    want = np.zeros((N, H, W, F))
    for i in range(3):
        for j in range(3):
            want += np.einsum("nhwc,cf->nhwf", xp[:, i:i + H, j:j + W, :], w[i, j].astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=1e-2, atol=0.1)


def test_the_cpu_target_cuts_the_same_tiles_and_matches_float64():
    # the same pass in the CPU pipeline: the float64 checks above run the cut program there
    M, N, K = 16, 256, 128
    rng = np.random.default_rng(13)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    k = tilelang.compile(gemm(M, N, K, 128, 256, 64, epilogue="stage"), target="cpu")
    assert shrink_remarks(k.get_remarks()) == [
        "tiles A_s, C_l, C_s cut from 128 to 64 along a GEMM's M: positions from 16 on lie outside A, C for "
        "every block (loaded as zeros, stored nowhere; tl.shrink_tiles)"]
    k(a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=0.25)
