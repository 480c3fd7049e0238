"""FlashAttention-2 forward, lazy-JIT style: O = softmax(Q K^T / sqrt(d)) V.

Layouts: bhsd (batch, heads, seq, dim) or bshd (batch, seq, heads, dim) via --layout;
--causal masks the upper triangle (and stops the KV loop at the diagonal); --kv-heads < heads
gives grouped-query attention (each KV head serves heads / kv_heads query heads).
Each block owns block_M queries of one head and walks the keys in blocks of block_N with an
online softmax (running max, exp2 rescaling, running sum); the second GEMM takes the
probabilities cast to float16 in a register fragment as its A operand.

    python examples/attention_fwd.py [--target auto|cpu|cuda] [--small] [--layout bhsd|bshd]
        [--causal] [--dim 64|128] [--heads H] [--kv-heads HKV] [--batch B] [--seq S]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[3])
def flashattn(batch, heads, kv_heads, seq_len, dim, is_causal, layout="bhsd",
              block_M=64, block_N=64, num_stages=1, threads=128):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # 1/sqrt(d), in log2 units for exp2
    groups = heads // kv_heads
    q_shape = [batch, heads, seq_len, dim] if layout == "bhsd" else [batch, seq_len, heads, dim]
    kv_shape = [batch, kv_heads, seq_len, dim] if layout == "bhsd" else [batch, seq_len, kv_heads, dim]
    dtype, accum_dtype = T.float16, T.float32

    @T.prim_func
    def main(Q: T.Tensor(q_shape, dtype), K: T.Tensor(kv_shape, dtype), V: T.Tensor(kv_shape, dtype),
             Output: T.Tensor(q_shape, dtype)):
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
            kv_head = by // groups

            if layout == "bhsd":
                T.copy(Q[bz, by, bx * block_M:(bx + 1) * block_M, :], Q_shared)
            else:
                T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum_dtype))
            loop_range = (T.min(T.ceildiv(seq_len, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if is_causal else T.ceildiv(seq_len, block_N))
            for k in T.Pipelined(loop_range, num_stages=num_stages):
                if layout == "bhsd":
                    T.copy(K[bz, kv_head, k * block_N:(k + 1) * block_N, :], K_shared)
                else:
                    T.copy(K[bz, k * block_N:(k + 1) * block_N, kv_head, :], K_shared)
                for i, j in T.Parallel(block_M, block_N):  # the mask: -inf where a key is excluded
                    if is_causal:
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(accum_dtype))
                    else:
                        acc_s[i, j] = T.if_then_else(k * block_N + j >= seq_len, -T.infinity(accum_dtype), 0)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
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
                if layout == "bhsd":
                    T.copy(V[bz, kv_head, k * block_N:(k + 1) * block_N, :], V_shared)
                else:
                    T.copy(V[bz, k * block_N:(k + 1) * block_N, kv_head, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            if layout == "bhsd":
                T.copy(O_shared, Output[bz, by, bx * block_M:(bx + 1) * block_M, :])
            else:
                T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return main


def attention_numpy(q, k, v, causal):  # bhsd, float64
    groups = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, groups, axis=1), np.repeat(v, groups, axis=1)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return (p / p.sum(-1, keepdims=True)) @ v


def pick_target(name):
    if name != "auto":
        return name
    try:
        import torch
        return "cuda" if torch.cuda.is_available() else "cpu"
    except ImportError:
        return "cpu"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--target", choices=["auto", "cpu", "cuda"], default="auto")
    p.add_argument("--small", action="store_true", help="tiny sizes (CI)")
    p.add_argument("--layout", choices=["bhsd", "bshd"], default="bhsd")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--dim", type=int, choices=[64, 128], default=64)
    p.add_argument("--heads", type=int)
    p.add_argument("--kv-heads", type=int, help="fewer KV heads than query heads: GQA")
    p.add_argument("--batch", type=int)
    p.add_argument("--seq", type=int)
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target
    cuda = target == "cuda"
    B, H, S = (1, 4, 77) if args.small else (4, 32, 4096) if cuda else (1, 4, 512)
    B, H, S, D = args.batch or B, args.heads or H, args.seq or S, args.dim
    HKV = args.kv_heads or H
    assert H % HKV == 0, "--heads must be a multiple of --kv-heads"
    # GPU: 8 warps on 128 query rows; head dim 128 halves the key block (no register spills on sm_90)
    tiles = dict(block_M=128, block_N=64 if D == 128 else 128, num_stages=2, threads=256) if cuda else \
        dict(block_M=32, block_N=32, num_stages=1)
    kernel = flashattn(B, H, HKV, S, D, args.causal, args.layout, **tiles)

    rng = np.random.default_rng(0)
    q = rng.standard_normal((B, H, S, D)).astype(np.float16)  # made bhsd, then laid out
    k, v = (rng.standard_normal((B, HKV, S, D)).astype(np.float16) for _ in range(2))
    lay = (lambda t: np.ascontiguousarray(t.transpose(0, 2, 1, 3))) if args.layout == "bshd" else (lambda t: t)
    if cuda:
        import torch
        import torch.nn.functional as F
        qd, kd, vd = (torch.from_numpy(lay(t)).cuda() for t in (q, k, v))
        o = kernel(qd, kd, vd).double().cpu().numpy()
        bh = (lambda t: t.transpose(1, 2)) if args.layout == "bshd" else (lambda t: t)

        def torch_fn(q_, k_, v_):  # the torch equivalent, on the kernel's layout
            gqa = {"enable_gqa": True} if HKV != H else {}  # (torch >= 2.5 for GQA)
            o_ = F.scaled_dot_product_attention(bh(q_), bh(k_), bh(v_), is_causal=args.causal, **gqa)
            return bh(o_)
        ref = torch_fn(qd.float(), kd.float(), vd.float()).double().cpu().numpy()
    else:
        o = kernel(lay(q), lay(k), lay(v)).astype(np.float64)
        ref = lay(attention_numpy(*(t.astype(np.float64) for t in (q, k, v)), args.causal))
    err = np.abs(o - ref).max()
    print(f"attention fwd B={B} H={H} HKV={HKV} S={S} D={D} {args.layout} causal={args.causal} "
          f"target={target}: max abs error {err:.3g}")
    if cuda:
        ms = tilelang.profiler.do_bench(lambda: kernel(qd, kd, vd))
        ms_ref = tilelang.profiler.do_bench(lambda: torch_fn(qd, kd, vd))
        flops = 4 * B * H * S * S * D * (0.5 if args.causal else 1)
        print(f"tilelang {ms:.3f} ms ({flops / ms * 1e-9:.1f} TFLOP/s)  torch sdpa {ms_ref:.3f} ms  "
              f"speedup vs torch {ms_ref / ms:.2f}x")
    if not err < 1e-2:
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
