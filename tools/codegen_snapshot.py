"""Generated code of many kernels, written to a folder, so that a refactoring can be shown
to leave it unchanged (project issue 8): snapshot before, snapshot after, diff.

    python -m tools.codegen_snapshot OUT [--seeds 0-400] [--targets cpu,sm_80,sm_90a]
    python -m tools.codegen_snapshot --diff BEFORE AFTER

Kernels: the fuzzer's programs (tools/fuzz, one file per seed and target) and the kernels
of benchmarks/ (GEMM and attention configurations as benchmarked). Only lowering and code
generation run: no compiler, no GPU. A program the compiler refuses is written as its error
message, so a change in what is refused shows up too."""
from __future__ import annotations

import argparse
import difflib
import importlib.util
import os
import sys
import tempfile

TARGETS = {"cpu": "cpu", "sm_80": "cuda -arch=sm_80", "sm_90a": "cuda -arch=sm_90a"}


def _fuzz_kernels(seeds):
    from tools.fuzz.gen import generate, module_source

    # One fixed folder: the generated code names its source file, which must not differ
    # between two snapshots.
    folder = os.path.join(tempfile.gettempdir(), "tl-codegen-snapshot-src")
    os.makedirs(folder, exist_ok=True)
    for seed in seeds:
        prog = generate(seed)
        src = module_source([prog])
        path = os.path.join(folder, f"snap_{seed}.py")
        with open(path, "w") as f:
            f.write(src)
        try:
            spec = importlib.util.spec_from_file_location(f"snap_{seed}", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            yield f"fuzz_{seed}", mod.main, None
        except Exception as e:  # noqa: BLE001 - refused at parse time: recorded as such
            yield f"fuzz_{seed}", None, f"front end: {type(e).__name__}: {e}"


def _benchmark_kernels():
    """The GEMM and attention kernels of benchmarks/hopper_compare.py, as benchmarked."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sys.path.insert(0, os.path.join(root, "benchmarks"))
    try:
        import hopper_compare as hc  # needs torch
    except Exception:  # noqa: BLE001 - no torch here: the fuzz kernels only
        return
    hc.compile_kernel = lambda func, out_idx: func  # the prim_func, not a compiled kernel
    for dtype in ("float16", "bfloat16"):
        for bm, bn, bk, stages, threads in ((128, 256, 64, 3, 256), (256, 128, 64, 3, 256), (128, 128, 64, 4, 128)):
            yield (f"gemm_{dtype}_{bm}x{bn}x{bk}_s{stages}_t{threads}",
                   hc.gemm_kernel(4096, 4096, 4096, bm, bn, bk, stages, threads, dtype, False), None)
    yield "gemm_ragged_swizzled", hc.gemm_kernel(777, 1030, 520, 128, 256, 64, 3, 256, "float16", True), None
    for causal in (False, True):
        for bm, bn, stages, threads in ((128, 128, 2, 256), (128, 64, 3, 256)):
            yield (f"attention_d128_causal{int(causal)}_{bm}x{bn}_s{stages}",
                   hc.attention_kernel(2, 16, 2048, 128, causal, bm, bn, stages, threads), None)


def snapshot(out, seeds, targets):
    import tilelang

    os.makedirs(out, exist_ok=True)
    n = 0
    kernels = list(_fuzz_kernels(seeds)) + list(_benchmark_kernels())
    for name, func, error in kernels:
        for t in targets:
            path = os.path.join(out, f"{name}.{t}.txt")
            if error is not None:
                text = error
            else:
                try:
                    text = tilelang.lower(func, target=TARGETS[t]).kernel_source
                except Exception as e:  # noqa: BLE001 - a refusal is part of the snapshot
                    text = f"refused: {type(e).__name__}: {e}"
            with open(path, "w") as f:
                f.write(text)
            n += 1
    print(f"wrote {n} files to {out}")


def diff(before, after):
    names = sorted(n for n in set(os.listdir(before)) | set(os.listdir(after)) if n.endswith(".txt"))
    changed = 0
    for name in names:
        a = os.path.join(before, name)
        b = os.path.join(after, name)
        ta = open(a).read() if os.path.exists(a) else "<missing>\n"
        tb = open(b).read() if os.path.exists(b) else "<missing>\n"
        if ta != tb:
            changed += 1
            if changed <= 5:
                sys.stdout.writelines(difflib.unified_diff(ta.splitlines(True), tb.splitlines(True), a, b, n=2))
    print(f"{len(names)} files, {changed} changed")
    return 1 if changed else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", nargs="?")
    ap.add_argument("--seeds", default="0-300", help="fuzz seeds, e.g. 0-300")
    ap.add_argument("--targets", default="cpu,sm_80,sm_90a")
    ap.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"))
    args = ap.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    if not args.out:
        ap.error("give an output folder, or --diff BEFORE AFTER")
    lo, _, hi = args.seeds.partition("-")
    seeds = range(int(lo), int(hi or lo) + 1)
    targets = [t.strip() for t in args.targets.split(",") if t.strip()]
    for t in targets:
        if t not in TARGETS:
            ap.error(f"unknown target {t!r}; use {', '.join(TARGETS)}")
    snapshot(args.out, seeds, targets)
    return 0


if __name__ == "__main__":
    sys.exit(main())
