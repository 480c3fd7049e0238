#!/usr/bin/env python3
"""Upstream TileLang's performance-regression suite, side by side (project issue 11).

Every `examples/**/regression_*.py` of a checkout of upstream's repository (fetched, never
copied into this repo) runs as its own process, once with our package and once with
upstream's (PYTHONPATH=--upstream-pkg, an unpacked wheel), one process at a time so that
nothing else shares the GPU while it is timed. Each file's `regression_*` functions report
latencies through `tilelang.testing.process_func` / `regression()`, read here from the JSON
line `TL_PERF_REGRESSION_FORMAT=json` makes both packages print. The table gives, per
function: ours, upstream, upstream / ours (above 1: ours is faster), and whether the
family's example tests passed on both sides in a compatibility run (`--compat-results`, the
results.json of scripts/compat_run.py), since the regression functions time kernels without
checking them.

`--check ours[,upstream]` first runs the example tests of each selected file's folder
(`test_*.py`, which compare the kernels with torch references) under those packages, several
folders at once (`--check-jobs`), and the "outputs checked" column reports them (ours 3/3:
three tests, all passed) where no compatibility results are given.

`--warm N` first runs every selected file on every side with N processes at once and the
timing switched off (regression_driver.py's TL_REGRESSION_WARM), so the kernels, upstream's
nvcc builds above all, are compiled in parallel and the timed runs, one at a time, find them
in the caches (`--warm-budget` seconds at most).

The suite does not fit one 10-minute device call: `--shard i/n` runs every n-th file, and
`--out` keeps the results of earlier calls (a file already measured on both sides is not run
again), so successive calls fill one table. Compiled kernels are cached in each package's
cache directory on the machine between the calls of one session.

    python scripts/regression_perf.py /tmp/upstream-src --upstream-pkg /tmp/upstream-tilelang \\
        --out /tmp/regression --shard 1/3 --timeout 240
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

MARKER = "__TILELANG_PERF_RESULTS_JSON__="
FAILED = "__TILELANG_REGRESSION_FAILED__="
DRIVER = Path(__file__).resolve().parent / "regression_driver.py"


def find_files(root: Path, pattern: str | None):
    files = sorted((root / "examples").rglob("regression_*.py"))
    patterns = [x for x in (pattern or "").split("|") if x]  # 'a|b': files matching either
    return [f for f in files if not patterns or any(x in str(f.relative_to(root)) for x in patterns)]


def first_error_line(stderr: str) -> str:
    """The line of a traceback that names the exception (the last one that looks like it)."""
    lines = [ln.strip() for ln in stderr.strip().splitlines() if ln.strip()]
    named = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception|Exit|Interrupt)\b", ln)]
    return (named or lines or ["?"])[-1][:300]


def run_side(side: str, python: str, env: dict, path: Path, timeout: float):
    """The latencies one package reports for one regression file (each function on its own,
    through scripts/regression_driver.py), and why not for those that failed."""
    env = dict(env, TL_PERF_REGRESSION_FORMAT="json")
    t0 = time.time()
    try:
        proc = subprocess.run([python, str(DRIVER), path.name], cwd=path.parent, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        results, errors = parse(out)
        return {"status": "timeout", "seconds": round(time.time() - t0, 1), "results": results, "errors": errors}
    results, errors = parse(proc.stdout)
    status = "ok" if proc.returncode == 0 else "failed"
    tail = "" if status == "ok" else first_error_line(proc.stderr)
    return {"status": status, "seconds": round(time.time() - t0, 1), "results": results, "errors": errors,
            "error": tail}


def run_tests(python: str, env: dict, folder: Path, timeout: float) -> dict:
    """The outcome of the example tests of one folder (its test_*.py) under one package:
    counts of passed / failed / skipped tests, from pytest's summary line."""
    tests = sorted(p.name for p in folder.glob("test_*.py"))
    if not tests:
        return {"status": "no tests"}
    t0 = time.time()
    try:
        proc = subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests], cwd=folder, env=env,
                              capture_output=True, text=True, timeout=timeout)
        out, status = proc.stdout, "ok"
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        status = "timeout"
    counts = {k: 0 for k in ("passed", "failed", "skipped", "error")}
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    for n, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)\b", lines[-1] if lines else ""):
        counts["error" if word.startswith("error") else word] += int(n)
    return dict(counts, status=status, seconds=round(time.time() - t0, 1))


def check_folders(jobs, workers: int, timeout: float):
    """Runs (key, side, python, env, folder) jobs `workers` at a time: {key: {side: outcome}}."""
    from concurrent.futures import ThreadPoolExecutor

    def one(job):
        key, side, python, env, folder = job
        return key, side, run_tests(python, env, folder, timeout)

    out = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for key, side, outcome in pool.map(one, jobs):
            out.setdefault(key, {})[side] = outcome
            print(f"[regression] tests of {key} ({side}): {outcome}", file=sys.stderr, flush=True)
    return out


