"""Side-by-side Hopper benchmark: the same TileLang kernel sources under whichever `tilelang`
this interpreter imports (ours, or upstream's with PYTHONPATH pointing at its unpacked wheel),
each kernel checked against torch before it is timed, with cuBLAS / cuDNN SDPA timed in the same
process as the common yardstick. Prints one JSON object per line; benchmarks/hopper_compare.sh
runs it under both packages in one call and prints the ratios.

    python benchmarks/hopper_compare.py --label ours [--quick] [--only gemm|attn]
"""
import argparse
import json
import math
import sys
import time

import torch

import tilelang
import tilelang.language as T


def gemm_kernel(M, N, K, block_M, block_N, block_K, stages, threads, dtype, swizzle):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), "float32")
            if swizzle:
                T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=stages):
                T.copy(A[by * block_M, k * block_K], A_shared)
                T.copy(B[k * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return compile_kernel(gemm, [2])


def attention_kernel(batch, heads, seq, dim, causal, block_M, block_N, stages, threads):
    """The flash-attention forward as upstream's examples write it (bshd layout)."""
    scale = (1.0 / dim) ** 0.5 * 1.44269504  # log2(e)
    shape = (batch, seq, heads, dim)
    dtype, accum = "float16", "float"

    @T.prim_func
    def mha(Q: T.Tensor(shape, dtype), K: T.Tensor(shape, dtype), V: T.Tensor(shape, dtype),
            Output: T.Tensor(shape, dtype)):
        with T.Kernel(T.ceildiv(seq, block_M), heads, batch, threads=threads) as (bx, by, bz):
            Q_shared = T.alloc_shared((block_M, dim), dtype)
            K_shared = T.alloc_shared((block_N, dim), dtype)
            V_shared = T.alloc_shared((block_N, dim), dtype)
            O_shared = T.alloc_shared((block_M, dim), dtype)
            acc_s = T.alloc_fragment((block_M, block_N), accum)
            acc_s_cast = T.alloc_fragment((block_M, block_N), dtype)
            acc_o = T.alloc_fragment((block_M, dim), accum)
            scores_max = T.alloc_fragment((block_M,), accum)
            scores_max_prev = T.alloc_fragment((block_M,), accum)
            scores_scale = T.alloc_fragment((block_M,), accum)
            scores_sum = T.alloc_fragment((block_M,), accum)
            logsum = T.alloc_fragment((block_M,), accum)

            T.copy(Q[bz, bx * block_M:(bx + 1) * block_M, by, :], Q_shared)
            T.fill(acc_o, 0)
            T.fill(logsum, 0)
            T.fill(scores_max, -T.infinity(accum))
            loop_range = (T.min(T.ceildiv(seq, block_N), T.ceildiv((bx + 1) * block_M, block_N))
                          if causal else T.ceildiv(seq, block_N))
            for k in T.Pipelined(loop_range, num_stages=stages):
                T.copy(K[bz, k * block_N:(k + 1) * block_N, by, :], K_shared)
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        acc_s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity(acc_s.dtype))
                else:
                    T.clear(acc_s)
                T.gemm(Q_shared, K_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(V[bz, k * block_N:(k + 1) * block_N, by, :], V_shared)
                T.copy(scores_max, scores_max_prev)
                T.reduce_max(acc_s, scores_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    scores_max[i] = T.max(scores_max[i], scores_max_prev[i])
                for i in T.Parallel(block_M):
                    scores_scale[i] = T.exp2(scores_max_prev[i] * scale - scores_max[i] * scale)
                for i, j in T.Parallel(block_M, dim):
                    acc_o[i, j] *= scores_scale[i]
                for i, j in T.Parallel(block_M, block_N):
                    acc_s[i, j] = T.exp2(acc_s[i, j] * scale - scores_max[i] * scale)
                T.copy(acc_s, acc_s_cast)
                T.gemm(acc_s_cast, V_shared, acc_o, policy=T.GemmWarpPolicy.FullRow)
                T.reduce_sum(acc_s, scores_sum, dim=1)
                for i in T.Parallel(block_M):
                    logsum[i] = logsum[i] * scores_scale[i] + scores_sum[i]
            for i, j in T.Parallel(block_M, dim):
                acc_o[i, j] /= logsum[i]
            T.copy(acc_o, O_shared)
            T.copy(O_shared, Output[bz, bx * block_M:(bx + 1) * block_M, by, :])

    return compile_kernel(mha, [3])


_FLUSH = None
ARGS = None
# Extra pass configs for our package's compiles (A/B runs of compiler options), as JSON.
PASS_CONFIGS = json.loads(__import__("os").environ.get("HOPPER_PASS_CONFIGS", "{}"))


# Extra device-compiler flags for our package (A/B runs), space-separated.
COMPILE_FLAGS = __import__("os").environ.get("HOPPER_COMPILE_FLAGS", "").split()


def compile_kernel(func, out_idx):
    kw = {}
    if PASS_CONFIGS:
        kw["pass_configs"] = PASS_CONFIGS
    if COMPILE_FLAGS:
        kw["compile_flags"] = COMPILE_FLAGS
    return tilelang.compile(func, out_idx=out_idx, target="cuda", **kw)


def bench(fn, warmup=5, rep=30):
    """Median milliseconds of fn() with CUDA events, L2 flushed (a 256 MB write) before each run."""
    global _FLUSH
    if _FLUSH is None:
        _FLUSH = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rep):
        _FLUSH.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


DUMPED = set()


def dump_source(kernel, name):
    """Writes the kernel's CUDA source once per name under --dump-source (to compare the packages)."""
    if ARGS.dump_source and name not in DUMPED:
        DUMPED.add(name)
        import os
        os.makedirs(ARGS.dump_source, exist_ok=True)
        with open(os.path.join(ARGS.dump_source, f"{ARGS.label}-{name}.cu"), "w") as f:
            f.write(kernel.get_kernel_source())


def emit(**row):
    print(json.dumps(row), flush=True)


def run_gemm(args):
    torch.manual_seed(0)
    configs = [(128, 256, 64, 3, 256), (128, 256, 64, 4, 256), (256, 128, 64, 3, 256), (128, 128, 64, 4, 256),
               (128, 128, 64, 4, 128)]
    if args.quick:
        configs = [(128, 256, 64, 3, 256), (128, 256, 64, 4, 256)]
    shapes = [(8192, 8192, 8192, "float16"), (8192, 8192, 8192, "bfloat16"), (4096, 4096, 4096, "float16")]
    if args.quick:
        shapes = shapes[:1]
    # Ragged shapes first: correctness only (TMA zero fill at the edges, the cp.async fallback).
    for (M, N, K) in [(1000, 1000, 1000), (777, 1030, 520), (256, 256, 40), (300, 512, 1003)]:
        k = gemm_kernel(M, N, K, 128, 256, 64, 3, 256, "float16", False)
        a = torch.randn(M, K, dtype=torch.float16, device="cuda")
        b = torch.randn(K, N, dtype=torch.float16, device="cuda")
        c = k(a, b)
        ref = a.double() @ b.double()
        err = ((c.double() - ref).abs().max() / ref.abs().max()).item()
        emit(kind="check", name=f"gemm {M}x{N}x{K}", err=err, ok=err < 1e-2)
    for (M, N, K, dtype) in shapes:
        tdt = getattr(torch, dtype)
        a = torch.randn(M, K, dtype=tdt, device="cuda")
        b = torch.randn(K, N, dtype=tdt, device="cuda")
        ref = (a.float() @ b.float())
        flops = 2 * M * N * K
        cublas = bench(lambda: torch.matmul(a, b))
        best = None
        for cfg in configs:
            for swz in (False, True):
                try:
                    t0 = time.perf_counter()
                    k = gemm_kernel(M, N, K, *cfg, dtype, swz)
                    compile_s = time.perf_counter() - t0
                    if cfg == (128, 256, 64, 3, 256) and swz:
                        dump_source(k, "gemm128x256")
                    c = k(a, b)
                    err = ((c.float() - ref).abs().max() / ref.abs().max()).item()
                    if err > 1e-2:
                        emit(kind="error", name=f"gemm {M} {dtype} {cfg} swz={swz}", err=err)
                        continue
                    ms = bench(lambda: k(a, b))
                except Exception as e:  # noqa: BLE001 - a config the package cannot compile
                    emit(kind="error", name=f"gemm {M} {dtype} {cfg} swz={swz}", error=str(e)[:300])
                    continue
                emit(kind="config", name=f"gemm {M} {dtype}", cfg=list(cfg), swizzle=swz, ms=ms,
                     tflops=flops / ms / 1e9, compile_s=compile_s)
                if best is None or ms < best[0]:
                    best = (ms, cfg, swz)
        if best:
            emit(kind="result", name=f"gemm {M}^3 {dtype}", ms=best[0], cfg=list(best[1]), swizzle=best[2],
                 yardstick="cuBLAS", yardstick_ms=cublas, tflops=flops / best[0] / 1e9)


def run_attention(args):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    batch, heads, dim = 2, 16, 128
    configs = [(128, 128, 2, 256), (128, 128, 3, 256), (128, 64, 3, 256)]
    cases = [(8192, False), (8192, True), (2048, False), (2048, True)]
    if args.quick:
        configs, cases = configs[:1], cases[:2]
    for seq, causal in cases:
        q, k_, v = (torch.randn(batch, seq, heads, dim, dtype=torch.float16, device="cuda") for _ in range(3))
        qt, kt, vt = (x.transpose(1, 2) for x in (q, k_, v))
        ref = torch.nn.functional.scaled_dot_product_attention(qt.float(), kt.float(), vt.float(),
                                                               is_causal=causal).transpose(1, 2)
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            cudnn = bench(lambda: torch.nn.functional.scaled_dot_product_attention(qt, kt, vt, is_causal=causal))
        flops = 4 * batch * heads * seq * seq * dim / (2 if causal else 1)
        best = None
        for cfg in configs:
            try:
                kern = attention_kernel(batch, heads, seq, dim, causal, *cfg)
                dump_source(kern, f"attn-causal{int(causal)}")
                o = kern(q, k_, v)
                err = ((o.float() - ref).abs().max()).item()
                if not math.isfinite(err) or err > 2e-2:
                    emit(kind="error", name=f"attn s{seq} causal={causal} {cfg}", err=err)
                    continue
                ms = bench(lambda: kern(q, k_, v))
            except Exception as e:  # noqa: BLE001
                emit(kind="error", name=f"attn s{seq} causal={causal} {cfg}", error=str(e)[:300])
                continue
            emit(kind="config", name=f"attn s{seq} causal={causal}", cfg=list(cfg), ms=ms, tflops=flops / ms / 1e9)
            if best is None or ms < best[0]:
                best = (ms, cfg)
        if best:
            emit(kind="result", name=f"attn d128 s{seq} causal={causal}", ms=best[0], cfg=list(best[1]),
                 yardstick="cuDNN", yardstick_ms=cudnn, tflops=flops / best[0] / 1e9)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--label", default="ours")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--only", choices=["gemm", "attn"])
    p.add_argument("--dump-source", default="", help="folder for the generated CUDA of one config per kernel")
    global ARGS
    args = ARGS = p.parse_args()
    emit(kind="meta", label=args.label, tilelang=getattr(tilelang, "__version__", "?"), file=tilelang.__file__,
         gpu=torch.cuda.get_device_name(), torch=torch.__version__)
    if args.only in (None, "gemm"):
        run_gemm(args)
    if args.only in (None, "attn"):
        run_attention(args)


if __name__ == "__main__":
    sys.exit(main())
