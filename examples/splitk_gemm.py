"""Split-K GEMM: C += A @ B with K cut into split_k slices, one block per (tile, slice); each
block adds its float32 partial tile into C with T.atomic_add of a fragment region.
The caller passes C (zeroed); float16 A and B.

    python examples/splitk_gemm.py [--target auto|cpu|cuda] [--small] [--split-k S] [--m M --n N --k K]
"""
import argparse
import os
import sys

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit
def matmul_splitk(M, N, K, split_k, block_M, block_N, block_K, num_stages=2, threads=128,
                  dtype=T.float16, accum_dtype=T.float32):
    # each slice covers a whole number of K tiles; the last slices may run past K (zero-filled)
    k_tiles = T.ceildiv(T.ceildiv(K, split_k), block_K)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), accum_dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), split_k, threads=threads) as (bx, by, bz):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            T.clear(C_local)
            for ko in T.Pipelined(k_tiles, num_stages=num_stages):
                T.copy(A[by * block_M, (bz * k_tiles + ko) * block_K], A_shared)
                T.copy(B[(bz * k_tiles + ko) * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.atomic_add(C[by * block_M:(by + 1) * block_M, bx * block_N:(bx + 1) * block_N], C_local)

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
    p.add_argument("--split-k", type=int)
    p.add_argument("--m", type=int)
    p.add_argument("--n", type=int)
    p.add_argument("--k", type=int)
    args = p.parse_args(argv)
    target = pick_target(args.target)
    os.environ["TILELANG_DEFAULT_TARGET"] = target
    cuda = target == "cuda"
    # split-K pays off when M x N gives few tiles and K is long
    M, N, K, S = (40, 36, 150, 3) if args.small else (1024, 1024, 16384, 8) if cuda else (128, 128, 4096, 4)
    M, N, K, S = args.m or M, args.n or N, args.k or K, args.split_k or S
    tiles = dict(block_M=128, block_N=128, block_K=32, num_stages=3) if cuda else \
        dict(block_M=32, block_N=32, block_K=32, num_stages=2)
    kernel = matmul_splitk(M, N, K, S, **tiles)

    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c0 = rng.standard_normal((M, N)).astype(np.float32)  # C accumulates: start from data, not zeros
    if cuda:
        import torch
        a_d, b_d = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        c_d = torch.from_numpy(c0).cuda()
        kernel(a_d, b_d, c_d)
        c = c_d.double().cpu().numpy()
        ref = (torch.from_numpy(c0).cuda().double() + a_d.double() @ b_d.double()).cpu().numpy()
    else:
        c = c0.copy()
        kernel(a, b, c)
        c = c.astype(np.float64)
        ref = c0.astype(np.float64) + a.astype(np.float64) @ b.astype(np.float64)
    err = np.abs(c - ref).max()
    rel = err / np.abs(ref).max()
    print(f"split-K gemm {M}x{N}x{K} split_k={S} target={target}: max abs error {err:.4g} (relative {rel:.2e})")
    if cuda:
        def run():
            c_d.zero_()
            kernel(a_d, b_d, c_d)
        ms = tilelang.profiler.do_bench(run)
        ms_ref = tilelang.profiler.do_bench(lambda: a_d @ b_d)
        print(f"tilelang {ms:.3f} ms ({2 * M * N * K / ms * 1e-9:.1f} TFLOP/s, including zeroing C)  "
              f"torch {ms_ref:.3f} ms  speedup vs torch {ms_ref / ms:.2f}x")
    if not rel < 1e-4:
        print("MISMATCH against the reference")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
