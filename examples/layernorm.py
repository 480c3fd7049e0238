"""LayerNorm, y = (x - mean) / sqrt(var + eps) * w + b, per row, lazy-JIT style.

Each block holds block_M whole rows in a register fragment: the mean comes from one
T.reduce_sum, the variance from a second one over the centred values (no E[x^2] - E[x]^2
cancellation), then the affine transform is applied and the rows are stored.

    python examples/layernorm.py [--target auto|cpu|cuda] [--small] [--m M --n N]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=[-1])
def layer_norm(M, N, eps=1e-5, block_M=1, threads=128, dtype=T.float16, accum_dtype=T.float32):

    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), W: T.Tensor((N,), dtype), Bias: T.Tensor((N,), dtype),
             Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, N), accum_dtype)
            xc = T.alloc_fragment((block_M, N), accum_dtype)
            w = T.alloc_fragment((N,), accum_dtype)
            b = T.alloc_fragment((N,), accum_dtype)
            y = T.alloc_fragment((block_M, N), dtype)
            mean = T.alloc_fragment((block_M,), accum_dtype)
            var = T.alloc_fragment((block_M,), accum_dtype)
            T.copy(X[bx * block_M, 0], x)
            T.copy(W, w)
            T.copy(Bias, b)
            T.reduce_sum(x, mean, dim=1)
            for i in T.Parallel(block_M):
                mean[i] = mean[i] / N
            for i, j in T.Parallel(block_M, N):
                xc[i, j] = (x[i, j] - mean[i]) * (x[i, j] - mean[i])
            T.reduce_sum(xc, var, dim=1)
            for i in T.Parallel(block_M):
                var[i] = T.rsqrt(var[i] / N + eps)  # now 1 / std
            for i, j in T.Parallel(block_M, N):
                y[i, j] = (x[i, j] - mean[i]) * var[i] * w[j] + b[j]
            T.copy(y, Y[bx * block_M, 0])

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
    M, N = (9, 200) if args.small else (8192, 4096) if cuda else (512, 2048)
    M, N = args.m or M, args.n or N
    eps = 1e-5
    block_M = 2 if args.small else 1  # ragged: M = 9 rows in blocks of 2
    kernel = layer_norm(M, N, eps, block_M=block_M)

    rng = np.random.default_rng(0)
    x = (2 * rng.standard_normal((M, N)) + 3).astype(np.float16)  # a mean far from 0
    w = rng.uniform(0.5, 1.5, N).astype(np.float16)
    b = rng.standard_normal(N).astype(np.float16)
    if cuda:
        import torch
        x_d, w_d, b_d = (torch.from_numpy(t).cuda() for t in (x, w, b))
        y = kernel(x_d, w_d, b_d).double().cpu().numpy()
        ref = torch.nn.functional.layer_norm(x_d.double(), (N,), w_d.double(), b_d.double(), eps).cpu().numpy()
    else:
        y = kernel(x, w, b).astype(np.float64)
        x64 = x.astype(np.float64)
        mu = x64.mean(axis=1, keepdims=True)
        ref = (x64 - mu) / np.sqrt(x64.var(axis=1, keepdims=True) + eps) * w.astype(np.float64) + b.astype(np.float64)
    err = np.abs(y - ref).max()
    rel = err / np.abs(ref).max()
    print(f"layernorm {M}x{N} target={target}: max abs error {err:.3g} (relative {rel:.2e})")
    if cuda:
        ms = tilelang.profiler.do_bench(lambda: kernel(x_d, w_d, b_d))
        ms_ref = tilelang.profiler.do_bench(lambda: torch.nn.functional.layer_norm(x_d, (N,), w_d, b_d, eps))
        print(f"tilelang {ms:.3f} ms ({2 * x.nbytes / ms * 1e-6:.0f} GB/s)  torch {ms_ref:.3f} ms  "
              f"speedup vs torch {ms_ref / ms:.2f}x")
    if not rel < 2e-3:
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
