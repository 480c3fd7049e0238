"""GEMM, lazy-JIT style: C = A @ B (optionally relu(A @ B)), float16 in, float32 accumulation,
float16 out, with block rasterization (T.use_swizzle) and a pipelined K loop.

    python examples/gemm.py [--target auto|cpu|cuda] [--small] [--relu] [--m M --n N --k K]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def matmul(M, N, K, block_M, block_N, block_K, num_stages=3, threads=128, relu=False,
           dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.use_swizzle(panel_size=10)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            if relu:  # a compile-time branch: the epilogue exists only when asked for
                for i, j in T.Parallel(block_M, block_N):
                    C_local[i, j] = T.max(C_local[i, j], 0)
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
    p.add_argument("--relu", action="store_true", help="fuse a ReLU epilogue")
    p.add_argument("--m", type=int)
    p.add_argument("--n", type=int)
    p.add_argument("--k", type=int)
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target  # what @tilelang.jit compiles for
    cuda = target == "cuda"

    # sizes: ragged against the tiles when small; tiles: tensor-core sized on the GPU
    M, N, K = (77, 45, 70) if args.small else (4096, 4096, 4096) if cuda else (512, 384, 320)
    M, N, K = args.m or M, args.n or N, args.k or K
    tiles = dict(block_M=128, block_N=128, block_K=32, num_stages=3) if cuda else \
        dict(block_M=32, block_N=32, block_K=32, num_stages=2)
    kernel = matmul(M, N, K, **tiles, relu=args.relu)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)

    def torch_fn(x, y):  # the torch equivalent (also the GPU reference, in float64)
        import torch
        c = x @ y
        return torch.relu(c) if args.relu else c

    if cuda:
        import torch
        a_d, b_d = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        c = kernel(a_d, b_d).double().cpu().numpy()
        ref = torch_fn(a_d.double(), b_d.double()).cpu().numpy()
    else:
        c = kernel(a, b).astype(np.float64)
        ref = a.astype(np.float64) @ b.astype(np.float64)
        if args.relu:
            ref = np.maximum(ref, 0)

    err = np.abs(c - ref).max()
    rel = err / np.abs(ref).max()
    print(f"gemm {M}x{N}x{K} relu={args.relu} target={target}: max abs error {err:.4g} (relative {rel:.2e})")
    if cuda:
        ms = tilelang.profiler.do_bench(lambda: kernel(a_d, b_d))
        ms_ref = tilelang.profiler.do_bench(lambda: torch_fn(a_d, b_d))
        tflops = 2 * M * N * K / ms * 1e-9
        print(f"tilelang {ms:.3f} ms ({tflops:.1f} TFLOP/s)  torch {ms_ref:.3f} ms  "
              f"speedup vs torch {ms_ref / ms:.2f}x")
    if not rel < 1e-2:
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
