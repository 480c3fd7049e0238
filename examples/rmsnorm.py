"""RMSNorm, y = x / sqrt(mean(x^2) + eps) * w, per row, eager-JIT style.

Each block owns block_M rows and walks them in column blocks twice: pass 1 folds each
block's sum of squares into a per-row accumulator (T.reduce_sum(..., clear=False)); pass 2
scales by T.rsqrt(sum / N + eps) and the weight. Rows of any length fit: a row is never
held whole.

    python examples/rmsnorm.py [--target auto|cpu|cuda] [--small] [--m M --n N]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit
def rms_norm(X, W, eps=1e-6, block_M=2, block_N=512, threads=128):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float16)
    W: T.Tensor((N,), T.float16)
    Y = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
        x = T.alloc_fragment((block_M, block_N), T.float32)
        sq = T.alloc_fragment((block_M, block_N), T.float32)
        w = T.alloc_fragment((block_N,), T.float32)
        y = T.alloc_fragment((block_M, block_N), T.float16)
        sum_sq = T.alloc_fragment((block_M,), T.float32)
        T.clear(sum_sq)
        for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=1):
            T.clear(x)  # T.copy clips ragged edges; cleared elements add 0
            T.copy(X[bx * block_M, k * block_N], x)
            for i, j in T.Parallel(block_M, block_N):
                sq[i, j] = x[i, j] * x[i, j]
            T.reduce_sum(sq, sum_sq, dim=1, clear=False)
        for i in T.Parallel(block_M):
            sum_sq[i] = T.rsqrt(sum_sq[i] / N + eps)
        for k in T.Pipelined(T.ceildiv(N, block_N), num_stages=1):
            T.copy(X[bx * block_M, k * block_N], x)
            T.copy(W[k * block_N], w)
            for i, j in T.Parallel(block_M, block_N):
                y[i, j] = x[i, j] * sum_sq[i] * w[j]
            T.copy(y, Y[bx * block_M, k * block_N])
    return Y


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
    M, N = (9, 300) if args.small else (8192, 8192) if cuda else (512, 2048)
    M, N = args.m or M, args.n or N
    block_N = 128 if args.small else 512
    eps = 1e-6

    rng = np.random.default_rng(0)
    x = (2 * rng.standard_normal((M, N)) + 0.5).astype(np.float16)
    w = rng.uniform(0.5, 1.5, N).astype(np.float16)
    if cuda:
        import torch
        x_d, w_d = torch.from_numpy(x).cuda(), torch.from_numpy(w).cuda()
        torch_fn = getattr(torch.nn.functional, "rms_norm", None) or \
            (lambda t, shape, wt, e: t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + e).to(t.dtype) * wt)
        y = rms_norm(x_d, w_d, eps, block_N=block_N).double().cpu().numpy()
        ref = torch_fn(x_d.double(), (N,), w_d.double(), eps).cpu().numpy()
    else:
        y = rms_norm(x, w, eps, block_N=block_N).astype(np.float64)
        x64 = x.astype(np.float64)
        ref = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + eps) * w.astype(np.float64)
    err = np.abs(y - ref).max()
    rel = err / np.abs(ref).max()
    print(f"rmsnorm {M}x{N} target={target}: max abs error {err:.3g} (relative {rel:.2e})")
    if cuda:
        kernel = rms_norm.compile(x_d, w_d, eps, block_N=block_N)  # the handle, without eager dispatch
        ms = tilelang.profiler.do_bench(lambda: kernel(x_d, w_d))
        ms_ref = tilelang.profiler.do_bench(lambda: torch_fn(x_d, (N,), w_d, eps))
        print(f"tilelang {ms:.3f} ms ({2 * x.nbytes / ms * 1e-6:.0f} GB/s)  torch {ms_ref:.3f} ms  "
              f"speedup vs torch {ms_ref / ms:.2f}x")
    if not rel < 2e-3:
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