def checked_cell(checks: dict) -> str:
    """The "outputs checked" cell from a folder's example-test outcomes: 'ours 3/3, upstream
    3/3' (passed / run), with what failed or timed out."""
    if not checks:
        return "?"
    parts = []
    for side in sorted(checks):
        c = checks[side]
        if c.get("status") == "no tests":
            parts.append(f"{side}: no tests")
            continue
        ran = c.get("passed", 0) + c.get("failed", 0) + c.get("error", 0)
        text = f"{side} {c.get('passed', 0)}/{ran}"
        if c.get("status") == "timeout":
            text += " (cut off)"
        parts.append(text)
    return ", ".join(parts)


def warm_caches(jobs, workers: int, budget: float):
    """Runs (side, python, env, path) jobs with the timing off, `workers` at a time, until done
    or `budget` seconds have passed (the rest are left to the timed runs)."""
    from concurrent.futures import ThreadPoolExecutor

    deadline = time.time() + budget

    def one(job):
        side, python, env, path = job
        left = deadline - time.time()
        if left <= 5:
            return side, path, "skipped"
        try:
            proc = subprocess.run([python, str(DRIVER), path.name], cwd=path.parent, capture_output=True, text=True,
                                  env=dict(env, TL_REGRESSION_WARM="1"), timeout=left)
            return side, path, "ok" if proc.returncode == 0 else "failed"
        except subprocess.TimeoutExpired:
            return side, path, "timeout"

    t0 = time.time()
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outcomes = list(pool.map(one, jobs))
    counts = {}
    for _, _, status in outcomes:
        counts[status] = counts.get(status, 0) + 1
    print(f"[regression] warm-up: {len(jobs)} runs in {time.time() - t0:.0f} s with {workers} processes: "
          + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())), file=sys.stderr, flush=True)


def parse(stdout: str):
    """Latencies by 'case:name' and errors by case from the driver's marker lines."""
    results, errors = {}, {}
    for line in stdout.splitlines():
        if line.startswith(MARKER):
            for r in json.loads(line[len(MARKER):]):
                results[f"{r.get('case') or ''}:{r['name']}"] = float(r["latency"])
        elif line.startswith(FAILED):
            e = json.loads(line[len(FAILED):])
            errors[e["case"]] = e["error"]
    return results, errors


def family_checked(compat: dict, rel: str) -> str:
    """'yes' when every example test of the regression file's folder passed on both sides of
    the compatibility run, 'no' when one failed, '?' without a run."""
    if not compat:
        return "?"
    folder = "examples/" + str(Path(rel).parent) + "/"
    tests = [v for k, v in compat.get("tests", {}).items() if k.startswith(folder)]
    if not tests:
        return "?"
    both = all(v.get("ours", [""])[0] == "passed" and v.get("upstream", [""])[0] == "passed" for v in tests)
    return "yes" if both else "no"


def failure(side: dict, case: str) -> str:
    """What a table cell says for a function a side did not time: its error when it raised."""
    err = side.get("errors", {}).get(case)
    if err:
        return "failed: " + err.replace("|", "/")[:160]
    return side.get("status", "-") if side.get("status") != "ok" else "-"


