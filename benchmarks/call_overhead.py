"""Host cost of one kernel call, for whichever tilelang package is importable (ours or
upstream's: run it once under each, as two processes). A one-block kernel keeps the GPU
time per launch below the host time, so a loop of asynchronous calls measures the host:
argument checks, output allocation, stream lookup and the launch itself.

    python benchmarks/call_overhead.py [--calls 20000] [--json out.json]

Prints per-call microseconds (median of 7 loops) for: a kernel returning its output
(out_idx, allocated per call), the same kernel writing into a given tensor, and torch.add
with out= as the yardstick."""
import argparse
import json
import statistics
import sys
import time

import torch

import tilelang
import tilelang.language as T


def make_kernels(n=256):
    def body(out_idx):
        @tilelang.jit(out_idx=out_idx)
        def axpy_kernel(n_elems=n):
            @T.prim_func
            def axpy(X: T.Tensor((n_elems,), "float32"), Y: T.Tensor((n_elems,), "float32"),
                     Z: T.Tensor((n_elems,), "float32")):
                with T.Kernel(1, threads=n_elems) as bx:
                    for i in T.Parallel(n_elems):
                        Z[i] = X[i] * 2.0 + Y[i]

            return axpy

        return axpy_kernel()

    return body([-1]), body(None)


def per_call_us(fn, calls):
    for _ in range(200):
        fn()
    torch.cuda.synchronize()
    loops = []
    for _ in range(7):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        torch.cuda.synchronize()
        loops.append((t1 - t0) / calls * 1e6)
    return statistics.median(loops)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=20000)
    ap.add_argument("--json")
    args = ap.parse_args()
    with_out, in_place = make_kernels()
    x, y = torch.randn(256, device="cuda"), torch.randn(256, device="cuda")
    z = torch.empty_like(x)
    ref = x.double() * 2 + y.double()
    torch.testing.assert_close(with_out(x, y).double(), ref, rtol=1e-6, atol=1e-6)
    z.fill_(float("nan"))
    in_place(x, y, z)
    torch.testing.assert_close(z.double(), ref, rtol=1e-6, atol=1e-6)
    res = {
        "package": getattr(tilelang, "__file__", "?"),
        "version": getattr(tilelang, "__version__", "?"),
        "returns_output_us": per_call_us(lambda: with_out(x, y), args.calls),
        "writes_given_output_us": per_call_us(lambda: in_place(x, y, z), args.calls),
        "torch_add_out_us": per_call_us(lambda: torch.add(x, y, out=z), args.calls),
    }
    if getattr(in_place, "_call_plan", None) is not None:
        # Ours: the same calls through the Python path (the C++ call plan taken away).
        for name, k in (("returns_output_python_path_us", with_out), ("writes_given_output_python_path_us", in_place)):
            plan, k._call_plan = k._call_plan, None
            res[name] = per_call_us((lambda: with_out(x, y)) if k is with_out else (lambda: in_place(x, y, z)),
                                    args.calls)
            k._call_plan = plan
        # ... and the C++ path reading tensors by attribute instead of the DLPack exchange API
        if getattr(in_place._call_plan, "exchange", False):
            for name, fn, k in (("returns_output_attribute_reads_us", lambda: with_out(x, y), with_out),
                                ("writes_given_output_attribute_reads_us", lambda: in_place(x, y, z), in_place)):
                k._call_plan.exchange = False
                res[name] = per_call_us(fn, args.calls)
                k._call_plan.exchange = True
    for k, v in res.items():
        print(f"{k}: {v:.2f}" if isinstance(v, float) else f"{k}: {v}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
