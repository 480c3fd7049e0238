"""wgmma when the block's warpgroups do not match its 64-row blocks one to one.

More warpgroups than blocks: the extra warpgroups split N (a 64-row tile on 256 threads, as
upstream's DeepSeek MLA decode writes it with GemmWarpPolicy.FullCol). The accumulator and
its row vectors take the m-fastest warp order (warpgroup g owns columns part g), and row
reductions meet across the warpgroups in shared memory.

Fewer warpgroups than blocks: each warpgroup issues one m64 wgmma per block it owns (a
128-row tile on 128 threads, upstream's default GEMM), the accumulator's rows interleaved.

On the CPU target the same programs check the arithmetic against float64 numpy; the GPU
suite runs them on CUDA."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T

SM90 = "cuda -arch=sm_90a"


def decode_attention(heads=64, dim=256, pe=64, seq=256, block_N=64, threads=256, stages=2):
    """One block of MLA-style decode attention: scores from two GEMMs (Q KV^T + Q_pe K_pe^T)
    into one accumulator, online softmax over KV blocks, P (through shared memory) times KV."""
    scale = (dim + pe) ** -0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((heads, dim), "float16"), Q_pe: T.Tensor((heads, pe), "float16"),
             KV: T.Tensor((seq, dim), "float16"), K_pe: T.Tensor((seq, pe), "float16"),
             O: T.Tensor((heads, dim), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            q_s = T.alloc_shared((heads, dim), "float16")
            q_pe_s = T.alloc_shared((heads, pe), "float16")
            kv_s = T.alloc_shared((block_N, dim), "float16")
            k_pe_s = T.alloc_shared((block_N, pe), "float16")
            p_s = T.alloc_shared((heads, block_N), "float16")
            acc_s = T.alloc_fragment((heads, block_N), "float32")
            acc_o = T.alloc_fragment((heads, dim), "float32")
            m = T.alloc_fragment((heads,), "float32")
            m_prev = T.alloc_fragment((heads,), "float32")
            r = T.alloc_fragment((heads,), "float32")
            s_sum = T.alloc_fragment((heads,), "float32")
            l = T.alloc_fragment((heads,), "float32")
            T.copy(Q, q_s)
            T.copy(Q_pe, q_pe_s)
            T.fill(acc_o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(seq // block_N, num_stages=stages):
                T.copy(KV[k * block_N, 0], kv_s)
                T.copy(K_pe[k * block_N, 0], k_pe_s)
                T.clear(acc_s)
                T.gemm(q_s, kv_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.gemm(q_pe_s, k_pe_s, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(heads):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(heads, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, s_sum, dim=1)
                T.copy(acc_s, p_s)
                for i in T.Parallel(heads):
                    l[i] = l[i] * r[i] + s_sum[i]
                for i, j in T.Parallel(heads, dim):
                    acc_o[i, j] *= r[i]
                T.gemm(p_s, kv_s, acc_o, policy=T.GemmWarpPolicy.FullCol)
            for i, j in T.Parallel(heads, dim):
                acc_o[i, j] /= l[i]
            T.copy(acc_o, O)

    return main


def gemm_64_rows(N=256, K=128, threads=256, policy=T.GemmWarpPolicy.Square, trans_b=False):
    @T.prim_func
    def main(A: T.Tensor((64, K), "float16"), B: T.Tensor((N, K) if trans_b else (K, N), "float16"),
             C: T.Tensor((64, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            a_s = T.alloc_shared((64, 64), "float16")
            b_s = T.alloc_shared((N, 64) if trans_b else (64, N), "float16")
            acc = T.alloc_fragment((64, N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // 64, num_stages=2):
                T.copy(A[0, k * 64], a_s)
                if trans_b:
                    T.copy(B[0, k * 64], b_s)
                else:
                    T.copy(B[k * 64, 0], b_s)
                T.gemm(a_s, b_s, acc, transpose_B=trans_b, policy=policy)
            for i, j in T.Parallel(64, N):  # a row-dependent epilogue in the accumulator's layout
                acc[i, j] = acc[i, j] * (i + 1)
            T.copy(acc, C)

    return main


def test_decode_attention_matches_float64():
    rng = np.random.default_rng(7)
    heads, dim, pe, seq = 64, 256, 64, 256
    q, q_pe = rng.standard_normal((heads, dim)), rng.standard_normal((heads, pe))
    kv, k_pe = rng.standard_normal((seq, dim)), rng.standard_normal((seq, pe))
    q, q_pe, kv, k_pe = (x.astype(np.float16) for x in (q, q_pe, kv, k_pe))
    o = np.full((heads, dim), np.nan, np.float32)
    tilelang.compile(decode_attention(heads, dim, pe, seq))(q, q_pe, kv, k_pe, o)
    s = (q.astype(np.float64) @ kv.astype(np.float64).T + q_pe.astype(np.float64) @ k_pe.astype(np.float64).T)
    s *= (dim + pe) ** -0.5
    p = np.exp(s - s.max(axis=1, keepdims=True))
    # P goes through a float16 tile before the second GEMM, as in the kernel
    ref = (p / p.sum(axis=1, keepdims=True)) @ kv.astype(np.float64)
    np.testing.assert_allclose(o, ref, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("policy", [T.GemmWarpPolicy.Square, T.GemmWarpPolicy.FullRow], ids=["square", "full_row"])
@pytest.mark.parametrize("trans_b", [False, True])
def test_gemm_with_64_rows_on_256_threads(trans_b, policy):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((256, 128) if trans_b else (128, 256)).astype(np.float16)
    c = np.full((64, 256), np.nan, np.float32)
    tilelang.compile(gemm_64_rows(trans_b=trans_b, policy=policy))(a, b, c)
    bb = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    ref = (a.astype(np.float64) @ bb) * np.arange(1, 65)[:, None]
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-2)


def test_sm90_splits_n_over_warpgroups():
    k = tilelang.compile(decode_attention(), target=SM90)
    remarks = "\n".join(k.get_remarks())
    assert remarks.count("2 warpgroup(s) (2 along N") == 3, remarks
    assert "mma_acc(64x256, warps 4x2 m-fastest)" in remarks and "warp-specialized" in remarks, remarks
    # (an NVRTC without ptxas' report, as a pip wheel's can be, says "? bytes spilled")
    assert "0 bytes spilled" in remarks or "? bytes spilled" in remarks, remarks
    src = k.get_kernel_source()
    # P is written in the loop (a register fragment copied to p_s): that wgmma keeps its proxy fence
    assert "tl::gemm_ss_wgmma<64, 256, 64, false, false, true, 2>" in src, src
    # 4 warpgroups over 64 rows: 64 columns each
    k4 = tilelang.compile(gemm_64_rows(threads=512), target=SM90)
    assert any("4 along N, 64 columns each" in r for r in k4.get_remarks()), k4.get_remarks()


def test_full_row_splits_n_once_the_rows_run_out():
    # FullRow puts as many warps along M as the 64 rows take (4, one warpgroup) and the rest
    # along N, as upstream's policy does: wgmma with the second warpgroup on the other half
    k = tilelang.compile(gemm_64_rows(policy=T.GemmWarpPolicy.FullRow), target=SM90)
    assert any("2 along N, 128 columns each" in r for r in k.get_remarks()), k.get_remarks()
    # ... and mma.sync (sm_80) splits the same way: warps 4 x 2
    k = tilelang.compile(gemm_64_rows(policy=T.GemmWarpPolicy.FullRow), target="cuda -arch=sm_80")
    assert any("warps 4x2" in r for r in k.get_remarks()), k.get_remarks()


def test_sm90_n_split_refused_where_it_does_not_fit():
    # N-major B split into 96-column parts is not whole 64-column panels
    k = tilelang.compile(gemm_64_rows(N=192), target=SM90)
    assert any("not whole 64-column panels of B" in r for r in k.get_remarks()), k.get_remarks()
    # ... but K-major B is split at any multiple of 8 columns
    k = tilelang.compile(gemm_64_rows(N=192, trans_b=True), target=SM90)
    assert any("2 along N, 96 columns each" in r for r in k.get_remarks()), k.get_remarks()


SPLIT_IN_PANEL = {"tl.wgmma_split_in_panel": 1}


def test_sm90_n_split_inside_one_panel():
    # 64 columns of N-major B over two warpgroups: 32 each, the second starting 64 bytes into
    # the panel's rows (upstream's sparse MLA backward, dP x KV_tail), with the key on
    gemm = gemm_64_rows(N=64, policy=T.GemmWarpPolicy.FullRow)
    k = tilelang.compile(gemm, target=SM90, pass_configs=SPLIT_IN_PANEL)
    assert any("wgmma m64n32k16" in r and "2 along N, 32 columns each" in r for r in k.get_remarks()), k.get_remarks()
    # (warp-specialized: the issue form, waited for later)
    assert re.search(r"tl::gemm_ss_wgmma(_issue)?<64, 64, 64, false, false, \w+, 2>", k.get_kernel_source())
    # the default; off: mma.sync, and the remark names the key
    k = tilelang.compile(gemm, target=SM90)
    assert any("2 along N, 32 columns each" in r for r in k.get_remarks()), k.get_remarks()
    k = tilelang.compile(gemm, target=SM90, pass_configs={"tl.wgmma_split_in_panel": 0})
    assert any("tl.wgmma_split_in_panel is off" in r for r in k.get_remarks()), k.get_remarks()


@pytest.mark.parametrize("threads", [256, 512])
def test_n_split_inside_one_panel_matches_float64(threads):
    # (CPU target: the arithmetic; the GPU suite: the descriptors' start inside the panel)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 128)).astype(np.float16)
    b = rng.standard_normal((128, 64)).astype(np.float16)
    c = np.full((64, 64), np.nan, np.float32)
    gemm = gemm_64_rows(N=64, threads=threads, policy=T.GemmWarpPolicy.FullRow)
    tilelang.compile(gemm, pass_configs=SPLIT_IN_PANEL)(a, b, c)
    ref = (a.astype(np.float64) @ b.astype(np.float64)) * np.arange(1, 65)[:, None]
    np.testing.assert_allclose(c, ref, rtol=1e-3, atol=1e-2)


def attention_128_rows(seq=256, dim=64, block_N=64, threads=128, stages=2):
    """Flash-attention forward on one 128-row tile: Q K^T from shared memory, P from
    registers times V; 128 threads own the two 64-row blocks of both GEMMs."""
    scale = dim ** -0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((128, dim), "float16"), K: T.Tensor((seq, dim), "float16"),
             V: T.Tensor((seq, dim), "float16"), O: T.Tensor((128, dim), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            q_s = T.alloc_shared((128, dim), "float16")
            k_s = T.alloc_shared((block_N, dim), "float16")
            v_s = T.alloc_shared((block_N, dim), "float16")
            s = T.alloc_fragment((128, block_N), "float32")
            p = T.alloc_fragment((128, block_N), "float16")
            o = T.alloc_fragment((128, dim), "float32")
            m = T.alloc_fragment((128,), "float32")
            m_prev = T.alloc_fragment((128,), "float32")
            l = T.alloc_fragment((128,), "float32")
            s_sum = T.alloc_fragment((128,), "float32")
            T.copy(Q, q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(seq // block_N, num_stages=stages):
                T.copy(K[k * block_N, 0], k_s)
                T.copy(V[k * block_N, 0], v_s)
                T.clear(s)
                T.gemm(q_s, k_s, s, transpose_B=True)
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i, j in T.Parallel(128, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.reduce_sum(s, s_sum, dim=1)
                for i in T.Parallel(128):
                    l[i] = l[i] * T.exp2(m_prev[i] * scale - m[i] * scale) + s_sum[i]
                for i, j in T.Parallel(128, dim):
                    o[i, j] *= T.exp2(m_prev[i] * scale - m[i] * scale)
                T.copy(s, p)
                T.gemm(p, v_s, o)
            for i, j in T.Parallel(128, dim):
                o[i, j] /= l[i]
            T.copy(o, O)

    return main


def gemm_128_rows(N=128, K=256, threads=128, trans_a=False, trans_b=False, bk=64):
    @T.prim_func
    def main(A: T.Tensor((K, 128) if trans_a else (128, K), "float16"),
             B: T.Tensor((N, K) if trans_b else (K, N), "float16"), C: T.Tensor((128, N), "float32")):
        with T.Kernel(1, threads=threads) as bx:
            a_s = T.alloc_shared((bk, 128) if trans_a else (128, bk), "float16")
            b_s = T.alloc_shared((N, bk) if trans_b else (bk, N), "float16")
            acc = T.alloc_fragment((128, N), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=3):
                if trans_a:
                    T.copy(A[k * bk, 0], a_s)
                else:
                    T.copy(A[0, k * bk], a_s)
                if trans_b:
                    T.copy(B[0, k * bk], b_s)
                else:
                    T.copy(B[k * bk, 0], b_s)
                T.gemm(a_s, b_s, acc, transpose_A=trans_a, transpose_B=trans_b)
            for i, j in T.Parallel(128, N):
                acc[i, j] = acc[i, j] * (i + 1)
            T.copy(acc, C)

    return main


# bk = 32: K-major tiles of 32 columns, in wgmma's 64-byte swizzle on Hopper
@pytest.mark.parametrize("trans_a,trans_b,bk", [(False, False, 64), (True, True, 64), (False, True, 32),
                                                (True, False, 32), (False, False, 32)])
def test_gemm_with_128_rows_on_128_threads(trans_a, trans_b, bk):
    rng = np.random.default_rng(5)
    a = rng.standard_normal((256, 128) if trans_a else (128, 256)).astype(np.float16)
    b = rng.standard_normal((128, 256) if trans_b else (256, 128)).astype(np.float16)
    c = np.full((128, 128), np.nan, np.float32)
    tilelang.compile(gemm_128_rows(trans_a=trans_a, trans_b=trans_b, bk=bk))(a, b, c)
    aa = a.astype(np.float64).T if trans_a else a.astype(np.float64)
    bb = b.astype(np.float64).T if trans_b else b.astype(np.float64)
    np.testing.assert_allclose(c, (aa @ bb) * np.arange(1, 129)[:, None], rtol=1e-3, atol=1e-2)


# one stage: warp-specialized on Hopper with a barrier pair for K and one for V
@pytest.mark.parametrize("stages", [1, 2])
def test_attention_with_128_rows_on_128_threads(stages):
    rng = np.random.default_rng(9)
    q, k, v = (rng.standard_normal(s).astype(np.float16) for s in ((128, 64), (256, 64), (256, 64)))
    o = np.full((128, 64), np.nan, np.float32)
    tilelang.compile(attention_128_rows(stages=stages))(q, k, v, o)
    s = q.astype(np.float64) @ k.astype(np.float64).T / 8
    p = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(o, (p / p.sum(axis=1, keepdims=True)) @ v.astype(np.float64), rtol=2e-2, atol=2e-2)


def test_sm90_warpgroups_own_several_row_blocks():
    k = tilelang.compile(gemm_128_rows(), target=SM90)
    remarks = "\n".join(k.get_remarks())
    assert "mma_acc(128x128, warps 4x1 interleaved)" in remarks, remarks
    assert "1 warpgroup(s) (2 64-row blocks each)" in remarks and "warp-specialized" in remarks, remarks
    assert "tl::gemm_ss_wgmma_issue<128, 128, 64, false, false, false, 1, 2>" in k.get_kernel_source()
    # K = 32: both K-major operands in the 64-byte swizzle, loaded by TMA with SWIZZLE_64B (2)
    k = tilelang.compile(gemm_128_rows(trans_b=True, bk=32), target=SM90)
    assert any("warp-specialized" in r for r in k.get_remarks()), k.get_remarks()
    assert [s[-1] for s in k._cuda.src.tma_specs] == [2, 2], k._cuda.src.tma_specs
    k = tilelang.compile(attention_128_rows(), target=SM90)
    remarks = "\n".join(k.get_remarks())
    assert "A from registers, wgmma m64n64k16 with B from shared memory, 2 64-row blocks per warpgroup" in remarks, \
        remarks
    # (an NVRTC without ptxas' report, as a pip wheel's can be, says "? bytes spilled")
    assert "0 bytes spilled" in remarks or "? bytes spilled" in remarks, remarks
