"""Times upstream TileLang's own example kernels under whichever `tilelang` is importable (ours,
or upstream's wheel on PYTHONPATH), from a checkout of upstream's repository (never copied
here). Run it once per package, each in its own process, in one device call, and compare.

    python benchmarks/upstream_examples.py regression EXAMPLES flash_attention example_gqa_fwd_bshd \
        --label ours --repeats 3
        upstream's `run_regression_perf()` of that example module, `repeats` times (ms, CUPTI)
    python benchmarks/upstream_examples.py mha-forward EXAMPLES --label ours [--causal] \
        [--block-m 128 --block-n 128 --stages 2 --threads 256]
        `example_mha_fwd_bshd`'s kernel at batch 8, 32 heads, 4,096 tokens, d 128, fp16, first
        checked against torch, then timed three times; cuDNN's SDPA timed in the same process
    python benchmarks/upstream_examples.py fp8-gemm EXAMPLES --label ours [--size 8192]
        `example_tilelang_gemm_fp8`'s kernel (e4m3, 128 x 128 x 64 tiles) at size^3, checked
        against torch, timed three times (as its run_regression_perf: Integer inputs); torch's
        `_scaled_mm` (unit scales, bfloat16 out) timed in the same process

One RESULT line each (label, what, the times in ms)."""
import argparse
import importlib
import os
import sys


def regression(args):
    sys.path.insert(0, os.path.join(args.examples, args.family))
    module = importlib.import_module(args.module)
    times = [module.run_regression_perf() for _ in range(args.repeats)]
    print("RESULT", args.label, args.module, " ".join(f"{t:.4f}" for t in times), flush=True)


def mha_forward(args):
    from functools import partial

    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    sys.path.insert(0, os.path.join(args.examples, "flash_attention"))
    from example_mha_fwd_bshd import flashattn, ref_program
    from tilelang.profiler import do_bench

    B, H, S, D = 8, 32, 4096, 128
    kernel = flashattn(B, H, S, D, args.causal, block_M=args.block_m, block_N=args.block_n,
                       num_stages=args.stages, threads=args.threads)
    profiler = kernel.get_profiler()
    profiler.assert_allclose(partial(ref_program, is_causal=args.causal), rtol=0.01, atol=0.01)
    times = [profiler.do_bench(backend="cupti") for _ in range(3)]
    q, k, v = (torch.randn(B, H, S, D, dtype=torch.float16, device="cuda") for _ in range(3))
    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        cudnn = do_bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=args.causal), backend="cupti")
    config = f"{args.block_m}x{args.block_n}/{args.stages}/{args.threads}"
    print("RESULT", args.label, "causal" if args.causal else "full", config,
          " ".join(f"{t:.4f}" for t in times), f"cudnn {cudnn:.4f}", flush=True)


def fp8_gemm(args):
    import torch

    import tilelang
    sys.path.insert(0, os.path.join(args.examples, "gemm_fp8"))
    from example_tilelang_gemm_fp8 import calc_diff, matmul
    from tilelang.language.fp8 import determine_fp8_type
    from tilelang.profiler import do_bench

    n = args.size
    kernel = matmul.compile(M=n, N=n, K=n, block_M=128, block_N=128, block_K=64, dtype=determine_fp8_type())
    a = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device="cuda").to(torch.float8_e4m3fn)
    diff = float(calc_diff(kernel(a, b).float(), a.float() @ b.float().T))
    assert diff < 1e-3, f"FP8 GEMM differs from torch: {diff}"
    profiler = kernel.get_profiler(tilelang.TensorSupplyType.Integer)
    times = [profiler.do_bench(backend="cupti") for _ in range(3)]
    one = torch.ones((), device="cuda")
    scaled = do_bench(lambda: torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16),
                      backend="cupti")
    print("RESULT", args.label, f"fp8-gemm {n}^3", " ".join(f"{t:.4f}" for t in times), f"scaled_mm {scaled:.4f}",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    reg = sub.add_parser("regression", help="an example's run_regression_perf")
    reg.add_argument("examples", help="upstream's examples/ folder")
    reg.add_argument("family")
    reg.add_argument("module")
    reg.add_argument("--label", default="ours")
    reg.add_argument("--repeats", type=int, default=3)
    reg.set_defaults(run=regression)
    mha = sub.add_parser("mha-forward", help="example_mha_fwd_bshd against cuDNN")
    mha.add_argument("examples", help="upstream's examples/ folder")
    mha.add_argument("--label", default="ours")
    mha.add_argument("--causal", action="store_true")
    mha.add_argument("--block-m", type=int, default=128)
    mha.add_argument("--block-n", type=int, default=128)
    mha.add_argument("--stages", type=int, default=2)
    mha.add_argument("--threads", type=int, default=256)
    mha.set_defaults(run=mha_forward)
    fp8 = sub.add_parser("fp8-gemm", help="example_tilelang_gemm_fp8 against torch._scaled_mm")
    fp8.add_argument("examples", help="upstream's examples/ folder")
    fp8.add_argument("--label", default="ours")
    fp8.add_argument("--size", type=int, default=8192)
    fp8.set_defaults(run=fp8_gemm)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
