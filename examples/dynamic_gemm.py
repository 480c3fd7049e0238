"""GEMM with a dynamic M: M = T.dynamic("m") is a run-time dimension, so ONE compiled kernel
serves every M (the number of tokens in a batch, say), while N and K stay compile-time
constants. float16 in, float32 accumulation, float16 out; ragged M edges are clipped by T.copy.

    python examples/dynamic_gemm.py [--target auto|cpu|cuda] [--small] [--ms M1,M2,...]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul_dynamic_m(N, K, block_M, block_N, block_K, num_stages=2, threads=128,
                     dtype=T.float16, accum_dtype=T.float32):
    M = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

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
    p.add_argument("--ms", help="comma-separated M values, run by one kernel")
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target
    cuda = target == "cuda"
    N, K = (40, 72) if args.small else (4096, 4096) if cuda else (256, 512)
    ms = [1, 17, 64, 75] if args.small else [1, 128, 1000, 4096] if cuda else [1, 100, 256, 333]
    if args.ms:
        ms = [int(m) for m in args.ms.split(",")]
    tiles = dict(block_M=128, block_N=128, block_K=32, num_stages=3) if cuda else \
        dict(block_M=32, block_N=32, block_K=32, num_stages=2)
    kernel = matmul_dynamic_m(N, K, **tiles)
    source = kernel.get_kernel_source()

    rng = np.random.default_rng(0)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ok = True
    if cuda:
        import torch
        b_d = torch.from_numpy(b).cuda()
    for M in ms:
        a = rng.standard_normal((M, K)).astype(np.float16)
        if cuda:
            a_d = torch.from_numpy(a).cuda()
            c = kernel(a_d, b_d).double().cpu().numpy()
            ref = (a_d.double() @ b_d.double()).cpu().numpy()
        else:
            c = kernel(a, b).astype(np.float64)
            ref = a.astype(np.float64) @ b.astype(np.float64)
        rel = np.abs(c - ref).max() / np.abs(ref).max()
        ok &= c.shape == (M, N) and rel < 1e-2
        line = f"M={M:5d} N={N} K={K} target={target}: max relative error {rel:.2e}"
        if cuda:
            ms_tl = tilelang.profiler.do_bench(lambda: kernel(a_d, b_d))
            ms_ref = tilelang.profiler.do_bench(lambda: a_d @ b_d)
            line += f"  tilelang {ms_tl:.3f} ms  torch {ms_ref:.3f} ms  speedup vs torch {ms_ref / ms_tl:.2f}x"
        print(line)
    # the same kernel object (and source) served every M: nothing was recompiled
    same = matmul_dynamic_m(N, K, **tiles) is kernel and kernel.get_kernel_source() == source
    print(f"one compiled kernel for {len(ms)} values of M: {same}")
    if not (ok and same):
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
