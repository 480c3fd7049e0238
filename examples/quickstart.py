"""Quickstart: a GEMM with a fused ReLU epilogue, written once, run on the GPU when one is
usable (CUDA) and on the CPU otherwise. Prints the max error against numpy and the speed."""
import time

import numpy as np

import tilelang
import tilelang.language as T


@tilelang.jit
def matmul(A, B, block_M=128, block_N=128, block_K=32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16)
    B: T.Tensor((K, N), T.float16)
    C = T.empty((M, N), T.float16)

    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((block_M, block_K), T.float16)
        B_shared = T.alloc_shared((block_K, block_N), T.float16)
        C_local = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_local)
        for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by * block_M, ko * block_K], A_shared)
            T.copy(B[ko * block_K, bx * block_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)
        for i, j in T.Parallel(block_M, block_N):
            C_local[i, j] = T.max(C_local[i, j], 0)
        T.copy(C_local, C[by * block_M, bx * block_N])
    return C


def main():
    M = N = K = 1024
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0)
    gpu = False
    try:
        import torch

        gpu = torch.cuda.is_available()
    except ImportError:
        pass
    t0 = time.perf_counter()
    kernel = matmul.compile(M=M, N=N, K=K)  # target "auto": the GPU when one is usable
    print(f"target: {kernel.target}  compile: {time.perf_counter() - t0:.3f} s (cache hit: {kernel.cache_hit})")
    if gpu and kernel.target == "cuda":
        a_t, b_t = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        c = matmul(a_t, b_t).cpu().numpy()  # the eager call, as users write it
        ms = kernel.get_profiler().do_bench()
    else:
        c = matmul(a, b)
        ms = tilelang.profiler.do_bench(lambda: kernel(a, b), warmup=2, rep=10)
    err = np.abs(c.astype(np.float64) - ref).max()
    rel = err / np.abs(ref).max()
    print(f"max abs error vs numpy float64: {err:.4g} (relative {rel:.2e})")
    print(f"latency: {ms:.3f} ms  ({2 * M * N * K / ms / 1e6:.1f} GFLOP/s)")
    assert rel < 1e-2, "result does not match numpy"


if __name__ == "__main__":
    main()
