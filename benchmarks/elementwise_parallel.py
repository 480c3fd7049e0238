"""Element-wise T.Parallel nests written straight on global tensors (no tiles), the form many
users write first: Z = X * 2 * s[row] + Y in fp16, and with float32 X. Run it under whichever
`tilelang` this interpreter imports (ours, or upstream's with PYTHONPATH pointing at its
unpacked wheel), once per package in one device call; each kernel is checked against torch in
float64 before it is timed, and torch's time for the same computation is printed as the
yardstick. Our tl.vectorize_parallel_elementwise is set through TILELANG_PASS_CONFIGS.

    python benchmarks/elementwise_parallel.py LABEL
"""
import sys

import torch

import tilelang
import tilelang.language as T
from tilelang.profiler import do_bench


def axpy(M, N, x_dtype, bm=32, bn=256, threads=256):
    @T.prim_func
    def main(X: T.Tensor((M, N), x_dtype), Y: T.Tensor((M, N), "float16"), s: T.Tensor((M,), "float32"),
             Z: T.Tensor((M, N), "float16")):
        with T.Kernel(N // bn, M // bm, threads=threads) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                r = by * bm + i
                c = bx * bn + j
                Z[r, c] = T.cast(X[r, c] * T.cast(2, x_dtype) * T.cast(s[r], x_dtype) + T.cast(Y[r, c], x_dtype),
                                 "float16")

    return main


def main(label):
    for x_dtype in ["float16", "float32"]:
        M = N = 8192
        kernel = tilelang.compile(axpy(M, N, x_dtype), target="cuda")
        x = torch.randn(M, N, device="cuda", dtype=getattr(torch, x_dtype))
        y = torch.randn(M, N, device="cuda", dtype=torch.float16)
        s = torch.randn(M, device="cuda", dtype=torch.float32)
        z = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        kernel(x, y, s, z)
        want = (x.double() * 2 * s.double()[:, None] + y.double()).half()
        checked = torch.allclose(z.float(), want.float(), rtol=2e-2, atol=2e-2)
        ms = do_bench(lambda: kernel(x, y, s, z), backend="cupti")
        torch_ms = do_bench(lambda: (x * 2 * s.to(x.dtype)[:, None] + y.to(x.dtype)).half(), backend="cupti")
        print(f"elementwise {label} x={x_dtype}: {ms:.4f} ms (checked: {checked}); torch {torch_ms:.4f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "?")
