"""Block order of a GEMM: the same kernel (128 x 256 x 64 tiles, 3 stages, 256 threads, B
K-major) compiled with the automatic panels (`tl.raster_panel` unset: 8 wide) and with the
plain order (`tl.raster_panel=0`), each checked against torch, then timed (CUPTI, median of
three). Needs a GPU.

    python benchmarks/block_order.py float16 4096,4096,4096 8192,8192,2048
    python benchmarks/block_order.py float8_e4m3 4096,4096,4096

One RESULT line per shape: ms with the panels, ms in the plain order, and plain / panels."""
import sys
import torch
import tilelang
from tilelang.profiler import do_bench

from gemm_variants import gemm  # (the same GEMM source; this folder is on sys.path when run as a script)

dtype = sys.argv[1]
tdt = {"float16": torch.float16, "float8_e4m3": torch.float8_e4m3fn}[dtype]
def one(shape):
    M, N, K = (int(x) for x in shape.split(","))
    a = torch.randn(M, K, device="cuda").to(tdt)
    b = torch.randn(N, K, device="cuda").to(tdt)
    c = torch.empty(M, N, device="cuda", dtype=torch.float16)
    ts = []
    for cfg in ({}, {"tl.raster_panel": 0}):
        k = tilelang.compile(gemm(M, N, K, dtype, 128, 256, 64, 3, 256), target="cuda", pass_configs=cfg)
        k(a, b, c)
        ref = (a.float() @ b.float().T)
        torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=2e-1 if dtype == "float16" else 1.0)
        ts.append(sorted(do_bench(lambda: k(a, b, c), backend="cupti") for _ in range(3))[1])
    print("RESULT", dtype, shape, f"panel8 {ts[0]:.4f} plain {ts[1]:.4f} plain/panel {ts[1] / ts[0]:.3f}", flush=True)


for shape in sys.argv[2:]:
    try:
        one(shape)
    except Exception as e:  # noqa: BLE001
        print("RESULT", dtype, shape, "error", type(e).__name__, str(e)[:200], flush=True)
