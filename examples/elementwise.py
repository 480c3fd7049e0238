"""Element-wise z = a * x + y with a run-time scalar a (one compiled kernel for every a),
eager-JIT style, in two shapes:
  1-D: each block handles block elements, as threads x vec with an explicit T.vectorized inner loop;
  2-D: tiles copied into register fragments (ragged edges are clipped by T.copy), float16 I/O.

    python examples/elementwise.py [--target auto|cpu|cuda] [--small] [--alpha A]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit
def axpy_1d(X, Y, alpha, threads=256, vec=4):
    N = T.const("N")
    X: T.Tensor((N,), T.float32)
    Y: T.Tensor((N,), T.float32)
    alpha: T.float32  # a run-time scalar: it does not specialise the kernel
    Z = T.empty((N,), T.float32)
    block = threads * vec
    with T.Kernel(T.ceildiv(N, block), threads=threads) as bx:
        for t in T.Parallel(threads):
            for v in T.vectorized(vec):
                idx = bx * block + t * vec + v
                if idx < N:
                    Z[idx] = alpha * X[idx] + Y[idx]
    return Z


@tilelang.jit
def axpy_2d(X, Y, alpha, block_M=32, block_N=128, threads=128):
    M, N = T.const("M, N")
    X: T.Tensor((M, N), T.float16)
    Y: T.Tensor((M, N), T.float16)
    alpha: T.float32
    Z = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
        x = T.alloc_fragment((block_M, block_N), T.float16)
        y = T.alloc_fragment((block_M, block_N), T.float16)
        z = T.alloc_fragment((block_M, block_N), T.float16)
        T.copy(X[by * block_M, bx * block_N], x)
        T.copy(Y[by * block_M, bx * block_N], y)
        for i, j in T.Parallel(block_M, block_N):
            z[i, j] = T.cast(alpha * T.cast(x[i, j], T.float32) + T.cast(y[i, j], T.float32), T.float16)
        T.copy(z, Z[by * block_M, bx * block_N])
    return Z


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
    p.add_argument("--alpha", type=float, default=1.75)
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target
    cuda = target == "cuda"
    n1 = 3001 if args.small else (1 << 26) if cuda else 1 << 20
    m2, n2 = (37, 300) if args.small else (8192, 8192) if cuda else (1000, 1000)

    rng = np.random.default_rng(0)
    ok = True
    for name, fn, shape, dt in (("1-D", axpy_1d, (n1,), np.float32), ("2-D", axpy_2d, (m2, n2), np.float16)):
        x, y = (rng.standard_normal(shape).astype(dt) for _ in range(2))
        if cuda:
            import torch
            x, y = torch.from_numpy(x).cuda(), torch.from_numpy(y).cuda()
        errs = []
        for alpha in (args.alpha, -0.5):  # the same kernel serves both values
            z = fn(x, y, alpha)  # the eager call: the kernel is compiled on first use
            if cuda:
                ref = (alpha * x.double() + y.double()).cpu().numpy()
                z = z.double().cpu().numpy()
            else:
                ref = alpha * x.astype(np.float64) + y.astype(np.float64)
            errs.append(np.abs(z.astype(np.float64) - ref).max() / np.abs(ref).max())
        one_kernel = fn.compile(x, y, 1.0) is fn.compile(x, y, 2.0)
        print(f"{name} {'x'.join(map(str, shape))} {np.dtype(dt).name} target={target}: "
              f"max relative error {max(errs):.2e} (one kernel for every alpha: {one_kernel})")
        ok &= max(errs) < (1e-6 if dt == np.float32 else 2e-3) and one_kernel
        if cuda:
            kernel = fn.compile(x, y, args.alpha)  # the handle, without eager dispatch
            ms = tilelang.profiler.do_bench(lambda: kernel(x, y, args.alpha))
            ms_ref = tilelang.profiler.do_bench(lambda: torch.add(y, x, alpha=args.alpha))
            gbs = 3 * x.numel() * x.element_size() / ms * 1e-6
            print(f"  tilelang {ms:.3f} ms ({gbs:.0f} GB/s)  torch {ms_ref:.3f} ms  "
                  f"speedup vs torch {ms_ref / ms:.2f}x")
    if not ok:
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
