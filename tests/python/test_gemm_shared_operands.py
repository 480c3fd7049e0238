"""Three GEMMs sharing shared-memory operands, as attention backward has them: S = K q^T,
dK = cast(S) q (q read again, as B) and dQ = S_s^T K (K read again, by a GEMM too small for
wgmma). A shared tile has one layout, so on Hopper every GEMM reading a tile that an
mma.sync GEMM reads uses mma.sync as well, transitively: K x q moves to mma.sync because of
dQ, and then cast(S) x q must move too (q laid out in wgmma panels for one reader and in XOR
rows for the other gave wrong dQ, dK and dV in upstream's example_gqa_bwd on the H200)."""
import numpy as np

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


def test_three_gemms_sharing_operands_match_numpy():
    rng = np.random.default_rng(7)
    k = rng.standard_normal((128, 64)).astype(np.float16)
    q = rng.standard_normal((32, 64)).astype(np.float16)
    outs = [np.full(shape, np.nan, np.float32) for shape in ((128, 32), (128, 64), (32, 64))]
    tilelang.compile(three_gemms())(k, q, *outs)
    s = k.astype(np.float64) @ q.astype(np.float64).T
    s_h = (s * 0.125).astype(np.float16).astype(np.float64)
    np.testing.assert_allclose(outs[0], s, rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(outs[1], s_h @ q.astype(np.float64), rtol=1e-3, atol=5e-2)
    np.testing.assert_allclose(outs[2], s_h.T @ k.astype(np.float64), rtol=1e-3, atol=5e-2)


def test_on_hopper_every_reader_of_an_mma_sync_operand_uses_mma_sync():
    kernel = tilelang.compile(three_gemms(), target="cuda -arch=sm_90a")
    gemms = [r for r in kernel.get_remarks() if r.startswith("T.gemm")]
    assert len(gemms) == 3, gemms
    for r in gemms:
        assert "mma.sync" in r, gemms  # q and k are each read by an mma.sync GEMM


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
