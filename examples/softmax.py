"""Row softmax, y = softmax(x, dim=1), with an online max and sum over column blocks.

Pass 1 walks the row's column blocks keeping a running max m and a running sum s of
exp(x - m): each block folds into m with T.reduce_max(..., clear=False), s is rescaled by
exp2((m_old - m_new) * log2 e) and the block's exponentials fold in with
T.reduce_sum(..., clear=False). Pass 2 writes exp2((x - m) * log2 e) / s.

    python examples/softmax.py [--target auto|cpu|cuda] [--small] [--m M --n N]
"""
import argparse
import math
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def softmax(M, N, block_M=4, block_N=256, threads=128, dtype=T.float16, accum_dtype=T.float32):
    log2e = 1.0 / math.log(2)

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), accum_dtype)
            y = T.alloc_fragment((block_M, block_N), dtype)
            row_max = T.alloc_fragment((block_M,), accum_dtype)
            row_max_prev = T.alloc_fragment((block_M,), accum_dtype)
            row_sum = T.alloc_fragment((block_M,), accum_dtype)
            T.fill(row_max, -T.infinity(accum_dtype))
            T.fill(row_sum, 0)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=1):
                T.copy(X[bx * block_M, k * block_N], x)  # past the edges T.copy reads 0 ...
                for i, j in T.Parallel(block_M, block_N):  # ... but columns past N must add exp(-inf) = 0
                    x[i, j] = T.if_then_else(k * block_N + j < N, x[i, j], -T.infinity(accum_dtype))
                T.copy(row_max, row_max_prev)
                T.reduce_max(x, row_max, dim=1, clear=False)
                for i in T.Parallel(block_M):
                    row_sum[i] = row_sum[i] * T.exp2((row_max_prev[i] - row_max[i]) * log2e)
                for i, j in T.Parallel(block_M, block_N):
                    x[i, j] = T.exp2((x[i, j] - row_max[i]) * log2e)
                T.reduce_sum(x, row_sum, dim=1, clear=False)
            for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=1):
                T.copy(X[bx * block_M, k * block_N], x)
                for i, j in T.Parallel(block_M, block_N):
                    y[i, j] = T.exp2((x[i, j] - row_max[i]) * log2e) / row_sum[i]
                T.copy(y, Y[bx * block_M, k * block_N])

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
    p.add_argument("--m", type=int)
    p.add_argument("--n", type=int)
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target
    cuda = target == "cuda"
    M, N = (13, 300) if args.small else (8192, 8192) if cuda else (512, 2000)
    M, N = args.m or M, args.n or N
    kernel = softmax(M, N, block_M=4, block_N=128 if args.small else 256)

    rng = np.random.default_rng(0)
    x = (3 * rng.standard_normal((M, N))).astype(np.float16)
    if cuda:
        import torch
        x_d = torch.from_numpy(x).cuda()
        y = kernel(x_d).double().cpu().numpy()
        ref = torch.softmax(x_d.double(), dim=1).cpu().numpy()
    else:
        y = kernel(x).astype(np.float64)
        x64 = x.astype(np.float64)
        e = np.exp(x64 - x64.max(axis=1, keepdims=True))
        ref = e / e.sum(axis=1, keepdims=True)
    err = np.abs(y - ref).max()
    rows = np.abs(y.sum(axis=1) - 1).max()
    print(f"softmax {M}x{N} target={target}: max abs error {err:.3g}, max |row sum - 1| {rows:.3g}")
    if cuda:
        ms = tilelang.profiler.do_bench(lambda: kernel(x_d))
        ms_ref = tilelang.profiler.do_bench(lambda: torch.softmax(x_d, dim=1))
        print(f"tilelang {ms:.3f} ms ({2 * x.nbytes / ms * 1e-6:.0f} GB/s)  torch {ms_ref:.3f} ms  "
              f"speedup vs torch {ms_ref / ms:.2f}x")
    if not (err < 2e-3 and rows < 1e-2):
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
