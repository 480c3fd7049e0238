"""CPU target benchmark (not a test): a 1024^3 float32 GEMM tile program against numpy's
matmul on the same machine, and compile time cold and from the disk cache in a new process.

    .venv/bin/python benchmarks/cpu_gemm.py
"""
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import tilelang
import tilelang.language as T

SIZE = int(os.environ.get("SIZE", 1024))


def gemm_program(M, N, K, block_M=128, block_N=128, block_K=32, dtype="float32"):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, block_K), dtype)
            B_s = T.alloc_shared((block_K, block_N), dtype)
            C_l = T.alloc_fragment((block_M, block_N), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=2):
                T.copy(A[by * block_M, k * block_K], A_s)
                T.copy(B[k * block_K, bx * block_N], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * block_M, bx * block_N])

    return gemm


def bench(fn, warmup=3, rep=15):
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


_HIT_SCRIPT = """
import time, sys
t0 = time.perf_counter()
sys.path.insert(0, {bench_dir!r})
import tilelang
from cpu_gemm import gemm_program
t1 = time.perf_counter()
k = tilelang.compile(gemm_program({n}, {n}, {n}), target="cpu")
t2 = time.perf_counter()
print(k.cache_hit, (t2 - t1) * 1e3, (t1 - t0) * 1e3)
"""


def main():
    n = SIZE
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILELANG_CACHE_DIR"] = cache
        os.environ["TILELANG_PRINT_ON_COMPILATION"] = "0"
        t0 = time.perf_counter()
        kernel = tilelang.compile(gemm_program(n, n, n), target="cpu")
        cold = time.perf_counter() - t0
        assert not kernel.cache_hit
        script = _HIT_SCRIPT.format(bench_dir=os.path.dirname(os.path.abspath(__file__)), n=n)
        out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                             env=dict(os.environ))
        hit, hit_ms, import_ms = out.stdout.split()
        assert hit == "True", out.stdout

        rng = np.random.default_rng(0)
        a = rng.standard_normal((n, n)).astype(np.float32)
        b = rng.standard_normal((n, n)).astype(np.float32)
        c = np.full((n, n), np.nan, dtype=np.float32)
        kernel(a, b, c)
        err = np.abs(c.astype(np.float64) - a.astype(np.float64) @ b.astype(np.float64)).max()
        t_tl = bench(lambda: kernel(a, b, c))
        t_np = bench(lambda: np.matmul(a, b))
    flops = 2 * n ** 3
    print(f"CPU GEMM {n}^3 float32 on {os.cpu_count()} cores")
    print(f"  tilelang : {t_tl:8.2f} ms  {flops / t_tl / 1e6:7.1f} GFLOP/s  (max abs err {err:.2e})")
    print(f"  numpy    : {t_np:8.2f} ms  {flops / t_np / 1e6:7.1f} GFLOP/s")
    print(f"  ratio tilelang/numpy time: {t_tl / t_np:.2f}x (goal: within 4x)")
    print(f"  compile cold: {cold * 1e3:.0f} ms; cache hit in a new process: {float(hit_ms):.1f} ms "
          f"(+ {float(import_ms):.0f} ms to import tilelang)")


if __name__ == "__main__":
    main()
