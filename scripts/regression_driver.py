#!/usr/bin/env python3
"""Runs the regression_* functions of one upstream regression file one at a time, under
whichever `tilelang` is on the path (ours or upstream's), for scripts/regression_perf.py.

A file's own `tilelang.testing.regression()` stops at the first function that raises, and
prints nothing of the functions before it; here each function runs through `regression()`
alone (called from a namespace holding only that function, so both packages' versions of it
see one entry point), so one kernel our compiler rejects costs one row, not the file. A
failure prints a line `__TILELANG_REGRESSION_FAILED__={"case": ..., "error": ...}`."""
import json
import os
import runpy
import sys

FAILED = "__TILELANG_REGRESSION_FAILED__="


def summary(exc: BaseException) -> str:
    """The first two lines of the exception (for ours: the message and the `--> file:line`)."""
    lines = [ln.strip() for ln in f"{type(exc).__name__}: {exc}".splitlines() if ln.strip()]
    return " ".join(lines[:2])[:400]


def skip_timing():
    """TL_REGRESSION_WARM=1 (regression_perf.py --warm): build every kernel, time none. The
    profilers' do_bench return at once, so many files can fill the kernel caches side by side;
    the measured run that follows finds its kernels compiled."""
    import importlib

    import tilelang.profiler as profiler

    def no_timing(*args, **kwargs):
        return 1.0

    try:
        bench = importlib.import_module("tilelang.profiler.bench")
    except ImportError:
        bench = None
    for owner in (profiler, getattr(profiler, "Profiler", None), bench):
        if owner is not None and hasattr(owner, "do_bench"):
            setattr(owner, "do_bench", no_timing)


def main(path: str) -> int:
    if os.environ.get("TL_REGRESSION_WARM") == "1":
        skip_timing()
    path = os.path.abspath(path)
    folder = os.path.dirname(path)
    sys.path.insert(0, folder)
    os.chdir(folder)
    # The command line the file would see run as a script: a function that parses its own
    # (upstream's `run_regression_perf(argv=None)` in examples/convolution) must not read ours.
    sys.argv = [path]
    namespace = runpy.run_path(path, run_name="__regression__")
    names = sorted(k for k, v in namespace.items() if k.startswith("regression_") and callable(v))
    failed = 0
    for name in names:
        try:
            exec("import tilelang.testing\ntilelang.testing.regression()", {name: namespace[name]})
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from a kernel's own checks too
            failed += 1
            print("\n" + FAILED + json.dumps({"case": name[len("regression_"):], "error": summary(exc)}), flush=True)
            if isinstance(exc, KeyboardInterrupt):
                raise
    return 1 if failed and failed == len(names) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
