"""Variable-length attention forward (sequences packed along one axis, offsets in
cu_seqlens, the grid from a scalar argument), as TileLang users write it: Q, K and V tiles
start at run-time row offsets and may run past a sequence's end or the tensor's (on
sm_90a: TMA boxes at dynamic rows, loaded by the producer warpgroup, Q before the loop).
Checked against numpy in float64, sequence by sequence."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def varlen_attention(batch, total_q, total_kv, heads, dim, block_M=64, block_N=64, stages=2, threads=128):
    scale = dim ** -0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((total_q, heads, dim), "float16"), K: T.Tensor((total_kv, heads, dim), "float16"),
             V: T.Tensor((total_kv, heads, dim), "float16"), cu_q: T.Tensor((batch + 1,), "int32"),
             cu_k: T.Tensor((batch + 1,), "int32"), max_q: T.int32,
             O: T.Tensor((total_q, heads, dim), "float32")):
        with T.Kernel(T.ceildiv(max_q, block_M), heads, batch, threads=threads) as (bx, by, bz):
            q_s = T.alloc_shared((block_M, dim), "float16")
            k_s = T.alloc_shared((block_N, dim), "float16")
            v_s = T.alloc_shared((block_N, dim), "float16")
            s = T.alloc_fragment((block_M, block_N), "float32")
            p = T.alloc_fragment((block_M, block_N), "float16")
            o = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            l = T.alloc_fragment((block_M,), "float32")
            s_sum = T.alloc_fragment((block_M,), "float32")
            q_start, k_start = cu_q[bz], cu_k[bz]
            q_len = cu_q[bz + 1] - q_start
            k_len = cu_k[bz + 1] - k_start
            T.copy(Q[q_start + bx * block_M:q_start + bx * block_M + block_M, by, :], q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(k_len, block_N), num_stages=stages):
                T.copy(K[k_start + k * block_N:k_start + k * block_N + block_N, by, :], k_s)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.if_then_else(k * block_N + j >= k_len, -1e9, 0)
                T.gemm(q_s, k_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
                T.reduce_sum(s, s_sum, dim=1)
                for i in T.Parallel(block_M):
                    l[i] = l[i] * T.exp2(m_prev[i] * scale - m[i] * scale) + s_sum[i]
                for i, j in T.Parallel(block_M, dim):
                    o[i, j] *= T.exp2(m_prev[i] * scale - m[i] * scale)
                T.copy(s, p)
                T.copy(V[k_start + k * block_N:k_start + k * block_N + block_N, by, :], v_s)
                T.gemm(p, v_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                if bx * block_M + i < q_len:
                    O[q_start + bx * block_M + i, by, j] = o[i, j] / l[i]

    return main


@pytest.mark.parametrize("q_lens, k_lens, stages", [((70, 128, 33), (40, 128, 90), 2), ((64, 1), (130, 64), 1)])
def test_varlen_attention_matches_float64(q_lens, k_lens, stages):
    rng = np.random.default_rng(sum(q_lens) + stages)
    heads, dim = 2, 64
    cu_q = np.concatenate([[0], np.cumsum(q_lens)]).astype(np.int32)
    cu_k = np.concatenate([[0], np.cumsum(k_lens)]).astype(np.int32)
    q = rng.standard_normal((int(cu_q[-1]), heads, dim)).astype(np.float16)
    k = rng.standard_normal((int(cu_k[-1]), heads, dim)).astype(np.float16)
    v = rng.standard_normal((int(cu_k[-1]), heads, dim)).astype(np.float16)
    o = np.full(q.shape, np.nan, np.float32)
    kernel = tilelang.compile(varlen_attention(len(q_lens), q.shape[0], k.shape[0], heads, dim, stages=stages))
    kernel(q, k, v, cu_q, cu_k, max(q_lens), o)
    for b in range(len(q_lens)):
        qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
        for h in range(heads):
            sc = q[qs, h].astype(np.float64) @ k[ks, h].astype(np.float64).T / np.sqrt(dim)
            pr = np.exp(sc - sc.max(axis=1, keepdims=True))
            want = (pr / pr.sum(axis=1, keepdims=True)) @ v[ks, h].astype(np.float64)
            np.testing.assert_allclose(o[qs, h], want, rtol=2e-2, atol=2e-2)


def test_varlen_attention_on_hopper_loads_every_tile_with_tma():
    kernel = tilelang.compile(varlen_attention(3, 231, 258, 2, 64), target="cuda -arch=sm_90a")
    remarks = "\n".join(kernel.get_remarks())
    assert "warp-specialized, 2 stages" in remarks and "before the loop with TMA (q_s)" in remarks, remarks
