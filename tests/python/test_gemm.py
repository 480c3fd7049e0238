"""T.gemm: transposes, dtypes (float16/bfloat16/float32/float64 and int8 -> int32), clear_accum,
warp policies, fragment operands, pipelined K loops, ragged edges."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import NP, assert_close, f64, rand


@tilelang.jit(out_idx=[-1], target="cpu")
def gemm_kernel(M, N, K, bm, bn, bk, dtype, accum, trans_A, trans_B, stages=2, threads=128):
    A_shape = (K, M) if trans_A else (M, K)
    B_shape = (N, K) if trans_B else (K, N)
    A_tile = (bk, bm) if trans_A else (bm, bk)
    B_tile = (bn, bk) if trans_B else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor(A_shape, dtype), B: T.Tensor(B_shape, dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared(A_tile, dtype)
            B_s = T.alloc_shared(B_tile, dtype)
            C_f = T.alloc_fragment((bm, bn), accum)
            T.use_swizzle(10)
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_A:  # a compile-time branch: only one copy is emitted
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f, transpose_A=trans_A, transpose_B=trans_B)
            T.copy(C_f, C[by * bm, bx * bn])
    return main


CASES = [
    # dtype, accum, trans_A, trans_B
    ("float16", "float32", False, False),
    ("float16", "float32", False, True),
    ("float16", "float32", True, False),
    ("float16", "float32", True, True),
    ("bfloat16", "float32", True, False),
    ("float32", "float32", False, True),
    ("float64", "float64", False, False),
    ("int8", "int32", False, True),
]


@pytest.mark.parametrize("dtype,accum,trans_A,trans_B", CASES)
def test_gemm(rng, dtype, accum, trans_A, trans_B):
    M, N, K = 37, 29, 45  # ragged against 16 x 16 x 16 tiles
    kernel = gemm_kernel(M, N, K, 16, 16, 16, dtype, accum, trans_A, trans_B, 3)
    a = rand(rng, (K, M) if trans_A else (M, K), dtype)
    b = rand(rng, (N, K) if trans_B else (K, N), dtype)
    c = kernel(a, b)
    assert c.shape == (M, N) and c.dtype == NP[accum]
    ref = (f64(a).T if trans_A else f64(a)) @ (f64(b).T if trans_B else f64(b))
    if dtype == "int8":
        np.testing.assert_array_equal(c, ref.astype(np.int32))
    else:
        assert_close(c, ref, "float32" if accum == "float32" else "float64", rtol=1e-5 if accum == "float32" else None)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A,trans_B", [(False, False), (False, True), (True, False), (True, True)])
@pytest.mark.parametrize("bm,bn,threads", [(64, 64, 128), (128, 128, 256)])
def test_gemm_hopper_tile_shapes(rng, dtype, trans_A, trans_B, bm, bn, threads):
    """One warp per 16 rows and K tiles of 64: the shapes that take wgmma on sm_90a
    (see test_cuda_codegen), with every edge ragged."""
    M, N, K = bm + 37, bn + 8, 150
    kernel = gemm_kernel(M, N, K, bm, bn, 64, dtype, "float32", trans_A, trans_B, 3, threads)
    a = rand(rng, (K, M) if trans_A else (M, K), dtype)
    b = rand(rng, (N, K) if trans_B else (K, N), dtype)
    ref = (f64(a).T if trans_A else f64(a)) @ (f64(b).T if trans_B else f64(b))
    assert_close(kernel(a, b), ref, "float32", rtol=1e-5)


def test_gemm_lazy_cache_and_fewer_iterations_than_stages(rng):
    """K needs a single iteration while num_stages=4; a second call with the same
    arguments returns the same kernel object."""
    k1 = gemm_kernel(20, 24, 9, 16, 16, 16, "float32", "float32", False, False, 4)
    assert gemm_kernel(20, 24, 9, 16, 16, 16, "float32", "float32", False, False, 4) is k1
    a, b = rand(rng, (20, 9)), rand(rng, (9, 24))
    assert_close(k1(a, b), f64(a) @ f64(b), rtol=1e-5)


def test_gemm_chain_clear_accum_fullrow_fragment_operand(rng):
    """Attention-like chain: S = Q K^T (clear_accum, FullRow), S cast fragment -> fragment,
    O += P V with P a register fragment; several KV blocks, the last one ragged."""
    B, H, S, D, bm, bn = 2, 2, 10, 16, 8, 8  # S = 10: the second KV block is ragged
    dtype, accum = "float16", "float32"

    @T.prim_func
    def chain(Q: T.Tensor((B, H, S, D), dtype), Kt: T.Tensor((B, H, S, D), dtype),
              V: T.Tensor((B, H, S, D), dtype), O: T.Tensor((B, H, S, D), accum)):
        with T.Kernel(T.ceildiv(S, bm), H, B, threads=128) as (bx, by, bz):
            Q_s = T.alloc_shared((bm, D), dtype)
            K_s = T.alloc_shared((bn, D), dtype)
            V_s = T.alloc_shared((bn, D), dtype)
            S_f = T.alloc_fragment((bm, bn), accum)
            P_f = T.alloc_fragment((bm, bn), dtype)
            O_f = T.alloc_fragment((bm, D), accum)
            T.copy(Q[bz, by, bx * bm:(bx + 1) * bm, :], Q_s)
            T.fill(O_f, 0)
            T.fill(S_f, 123.0)  # garbage that clear_accum must discard
            for k in T.Pipelined(T.ceildiv(S, bn), num_stages=2):
                T.copy(Kt[bz, by, k * bn:(k + 1) * bn, :], K_s)
                T.copy(V[bz, by, k * bn:(k + 1) * bn, :], V_s)
                T.gemm(Q_s, K_s, S_f, transpose_B=True, policy=T.GemmWarpPolicy.FullRow, clear_accum=True)
                T.copy(S_f, P_f)
                T.gemm(P_f, V_s, O_f, policy=T.GemmWarpPolicy.FullRow)
            T.copy(O_f, O[bz, by, bx * bm:(bx + 1) * bm, :])

    kernel = tilelang.compile(chain, out_idx=[3], target="llvm")
    q, k, v = (rand(rng, (B, H, S, D), dtype) for _ in range(3))
    o = kernel(q, k, v)
    s = (f64(q) @ np.swapaxes(f64(k), -1, -2)).astype(np.float16)  # P is rounded to fp16
    assert_close(o, f64(s) @ f64(v), rtol=1e-4)


@tilelang.jit(out_idx=[3])
def flashattn(batch, heads, seq_len, dim, is_causal, block_M=16, block_N=16, num_stages=2, threads=128):
    """FlashAttention-2 forward, written as upstream's examples write it."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = [batch, heads, seq_len, dim]
    dtype = T.float16
    accum_dtype = T.float32

    @T.prim_func
    def main(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
             Output: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq_len, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared([block_M, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            O_shared = T.alloc_shared([block_M, dim], dtype)
            acc_s = T.alloc_fragment([block_M, block_N], accum_dtype)
            acc_s_cast = T.alloc_fragment([block_M, block_N], dtype)
            acc_o = T.alloc_fragment([block_M, dim], accum_dtype)
            scores_max = T.alloc_fragment([block_M], accum_dtype)
            scores_max_prev = T.alloc_fragment([block_M], accum_dtype)
            scores_scale = T.alloc_fragment([block_M], accum_dtype)
            scores_sum = T.alloc_fragment([block_M], accum_dtype)
            logsum = T.alloc_fragment([block_M], accum_dtype)

            T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = (
                T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                if is_causal else T.ceildiv(seq_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                T.copy(K[bz, by, k * block_N:(k + 1) * block_N, :], K_shared)
                if is_causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype))
                else:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(acc_s.dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.fill(scores_max, -T.infinity(accum_dtype))
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                T.copy(V[bz, by, k * block_N:(k + 1) * block_N, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])

    return main


def attention_ref(q, k, v, is_causal):
    S, D = q.shape[-2:]
    s = f64(q) @ np.swapaxes(f64(k), -1, -2) / np.sqrt(D)
    if is_causal:
        s = np.where(np.tril(np.ones((S, S), bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ f64(v)


@pytest.mark.parametrize("is_causal", [False, True])
def test_flash_attention(rng, is_causal):
    B, H, S, D = 1, 2, 40, 16  # S = 40: the last query and key blocks are ragged
    kernel = flashattn(B, H, S, D, is_causal)
    q, k, v = (rand(rng, (B, H, S, D), "float16") for _ in range(3))
    o = kernel(q, k, v)
    assert o.dtype == np.float16 and o.shape == (B, H, S, D)
    np.testing.assert_allclose(f64(o), attention_ref(q, k, v, is_causal), atol=1e-2, rtol=1e-2)
    if kernel.target != "cpu":
        return  # the profiler gives CUDA kernels torch tensors; this reference takes numpy
    # the profiler makes its own inputs, checks against a reference and times the kernel
    prof = kernel.get_profiler()
    prof.assert_allclose(lambda q, k, v: attention_ref(q, k, v, is_causal), atol=1e-2, rtol=1e-2)
    assert prof.do_bench(warmup=1, rep=2) > 0
