"""Tile-config sweep for the CUDA GEMM (not a test): which block shape, thread count and
pipeline depth is fastest on this GPU, each checked before it is timed.

    python benchmarks/gemm_sweep.py [N]
"""
import os
import sys

import torch

import tilelang
from gpu_bench import bench, check_gemm, gemm_program

CONFIGS = [  # block_M, block_N, block_K, threads, stages
    (128, 128, 32, 128, 4), (128, 256, 32, 256, 3), (256, 128, 32, 256, 3), (128, 128, 64, 128, 3),
] if os.environ.get("SWEEP_QUICK") else [
    (128, 128, 32, 128, 3), (128, 128, 32, 128, 4), (128, 128, 64, 128, 3),
    (128, 256, 32, 256, 3), (256, 128, 32, 256, 3), (128, 256, 64, 256, 3),
    (128, 128, 32, 256, 4), (256, 128, 64, 256, 3), (128, 256, 32, 256, 4),
]


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    a = torch.randn(n, n, dtype=torch.float16, device="cuda")
    b = torch.randn(n, n, dtype=torch.float16, device="cuda")
    t_ref = bench(lambda: torch.matmul(a, b))
    print(f"cuBLAS {n}^3 fp16: {t_ref:.3f} ms ({2 * n ** 3 / t_ref / 1e9:.0f} TFLOP/s)")
    for bm, bn, bk, threads, stages in CONFIGS:
        try:
            flags = os.environ.get("SWEEP_FLAGS", "").split()
            k = tilelang.compile(gemm_program(n, n, n, bm, bn, bk, stages=stages, threads=threads), target="cuda",
                                 compile_flags=flags)
            _, _, c, err = check_gemm(k, n, n, n, torch.float16)
            t = bench(lambda: k(a, b, c))
            regs = k._cuda.resource_usage.get("registers")
            spill = k._cuda.resource_usage.get("spill_stores_bytes")
            print(f"{bm}x{bn}x{bk} threads={threads} stages={stages}: {t:.3f} ms "
                  f"({2 * n ** 3 / t / 1e9:.0f} TFLOP/s, {t_ref / t:.2f}x cuBLAS) regs={regs} spills={spill}",
                  flush=True)
        except Exception as e:  # noqa: BLE001 - a config that does not fit is reported, not fatal
            print(f"{bm}x{bn}x{bk} threads={threads} stages={stages}: {type(e).__name__}: {str(e)[:200]}")


if __name__ == "__main__":
    main()
