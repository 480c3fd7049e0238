#!/usr/bin/env python3
"""Small kernels of upstream's examples where our package trails upstream's (BENCHMARKS.md,
twelfth session): each is compiled from upstream's example source, unchanged, its generated
code written to OUT/<side>_<name>.cu and its time printed (do_bench, cupti and events).
Run it once under each package, as two processes (bash scripts/gpu_run.sh with GPU_RUN_PROBE=1
does, with ncu on each kernel):

    python scripts/small_kernels_probe.py --examples /tmp/upstream-src/examples [names] [--ncu]

--ncu: the kernel only runs a few times (for `ncu --launch-skip 2 --launch-count 1`)."""
from __future__ import annotations

import argparse
import importlib
import os
import sys


def _load(examples, folder, module):
    sys.path.insert(0, os.path.join(examples, folder))
    return importlib.import_module(module)


def gemm(ex):  # regression_example_gemm: 1024^3 fp16, 128x128x32, 3 stages
    return _load(ex, "gemm", "example_gemm").matmul.compile(M=1024, N=1024, K=1024, block_M=128, block_N=128, block_K=32)


def gemm4k(ex):  # the same source where GEMM time is the tensor cores' (1024 blocks)
    return _load(ex, "gemm", "example_gemm").matmul.compile(M=4096, N=4096, K=4096, block_M=128, block_N=128, block_K=64)


def gqa(ex):  # regression_example_gqa_fwd_bshd
    m = _load(ex, "flash_attention", "example_gqa_fwd_bshd")
    return m.flashattn(1, 16, 1024, 128, False, groups=16, block_M=64, block_N=64, num_stages=2, threads=128)


def mha(ex):  # regression_example_mha_fwd_bshd
    m = _load(ex, "flash_attention", "example_mha_fwd_bshd")
    return m.flashattn(1, 32, 256, 128, False, block_M=128, block_N=128, num_stages=1, threads=128)


def smla(ex):  # regression_tilelang_example_deepseek_v32's sparse_mla_fwd_pipelined, with its inputs
    import torch

    m = _load(ex, "deepseek_v32", "sparse_mla_fwd_pipelined")
    B, S, SKV, H, HKV, DQK, topk, start = 1, 4096, 8192, 128, 1, 576, 2048, 1024
    torch.random.manual_seed(0)
    q = (torch.randn((B, S, H, DQK), dtype=torch.bfloat16, device="cuda") / 10).clamp_(-10, 10)
    kv = (torch.randn((B, SKV, HKV, DQK), dtype=torch.bfloat16, device="cuda") / 10).clamp_(-10, 10)
    indices = torch.full((B, S, HKV, topk), SKV, dtype=torch.int32, device="cuda")
    for t in range(S):
        i_i = torch.randperm(min(max(1, t + start), SKV))[:topk]
        indices[0, t, 0, :len(i_i)] = i_i
    kernel = m.sparse_mla_fwd_interface(q, kv, indices, start, 1, return_kernel=True)
    starts = torch.tensor([start], dtype=torch.int32, device="cuda")
    return kernel, (q, kv, indices, starts)


KERNELS = {"gemm": gemm, "gemm4k": gemm4k, "gqa": gqa, "mha": mha, "smla": smla}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("names", nargs="*", help=f"of {', '.join(KERNELS)} (default: all)")
    p.add_argument("--examples", default="/tmp/upstream-src/examples", help="upstream's examples/ folder")
    p.add_argument("--out", default=os.environ.get("OUT", "/tmp"))
    p.add_argument("--ncu", action="store_true")
    a = p.parse_args()
    import torch
    import tilelang

    side = "ours" if "upstream-tilelang" not in tilelang.__file__ else "upstream"
    if side == "ours" and os.environ.get("PROBE_VARIANT"):  # a pass-config variant (GPU_RUN_PROBE_VARIANTS)
        side += "-" + os.environ["PROBE_VARIANT"]
    for name in a.names or KERNELS:
        try:
            kernel = KERNELS[name](a.examples)
            inputs = None
            if isinstance(kernel, tuple):  # (kernel, the inputs to call it with)
                kernel, inputs = kernel
            with open(os.path.join(a.out, f"{side}_{name}.cu"), "w") as f:
                f.write(kernel.get_kernel_source())
            if inputs is not None:
                from tilelang.profiler import do_bench

                for _ in range(4 if a.ncu else 1):
                    kernel(*inputs)
                torch.cuda.synchronize()
                if not a.ncu:
                    ms = do_bench(lambda: kernel(*inputs), backend="cupti")
                    print(f"{side} {name}: cupti {ms:.4f} ms", flush=True)
                continue
            prof = kernel.get_profiler()
            if a.ncu:
                for _ in range(4):
                    prof.run_once()
                torch.cuda.synchronize()
                continue
            print(f"{side} {name}: cupti {prof.do_bench(backend='cupti'):.4f} ms, events {prof.do_bench():.4f} ms",
                  flush=True)
        except Exception as e:  # noqa: BLE001 - report and go on to the next kernel
            print(f"{side} {name}: failed {type(e).__name__}: {str(e)[:300]}", flush=True)


if __name__ == "__main__":
    main()
