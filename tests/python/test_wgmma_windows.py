"""wgmma on column windows of a K-major shared tile (tl.enable_wgmma_windows, on by
default): upstream's sparse MLA kernels multiply
Q_shared[:, :512] and Q_shared[:, 512:] by two K tiles into one accumulator. The window's
operand starts on its first 128-byte panel; the tile keeps its panel stride. Checked
against float64 on whichever target the suite runs (the CUDA run takes the window path),
and from the generated code without a GPU."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

WINDOWS = {"tl.enable_wgmma_windows": True}


def split_k_scores(M=64, N=64, D=128, D_tail=64, dtype="bfloat16", threads=128, tail=None):
    tail = D_tail if tail is None else tail  # the columns of the tail GEMM's window

    @T.prim_func
    def main(Q: T.Tensor((M, D + D_tail), dtype), K: T.Tensor((N, D + D_tail), dtype), S: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            q_s = T.alloc_shared((M, D + D_tail), dtype)
            k_s = T.alloc_shared((N, D), dtype)
            kt_s = T.alloc_shared((N, tail), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(Q[:, :D], q_s[:, :D])
            T.copy(Q[:, D:], q_s[:, D:])
            T.copy(K[:, :D], k_s)
            T.copy(K[:, D:D + tail], kt_s)
            T.clear(acc)
            T.gemm(q_s[:, :D], k_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.gemm(q_s[:, D:D + tail], kt_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
            T.copy(acc, S)

    return main


@pytest.mark.parametrize("D, D_tail", [(128, 64), (64, 128)])
def test_windowed_k_gemms_match_float64(D, D_tail):
    import ml_dtypes

    rng = np.random.default_rng(D)
    q = rng.standard_normal((64, D + D_tail)).astype(ml_dtypes.bfloat16)
    k = rng.standard_normal((64, D + D_tail)).astype(ml_dtypes.bfloat16)
    s = np.full((64, 64), np.nan, np.float32)
    tilelang.compile(split_k_scores(D=D, D_tail=D_tail), pass_configs=WINDOWS)(q, k, s)
    want = q.astype(np.float64) @ k.astype(np.float64).T
    np.testing.assert_allclose(s, want, rtol=1e-2, atol=5e-2)


def test_windows_take_wgmma_from_their_first_panel():
    k = tilelang.compile(split_k_scores(), target="cuda -arch=sm_90a", pass_configs=WINDOWS)
    remarks = "\n".join(k.get_remarks())
    assert remarks.count("wgmma m64n64k16 from shared memory") == 2, remarks
    src = k.get_kernel_source()
    # the tail window starts at column 128: panel 2 of 64 rows x 64 columns (8192 elements)
    assert "tl::gemm_ss_wgmma<64, 64, 128, false, true>((&q_s[0]), (&k_s[0])" in src, src
    assert "tl::gemm_ss_wgmma<64, 64, 64, false, true>((&q_s[8192]), (&kt_s[0])" in src, src


def test_a_window_of_64_bytes_stays_on_mma_sync():
    # 32 columns of 16-bit: gemm_ss_wgmma would read them in the 64-byte swizzle, not the
    # tile's 128-byte panels
    k = tilelang.compile(split_k_scores(tail=32), target="cuda -arch=sm_90a", pass_configs=WINDOWS)
    remarks = "\n".join(k.get_remarks())
    assert "not wgmma: an operand is neither a whole 2-D tile" in remarks, remarks


def test_windows_stay_on_mma_sync_when_turned_off():
    k = tilelang.compile(split_k_scores(), target="cuda -arch=sm_90a", pass_configs={"tl.enable_wgmma_windows": False})
    remarks = "\n".join(k.get_remarks())
    assert "not a whole 2-D tile" in remarks and "wgmma m64n64k16" not in remarks, remarks


def scores_and_transposed_update(M=64, N=32, D=128, D_tail=64, dtype="bfloat16", threads=256):
    """Upstream's sparse MLA backward shape: Q_s feeds a wgmma GEMM whole (as K-major A) and,
    through column windows at its panel edges, mma.sync GEMMs as an N-major B
    (dKV += dP^T Q_s[:, :D], dKV_tail += dP^T Q_s[:, D:])."""

    @T.prim_func
    def main(Q: T.Tensor((M, D + D_tail), dtype), K: T.Tensor((N, D + D_tail), dtype),
             S: T.Tensor((M, N), "float32"), U: T.Tensor((N, D), "float32"), Ut: T.Tensor((N, D_tail), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            q_s = T.alloc_shared((M, D + D_tail), dtype)
            k_s = T.alloc_shared((N, D + D_tail), dtype)
            p_s = T.alloc_shared((M, N), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            upd = T.alloc_fragment((N, D), "float32")
            upd_t = T.alloc_fragment((N, D_tail), "float32")
            T.copy(Q, q_s)
            T.copy(K, k_s)
            T.clear(acc)
            T.gemm(q_s, k_s, acc, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
            T.copy(acc, S)
            T.copy(acc, p_s)
            T.gemm(p_s, q_s[:, :D], upd, transpose_A=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
            T.gemm(p_s, q_s[:, D:], upd_t, transpose_A=True, policy=T.GemmWarpPolicy.FullCol, clear_accum=True)
            T.copy(upd, U)
            T.copy(upd_t, Ut)

    return main


def test_column_windows_on_panel_edges_keep_the_tile_in_panels():
    """A window starting on a 128-byte panel's first column (q_s[:, 128:] of 64-column panels)
    reads the panels at a constant offset, so the tile stays in wgmma's layout and its
    whole-tile GEMM on wgmma; the windows' GEMMs read the same panels through ldmatrix."""
    k = tilelang.compile(scores_and_transposed_update(), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.get_remarks())
    assert "T.gemm q_s x k_s -> acc: wgmma" in remarks, remarks
    assert "does not start on a multiple of 8 rows" not in remarks, remarks


def test_column_windows_on_panel_edges_match_float64():
    import ml_dtypes

    rng = np.random.default_rng(7)
    q = rng.standard_normal((64, 192)).astype(ml_dtypes.bfloat16)
    kk = rng.standard_normal((32, 192)).astype(ml_dtypes.bfloat16)
    s, u, ut = (np.full(shape, np.nan, np.float32) for shape in ((64, 32), (32, 128), (32, 64)))
    tilelang.compile(scores_and_transposed_update())(q, kk, s, u, ut)
    want = q.astype(np.float64) @ kk.astype(np.float64).T
    np.testing.assert_allclose(s, want, rtol=1e-2, atol=5e-2)
    p = want.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)  # through the bf16 tile
    np.testing.assert_allclose(u, p.T @ q[:, :128].astype(np.float64), rtol=2e-2, atol=0.5)
    np.testing.assert_allclose(ut, p.T @ q[:, 128:].astype(np.float64), rtol=2e-2, atol=0.5)