def table(state: dict, compat: dict) -> str:
    lines = ["| file | function | ours (ms) | upstream (ms) | upstream / ours | outputs checked |",
             "|---|---|---|---|---|---|"]
    ratios = []
    for rel in sorted(state):
        sides = state[rel]
        ours, up = sides.get("ours", {}), sides.get("upstream", {})
        names = set(ours.get("results", {})) | set(up.get("results", {}))
        named_cases = {k.split(":")[0] for k in names}
        names = sorted(names | {f"{c}:" for d in (ours, up) for c in d.get("errors", {}) if c not in named_cases})
        if not names:
            why = "; ".join(f"{s}: {d.get('status')} {d.get('error', '')}".strip() for s, d in sides.items()
                            if s != "checks")
            lines.append(f"| {rel} | (none reported) | | | | {why} |")
            continue
        for n in names:
            a, b = ours.get("results", {}).get(n), up.get("results", {}).get(n)
            ratio = f"{b / a:.2f}" if a and b else ""
            if a and b:
                ratios.append(b / a)
            case = n.split(":")[0]
            fmt = lambda v, d: f"{v:.4f}" if v else failure(d, case)  # noqa: E731
            checked = family_checked(compat, rel) if compat else checked_cell(sides.get("checks", {}))
            lines.append(f"| {rel} | {n.strip(':')} | {fmt(a, ours)} | {fmt(b, up)} | {ratio} | {checked} |")
    if ratios:
        lines.append("")
        lines.append(f"{len(ratios)} functions timed on both sides: median upstream / ours "
                     f"{statistics.median(ratios):.2f}, lowest {min(ratios):.2f}, highest {max(ratios):.2f}")
    return "\n".join(lines)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("root", help="a checkout (or git archive) of upstream's repository, with examples/")
    p.add_argument("--upstream-pkg", help="an unpacked upstream wheel (PYTHONPATH for the upstream side)")
    p.add_argument("--python", default=sys.executable, help="the Python whose tilelang is ours (default: this one)")
    p.add_argument("--out", default="regression-perf", help="folder for results.json and summary.md (kept)")
    p.add_argument("--shard", default="1/1", help="i/n: run files i, i+n, i+2n, ... (1-based)")
    p.add_argument("--match", default=None, help="only files whose path contains this ('a|b': either)")
    p.add_argument("--timeout", type=float, default=300, help="seconds per file and side")
    p.add_argument("--compat-results", default=None, help="results.json of scripts/compat_run.py")
    p.add_argument("--rerun", action="store_true", help="run files already measured on both sides again")
    p.add_argument("--warm", type=int, default=0,
                   help="first build every file's kernels with this many processes at once, timing off")
    p.add_argument("--warm-budget", type=float, default=240, help="seconds the warm-up may take at most")
    p.add_argument("--check", default="",
                   help="run each folder's example tests first under these packages ('ours' or 'ours,upstream')")
    p.add_argument("--check-jobs", type=int, default=8, help="folders tested at once")
    p.add_argument("--check-timeout", type=float, default=300, help="seconds per folder and package")
    p.add_argument("--sides", default="ours,upstream",
                   help="which packages to run (e.g. 'ours' after a fix: the other side's kept results stay)")
    args = p.parse_args(argv)

    root = Path(args.root).resolve()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "results.json"
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    i, n = (int(x) for x in args.shard.split("/"))
    files = find_files(root, args.match)[i - 1::n]
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    sides = {"ours": (args.python, base)}
    if args.upstream_pkg:
        sides["upstream"] = (sys.executable, dict(base, PYTHONPATH=str(Path(args.upstream_pkg).resolve())))
    wanted = {x.strip() for x in args.sides.split(",") if x.strip()}

    def pending(f):
        done = state.get(str(f.relative_to(root / "examples")), {})
        return args.rerun or not all(done.get(s, {}).get("status") == "ok" for s in sides)

    check_sides = [x.strip() for x in args.check.split(",") if x.strip()]
    for side in check_sides:
        if side not in sides:
            p.error(f"--check: no package for side {side!r} (upstream needs --upstream-pkg)")
    if check_sides:
        jobs = [(str(f.relative_to(root / "examples")), side, sides[side][0], sides[side][1], f.parent)
                for f in files for side in check_sides
                if args.rerun or side not in state.get(str(f.relative_to(root / "examples")), {}).get("checks", {})]
        for rel, outcome in check_folders(jobs, args.check_jobs, args.check_timeout).items():
            state.setdefault(rel, {}).setdefault("checks", {}).update(outcome)
        state_path.write_text(json.dumps(state, indent=1, sort_keys=True))
    if args.warm > 0:
        jobs = [(side, python, env, f) for f in files if pending(f) for side, (python, env) in sides.items()
                if side in wanted]
        warm_caches(jobs, args.warm, args.warm_budget)
    for f in files:
        rel = str(f.relative_to(root / "examples"))
        done = state.get(rel, {})
        if not args.rerun and all(done.get(s, {}).get("status") == "ok" for s in sides):
            continue
        for side, (python, env) in sides.items():
            if side not in wanted:
                continue
            print(f"[regression] {side}: {rel}", file=sys.stderr, flush=True)
            done[side] = run_side(side, python, env, f, args.timeout)
            print(f"[regression]   {done[side]['status']} in {done[side]['seconds']} s, "
                  f"{len(done[side]['results'])} result(s)", file=sys.stderr, flush=True)
        state[rel] = done
        state_path.write_text(json.dumps(state, indent=1, sort_keys=True))  # after each file: a cut-off call keeps it
    compat = json.loads(Path(args.compat_results).read_text()) if args.compat_results else {}
    summary = table(state, compat)
    (out / "summary.md").write_text(summary + "\n")
    # This run's files, then the whole table's last line (the median over every file so far):
    # a call's output is read from its tail.
    ran = {str(f.relative_to(root / "examples")) for f in files}
    print(table({k: v for k, v in state.items() if k in ran}, compat))
    print(summary.splitlines()[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
