"""Command line: python -m tools.fuzz --seed S --count N [--target cpu|cuda] ..."""
import argparse
import os
import sys


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m tools.fuzz", description=__doc__)
    p.add_argument("--seed", type=int, default=0, help="first program seed")
    p.add_argument("--count", type=int, default=100, help="number of programs")
    p.add_argument("--target", choices=["cpu", "cuda"], default="cpu")
    p.add_argument("--arch", default=None, help="CUDA arch, e.g. sm_90a (needed for --compile-only without a GPU)")
    p.add_argument("--compile-only", action="store_true", help="only compile (CUDA source without a GPU)")
    p.add_argument("--batch", type=int, default=8, help="programs compiled together in one module")
    p.add_argument("--jobs", type=int, default=1, help="batches compiled at the same time")
    p.add_argument("--kinds", default=None, help="comma-separated program kinds (default: all)")
    p.add_argument("--timeout", type=int, default=300, help="seconds a batch may take (compile + runs)")
    p.add_argument("--replay", type=int, default=None, help="run one program alone and print its source")
    p.add_argument("--quiet-rejected", action="store_true", help="do not print programs the front end rejected")
    p.add_argument("-v", "--verbose", action="store_true")
    a = p.parse_args(argv)
    os.environ.setdefault("TILELANG_PRINT_ON_COMPILATION", "0")
    from .gen import generate
    from .runner import fuzz, report

    kinds = a.kinds.split(",") if a.kinds else None
    if a.compile_only and a.target == "cuda" and not a.arch:
        a.arch = "sm_90a"
    if a.replay is not None:
        print(generate(a.replay, kinds=kinds).source())
        a.seed, a.count, a.batch = a.replay, 1, 1
    s = fuzz(a.seed, a.count, target=a.target, arch=a.arch, compile_only=a.compile_only, batch=a.batch,
             jobs=a.jobs, kinds=kinds, verbose=a.verbose, timeout=a.timeout)
    report(s, kinds=kinds, show_rejected=not a.quiet_rejected)
    return 1 if s["mismatch"] or s["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
