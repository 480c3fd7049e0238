"""Three GEMMs sharing shared-memory operands, as attention backward has them: S = K q^T,
dK = cast(S) q (q read again, as B) and dQ = S_s^T K (K read again, by a GEMM too small for
wgmma). A shared tile has one layout: on Hopper a tile a wgmma GEMM reads is laid out in
wgmma's panels, and an mma.sync GEMM reading it through a window on a panel atom (8 whole
rows) reads the same panels (tl::kWgmmaPanels); one reading it off an atom moves the wgmma
readers to mma.sync instead. (q in wgmma panels for one reader and XOR rows for the other
gave wrong dQ, dK and dV in upstream's example_gqa_bwd on the H200.)"""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def three_gemms(m=128, n=32, d=64, threads=256):
    @T.prim_func
    def main(K: T.Tensor((m, d), "float16"), Q: T.Tensor((n, d), "float16"), S: T.Tensor((m, n), "float32"),
             DK: T.Tensor((m, d), "float32"), DQ: T.Tensor((n, d), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            k_s = T.alloc_shared((m, d), "float16")
            q_s = T.alloc_shared((n, d), "float16")
            s_s = T.alloc_shared((m, n), "float16")
            s = T.alloc_fragment((m, n), "float32")
            s_h = T.alloc_fragment((m, n), "float16")
            dk = T.alloc_fragment((m, d), "float32")
            dq = T.alloc_fragment((n, d), "float32")
            T.copy(K, k_s)
            T.copy(Q, q_s)
            T.clear(s)
            T.gemm(k_s, q_s, s, transpose_B=True)
            T.copy(s, S)
            for i, j in T.Parallel(m, n):
                s_h[i, j] = s[i, j] * 0.125
            T.clear(dk)
            T.gemm(s_h, q_s, dk)
            T.copy(dk, DK)
            T.copy(s_h, s_s)
            T.clear(dq)
            T.gemm(s_s, k_s, dq, transpose_A=True)
            T.copy(dq, DQ)

    return main


@pytest.mark.parametrize("d", [64, 192])  # 192: three 128-byte panels per row
def test_three_gemms_sharing_operands_match_numpy(d):
    rng = np.random.default_rng(7)
    k = rng.standard_normal((128, d)).astype(np.float16)
    q = rng.standard_normal((32, d)).astype(np.float16)
    outs = [np.full(shape, np.nan, np.float32) for shape in ((128, 32), (128, d), (32, d))]
    tilelang.compile(three_gemms(d=d))(k, q, *outs)
    s = k.astype(np.float64) @ q.astype(np.float64).T
    s_h = (s * 0.125).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(outs[0], s, rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(outs[1], s_h @ q.astype(np.float64), rtol=1e-3, atol=5e-2)
    np.testing.assert_allclose(outs[2], s_h.T @ k.astype(np.float64), rtol=1e-3, atol=5e-2)


@pytest.mark.parametrize("d", [64, 192])
def test_on_hopper_mma_sync_reads_the_wgmma_panels(d):
    kernel = tilelang.compile(three_gemms(d=d), target="cuda -arch=sm_90a")
    gemms = [r for r in kernel.get_remarks() if r.startswith("T.gemm")]
    assert len(gemms) == 3, gemms
    assert "wgmma m64n32k16" in gemms[0] and f"wgmma m64n{d}k16" in gemms[1], gemms
    assert "mma.sync" in gemms[2], gemms  # dQ: 32 rows on 256 threads
    src = kernel.get_kernel_source()
    # dQ = s_s^T k_s: s_s (no wgmma reads it) in XOR rows, k_s in the panels of its 128 rows
    assert "tl::kXorRows, tl::kWgmmaPanels + 128>((&s_s[0]), (&k_s[0])" in src, src


def misaligned_window(threads=128):
    """a_s is read whole by a wgmma GEMM and from row 4 by an mma.sync GEMM: a window off
    the panels' 8-row atoms, so both take mma.sync (XOR rows)."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32"),
             D: T.Tensor((16, 64), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            a_s = T.alloc_shared((64, 64), "float16")
            b_s = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            d = T.alloc_fragment((16, 64), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.gemm(a_s, b_s, c, clear_accum=True)
            T.copy(c, C)
            T.gemm(a_s[4:20, :], b_s, d, clear_accum=True)
            T.copy(d, D)

    return main


def test_a_window_off_the_panel_atoms_matches_numpy():
    rng = np.random.default_rng(11)
    a, b = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(2))
    c, d = np.full((64, 64), np.nan, np.float32), np.full((16, 64), np.nan, np.float32)
    tilelang.compile(misaligned_window())(a, b, c, d)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(d, ref[4:20], rtol=1e-3, atol=1e-2)


def test_a_window_off_the_panel_atoms_moves_wgmma_to_mma_sync():
    remarks = tilelang.compile(misaligned_window(), target="cuda -arch=sm_90a").get_remarks()
    gemms = [r for r in remarks if r.startswith("T.gemm")]
    assert len(gemms) == 2 and all("mma.sync" in r for r in gemms), gemms
    assert "does not start on a multiple of 8 rows" in gemms[0], gemms


def register_a_with_another_split(m=64, n=64, d=64, threads=256):
    """P = cast(Q K^T) stays in registers, split 2 x 4 over the 8 warps by its own GEMM; P V
    needs warps along M only, which 64 rows cannot give 8 warps, so P goes through a shared
    tile to ldmatrix + mma.sync (it used to take per-element loops)."""
    @T.prim_func
    def main(Q: T.Tensor((m, d), "float16"), K: T.Tensor((n, d), "float16"), V: T.Tensor((n, d), "float16"),
             O: T.Tensor((m, d), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            q_s = T.alloc_shared((m, d), "float16")
            k_s = T.alloc_shared((n, d), "float16")
            v_s = T.alloc_shared((n, d), "float16")
            s = T.alloc_fragment((m, n), "float32")
            p = T.alloc_fragment((m, n), "float16")
            o = T.alloc_fragment((m, d), "float32")
            T.copy(Q, q_s)
            T.copy(K, k_s)
            T.copy(V, v_s)
            T.gemm(q_s, k_s, s, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(m, n):
                p[i, j] = T.cast(s[i, j] * 0.125, "float16")
            T.gemm(p, v_s, o, clear_accum=True)
            T.copy(o, O)

    return main


def test_register_a_in_another_split_matches_numpy():
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal((64, 64)).astype(np.float16) for _ in range(3))
    o = np.full((64, 64), np.nan, np.float32)
    tilelang.compile(register_a_with_another_split())(q, k, v, o)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    p = ((f(q) @ f(k).T).astype(np.float32) * 0.125).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(o, p @ f(v), rtol=2e-3, atol=2e-2)


def test_register_a_in_another_split_takes_the_tensor_cores():
    remarks = tilelang.compile(register_a_with_another_split(), target="cuda -arch=sm_90a").get_remarks()
    assert any("operand p" in r and "staged through shared memory for ldmatrix" in r for r in remarks), remarks
    assert not any("element-wise loops" in r for r in remarks), remarks
    assert any(r.startswith("T.gemm p x v_s") and "mma.sync" in r for r in remarks), remarks
