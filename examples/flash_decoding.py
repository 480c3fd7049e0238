"""Flash decoding (split-KV) for grouped-query attention, lazy-JIT style: one query token per
(batch, head), a long KV cache (batch, seq, kv_heads, dim).

Kernel 1 (grid batch x kv_heads x splits): the query heads that share a KV head form the
rows of one tile; each split walks its slice of the keys with an online softmax and writes a
partial output plus its log-sum-exp (base 2). Kernel 2 (grid heads x batch) combines the
splits: O = sum_s 2^(lse_s - lse) O_s with lse = log2 sum_s 2^lse_s. They are two jitted
kernels (the CUDA target does not yet take two T.Kernel launches in one prim_func, the form
upstream's decoding example uses); the partials are returned too.

    python examples/flash_decoding.py [--target auto|cpu|cuda] [--small] [--splits N] [--seq S]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[3, 4])
def flash_decode_split(batch, heads, kv_heads, seq_len, dim, num_split, block_N=32, block_H=16, num_stages=1,
                       threads=128):
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e) / sqrt(d)
    groups = heads // kv_heads
    split_len = T.ceildiv(seq_len, num_split)
    dtype, accum = T.float16, T.float32
    neg_inf = -T.infinity(accum)

    @T.prim_func
    def main(Q: T.Tensor([batch, heads, dim], dtype), K: T.Tensor([batch, seq_len, kv_heads, dim], dtype),
             V: T.Tensor([batch, seq_len, kv_heads, dim], dtype), Lse: T.Tensor([batch, heads, num_split], accum),
             O_partial: T.Tensor([batch, heads, num_split, dim], accum)):
        with T.Kernel(batch, kv_heads, num_split, threads=threads) as (bz, by, bs):
            Q_shared = T.alloc_shared([block_H, dim], dtype)
            K_shared = T.alloc_shared([block_N, dim], dtype)
            V_shared = T.alloc_shared([block_N, dim], dtype)
            acc_s = T.alloc_fragment([block_H, block_N], accum)
            acc_s_cast = T.alloc_fragment([block_H, block_N], dtype)
            acc_o = T.alloc_fragment([block_H, dim], accum)
            m = T.alloc_fragment([block_H], accum)
            m_prev = T.alloc_fragment([block_H], accum)
            r = T.alloc_fragment([block_H], accum)
            s_blk = T.alloc_fragment([block_H], accum)
            l = T.alloc_fragment([block_H], accum)
            start = bs * split_len
            end = T.min(start + split_len, seq_len)
            n_blocks = T.ceildiv(T.max(end - start, 0), block_N)  # 0 for an empty split
            for i, j in T.Parallel(block_H, dim):  # the group's query heads; padding rows are 0
                Q_shared[i, j] = T.if_then_else(i < groups, Q[bz, by * groups + i, j], 0)
            T.fill(acc_o, 0)
            T.fill(l, 0)
            T.fill(m, neg_inf)
            for k in T.Pipelined(n_blocks, num_stages=num_stages):
                T.copy(K[bz, start + k * block_N:start + (k + 1) * block_N, by, :], K_shared)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.if_then_else(start + k * block_N + j < end, 0, neg_inf)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(m, m_prev)
                T.reduce_max(acc_s, m, dim=1, clear=False)
                for i in T.Parallel(block_H):
                    r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
                for i, j in T.Parallel(block_H, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - m[i] * scale)
                T.reduce_sum(acc_s, s_blk, dim=1)
                for i in T.Parallel(block_H):
                    l[i] = l[i] * r[i] + s_blk[i]
                T.copy(acc_s, acc_s_cast)
                for i, j in T.Parallel(block_H, dim):
                    acc_o[i, j] *= r[i]
                T.copy(V[bz, start + k * block_N:start + (k + 1) * block_N, by, :], V_shared)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
            # an empty split (start >= seq_len) leaves l = 0: it contributes O = 0, lse = -inf
            for i, j in T.Parallel(block_H, dim):
                if i < groups:
                    O_partial[bz, by * groups + i, bs, j] = T.if_then_else(l[i] > 0, acc_o[i, j] / l[i], 0)
            for i in T.Parallel(block_H):
                if i < groups:
                    Lse[bz, by * groups + i, bs] = T.if_then_else(l[i] > 0, T.log2(l[i]) + m[i] * scale, neg_inf)

    return main


@tilelang.jit(out_idx=[2])
def flash_decode_combine(batch, heads, num_split, dim, threads=128):
    accum = T.float32

    @T.prim_func
    def main(Lse: T.Tensor([batch, heads, num_split], accum),
             O_partial: T.Tensor([batch, heads, num_split, dim], accum),
             Output: T.Tensor([batch, heads, dim], T.float16)):
        with T.Kernel(heads, batch, threads=threads) as (bh, bb):
            o = T.alloc_fragment([dim], accum)
            lse_max = T.alloc_var(accum, -T.infinity(accum))
            lse_sum = T.alloc_var(accum, 0)
            for s in T.serial(num_split):
                lse_max = T.max(lse_max, Lse[bb, bh, s])
            for s in T.serial(num_split):
                lse_sum += T.exp2(Lse[bb, bh, s] - lse_max)
            lse = T.log2(lse_sum) + lse_max
            T.clear(o)
            for s in T.serial(num_split):
                w = T.exp2(Lse[bb, bh, s] - lse)
                for d in T.Parallel(dim):
                    o[d] += w * O_partial[bb, bh, s, d]
            for d in T.Parallel(dim):
                Output[bb, bh, d] = o[d]

    return main


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
    p.add_argument("--splits", type=int)
    p.add_argument("--seq", type=int)
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target
    cuda = target == "cuda"
    B, H, HKV, S, D, NS = (2, 8, 2, 77, 64, 4) if args.small else \
        (16, 32, 8, 8192, 128, 16) if cuda else (2, 16, 4, 2048, 64, 8)
    S, NS = args.seq or S, args.splits or NS
    # on the GPU the row tile is 64 (the group's heads, padded) so the GEMMs map onto MMAs
    split = flash_decode_split(B, H, HKV, S, D, NS, block_N=64 if cuda else 16, block_H=64 if cuda else 16,
                               num_stages=2 if cuda else 1)
    combine = flash_decode_combine(B, H, NS, D)

    def kernel(q_, k_, v_):  # -> (lse per split, partial outputs, output)
        lse_, o_partial = split(q_, k_, v_)
        return lse_, o_partial, combine(lse_, o_partial)

    rng = np.random.default_rng(0)
    q = rng.standard_normal((B, H, D)).astype(np.float16)
    k, v = (rng.standard_normal((B, S, HKV, D)).astype(np.float16) for _ in range(2))
    if cuda:
        import torch
        import torch.nn.functional as F
        qd, kd, vd = (torch.from_numpy(t).cuda() for t in (q, k, v))
        lse_p, _, o = (t.double().cpu().numpy() for t in kernel(qd, kd, vd))

        def torch_fn(q_, k_, v_):  # the torch equivalent, timed below (GQA in sdpa: torch >= 2.5)
            return F.scaled_dot_product_attention(q_[:, :, None], k_.transpose(1, 2), v_.transpose(1, 2),
                                                  enable_gqa=True)[:, :, 0]
        kr, vr = (torch.repeat_interleave(t.double(), H // HKV, dim=2) for t in (kd, vd))
        s = torch.einsum("bhd,bshd->bhs", qd.double(), kr) / D ** 0.5
        ref = torch.einsum("bhs,bshd->bhd", torch.softmax(s, dim=-1), vr).cpu().numpy()
        lse_ref = (torch.logsumexp(s, dim=-1) / np.log(2)).cpu().numpy()
    else:
        lse_p, _, o = (t.astype(np.float64) for t in kernel(q, k, v))
        kr, vr = (np.repeat(t.astype(np.float64), H // HKV, axis=2) for t in (k, v))
        s = np.einsum("bhd,bshd->bhs", q.astype(np.float64), kr) / np.sqrt(D)
        pr = np.exp(s - s.max(-1, keepdims=True))
        ref = np.einsum("bhs,bshd->bhd", pr / pr.sum(-1, keepdims=True), vr)
        lse_ref = (np.log(pr.sum(-1)) + s.max(-1)) / np.log(2)
    err = np.abs(o - ref).max()
    lse_err = np.abs(np.log2(np.exp2(lse_p).sum(-1)) - lse_ref).max()  # the partial LSEs add up
    print(f"flash decoding B={B} H={H} HKV={HKV} S={S} D={D} splits={NS} target={target}: "
          f"max abs error {err:.3g} (combined log2-sum-exp error {lse_err:.3g})")
    if cuda:
        ms = tilelang.profiler.do_bench(lambda: kernel(qd, kd, vd))
        ms_ref = tilelang.profiler.do_bench(lambda: torch_fn(qd, kd, vd))
        gbs = (k.nbytes + v.nbytes) / ms * 1e-6
        print(f"tilelang {ms:.3f} ms ({gbs:.0f} GB/s of KV)  torch sdpa {ms_ref:.3f} ms  "
              f"speedup vs torch {ms_ref / ms:.2f}x")
    if not (err < 1e-2 and lse_err < 1e-3):
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
