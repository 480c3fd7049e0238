#!/usr/bin/env python3
"""Runs upstream TileLang's own tests against this package (and, as a control, against
upstream's package) and summarises the difference. Usage: see scripts/compat_run.sh.

Each test file runs in its own pytest process (cwd = its folder, a time limit per file), with a
JUnit XML report; one side is "ours" (the tilelang installed in --python's environment), the
other "upstream" (PYTHONPATH=--upstream-pkg, an unpacked upstream wheel). The summary counts,
per test: passed by both, by upstream only, by ours only, failed by both, skipped; and groups
the tests that fail on ours by their first error line."""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from pathlib import Path

SUITES = {
    "examples": ("examples", True),           # examples/**/test_*.py
    "language": ("testing/python/language", False),
    "kernel": ("testing/python/kernel", False),
    "jit": ("testing/python/jit", False),
    "autotune": ("testing/python/autotune", False),
    "cpu": ("testing/python/cpu", False),
    "math": ("testing/python/math", False),
}


def find_tests(root: Path, suites, pattern):
    files = []
    for s in suites:
        sub, recursive = SUITES[s]
        base = root / sub
        if not base.is_dir():
            print(f"[compat] warning: {base} does not exist; suite {s!r} skipped", file=sys.stderr)
            continue
        found = base.rglob("test_*.py") if recursive else base.glob("test_*.py")
        files += [(s, f) for f in sorted(found) if not pattern or re.search(pattern, str(f.relative_to(root)))]
    return files


def _safe(rel: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", rel)


_DEADLINE = [None]  # --deadline: wall-clock time after which no further file starts


def run_file(side, python, env, root, suite, path, out_dir, timeout, collect_only):
    rel = str(path.relative_to(root))
    if _DEADLINE[0] is not None and time.time() > _DEADLINE[0]:
        # Not started: the call's time was up. Counted as not run, so a cut-short run still
        # writes its summary for the files that did run.
        return dict(side=side, suite=suite, file=rel, rc="not-run", seconds=0, xml="", results={})
    xml = out_dir / side / (_safe(rel) + ".xml")
    log = out_dir / side / (_safe(rel) + ".log")
    xml.parent.mkdir(parents=True, exist_ok=True)
    cmd = [python, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", f"--junitxml={xml}", path.name]
    if collect_only:
        cmd.insert(4, "--collect-only")
    t0 = time.time()
    try:
        r = subprocess.run(cmd, cwd=path.parent, env=env, capture_output=True, text=True, timeout=timeout)
        rc, text = r.returncode, r.stdout + r.stderr
    except subprocess.TimeoutExpired as e:
        rc = "timeout"
        text = ((e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")) + \
               ((e.stderr or b"").decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or ""))
    log.write_text(text)
    return dict(side=side, suite=suite, file=rel, rc=rc, seconds=round(time.time() - t0, 1), xml=str(xml),
                results=parse(xml, rel, rc, text, collect_only))


_ADDR = re.compile(r"0x[0-9a-fA-F]+")


def first_line(msg: str) -> str:
    for line in (msg or "").splitlines():
        line = line.strip()
        if line:
            return _ADDR.sub("0x…", line)[:200]
    return "(no message)"


def _error_line(text: str) -> str:
    """The most telling line of a pytest log for a file-level failure: the last `E   ` line or
    the last `...Error:` line."""
    e_lines = [ln[1:].strip() for ln in text.splitlines() if ln.startswith("E ")]
    if e_lines:
        for ln in e_lines:
            if re.match(r"^[A-Za-z_.]*(Error|Exception|Interrupt)\b", ln):
                return first_line(ln)
        return first_line(e_lines[0])
    err = [ln for ln in text.splitlines() if re.search(r"(Error|Exception)\b", ln)]
    return first_line(err[-1]) if err else first_line(text.strip().splitlines()[-1] if text.strip() else "")


def parse(xml: Path, rel, rc, text, collect_only):
    """{test id: (outcome, first error line)}; outcome: passed, failed, skipped, collected."""
    out = {}
    if rc == "timeout":
        return {f"{rel}::<file>": ("failed", "TIMEOUT (the whole file ran past the time limit)")}
    if not xml.exists():
        return {f"{rel}::<file>": ("failed", _error_line(text))}
    try:
        root = ET.parse(xml).getroot()
    except ET.ParseError as e:
        return {f"{rel}::<file>": ("failed", f"unreadable JUnit XML: {e}")}
    for tc in root.iter("testcase"):
        name = tc.get("name", "?")
        tid = f"{rel}::{name}"
        outcome, why = "passed", ""
        for child in tc:
            if child.tag in ("failure", "error"):
                outcome = "failed"
                why = first_line(child.get("message") or child.text or "")
                # pytest's message for errors is often "collection failure"; the text has the cause
                if why in ("collection failure", "(no message)") or why.startswith("failed on setup"):
                    why = _error_line(child.text or "") or why
                break
            if child.tag == "skipped":
                outcome, why = "skipped", first_line(child.get("message") or "")
        out[tid] = (outcome, why)
    if collect_only:
        if rc in (0, 5) and not out:
            out = {f"{rel}::<file>": ("passed", "")}
        elif rc not in (0, 5) and not any(o == "failed" for o, _ in out.values()):
            out[f"{rel}::<file>"] = ("failed", _error_line(text))
    elif not out:
        out[f"{rel}::<file>"] = ("passed" if rc in (0, 5) else "failed", "" if rc in (0, 5) else _error_line(text))
    return out


def _reused_side(path: Path, side: str, wanted_files):
    """The runs of `side` recorded in an earlier results.json, for the files of this run."""
    data = json.loads(path.read_text())
    runs = []
    for run in data["runs"]:
        if run["side"] != side or run["file"] not in wanted_files:
            continue
        prefix = run["file"] + "::"
        res = {t: tuple(v[side]) for t, v in data["tests"].items() if t.startswith(prefix) and side in v}
        runs.append(dict(run, results=res))
    return runs


def which_package(python, env):
    r = subprocess.run([python, "-c", "import tilelang, sys; print(tilelang.__file__); "
                        "print(getattr(tilelang, '__version__', '?'))"],
                       env=env, capture_output=True, text=True, cwd="/")
    return (r.stdout.strip().replace("\n", " version ") or r.stderr.strip().splitlines()[-1:])


def summarize(runs, args, packages):
    per = defaultdict(dict)  # test id -> side -> (outcome, why)
    for run in runs:
        for tid, res in run["results"].items():
            per[tid][run["side"]] = res
    sides = sorted({r["side"] for r in runs})
    both = "upstream" in sides and "ours" in sides
    cats = Counter()
    groups = defaultdict(list)      # first error line on ours -> test ids (upstream passed or no control)
    up_groups = defaultdict(list)   # first error line on upstream -> tests ours passed
    both_groups = defaultdict(list)  # first error line on ours -> tests both sides fail
    for tid, res in sorted(per.items()):
        o = res.get("ours", ("missing", "not run"))
        u = res.get("upstream", ("missing", "not run")) if both else None
        if not both:
            cats[o[0]] += 1
            if o[0] == "failed":
                groups[o[1]].append(tid)
            continue
        if o[0] == "passed" and u[0] == "passed":
            cats["passed by both"] += 1
        elif u[0] == "passed" and o[0] != "passed":
            cats["upstream only" + (" (ours skipped)" if o[0] == "skipped" else "")] += 1
            groups[o[1]].append(tid)
        elif o[0] == "passed" and u[0] != "passed":
            cats["ours only" + (" (upstream skipped)" if u[0] == "skipped" else "")] += 1
            up_groups[u[1]].append(tid)
        elif o[0] == "skipped" and u[0] == "skipped":
            cats["skipped by both"] += 1
        else:
            cats["failed by both"] += 1
            both_groups[o[1]].append(tid)
    lines = [f"# Compatibility run: upstream TileLang's tests on this package", "",
             f"- date: {datetime.datetime.utcnow().strftime('%Y-%m-%d %H:%M UTC')}",
             f"- upstream checkout: {args.upstream} (commit {args.upstream_commit})",
             f"- suites: {', '.join(args.suites)}; per-file limit {args.timeout} s"
             + ("; collect-only (import-level check)" if args.collect_only else ""),
             ] + [f"- {side} package: {packages.get(side)}" for side in sides] + [
             f"- files: {len({r['file'] for r in runs})}, test ids: {len(per)}", "", "| outcome | tests |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in sorted(cats.items(), key=lambda kv: -kv[1])]
    by_suite = defaultdict(Counter)
    for run in runs:
        for tid, (o, _) in run["results"].items():
            by_suite[(run["suite"], run["side"])][o] += 1
    lines += ["", "## Per suite", "", "| suite | side | passed | failed | skipped |", "|---|---|---|---|---|"]
    for (suite, side), c in sorted(by_suite.items()):
        lines.append(f"| {suite} | {side} | {c['passed']} | {c['failed']} | {c['skipped']} |")
    title = ("Failing on ours" + (" but passing on upstream" if both else "")) + ", by first error line"
    lines += ["", f"## {title}", ""]
    for why, tids in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        lines.append(f"- **{len(tids)}** × `{why}`")
        for t in tids[:args.examples]:
            lines.append(f"  - {t}")
        if len(tids) > args.examples:
            lines.append(f"  - … and {len(tids) - args.examples} more")
    if both and both_groups:
        lines += ["", "## Failing on both, by our first error line", ""]
        for why, tids in sorted(both_groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- **{len(tids)}** × `{why}`: " + ", ".join(tids[:3]) + (" …" if len(tids) > 3 else ""))
    if both and up_groups:
        lines += ["", "## Passing on ours but not on upstream, by upstream's first error line", ""]
        for why, tids in sorted(up_groups.items(), key=lambda kv: -len(kv[1])):
            lines.append(f"- **{len(tids)}** × `{why}`: " + ", ".join(tids[:3]) + (" …" if len(tids) > 3 else ""))
    return "\n".join(lines) + "\n", per


def main():
    here = Path(__file__).resolve().parent
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("upstream", help="path of a checkout (or unpacked archive) of upstream TileLang's repository")
    p.add_argument("--upstream-pkg", help="an unpacked upstream wheel (a folder with tilelang/ and its deps) to run "
                                          "the same tests under, as the control")
    p.add_argument("--out", default=str(here.parent / "compat-out"), help="output folder (default: compat-out/)")
    p.add_argument("--python", default=None, help="interpreter with our tilelang installed (default: .venv/bin/python)")
    p.add_argument("--upstream-python", default=None, help="interpreter for the control (default: --python)")
    p.add_argument("--suites", default=",".join(SUITES), help=f"comma-separated, from {','.join(SUITES)}")
    p.add_argument("--filter", default="", help="regex on the test file's path relative to the checkout")
    p.add_argument("--timeout", type=int, default=900, help="seconds per test file (default 900)")
    p.add_argument("--deadline", type=float, default=None,
                   help="seconds from the start of each side after which no further test file starts (a time-limited call)")
    p.add_argument("--jobs", type=int, default=1, help="test files run at once per side (default 1)")
    p.add_argument("--sides-at-once", action="store_true",
                   help="run the two packages' files at the same time (each --jobs at a time) rather than "
                        "one side after the other")
    p.add_argument("--collect-only", action="store_true", help="only import and collect (no GPU needed)")
    p.add_argument("--examples", type=int, default=5, help="test ids listed per error group")
    p.add_argument("--provide-tvm", action="store_true",
                   help="(the default now) `import tvm` gives tilelang's stand-in on our side (docs/tvm-compat.md)")
    p.add_argument("--no-provide-tvm", action="store_true",
                   help="on our side, TILELANG_PROVIDE_TVM=0: no `import tvm` stand-in")
    p.add_argument("--control-results", default=None,
                   help="results.json of an earlier run whose upstream side is reused (same checkout and "
                        "upstream package): only our side runs, the table compares against that control")
    p.add_argument("--ours-pythonpath", default=None,
                   help="PYTHONPATH for our side only (e.g. a folder with torch on a machine without it installed)")
    p.add_argument("--sides", default=None, help="ours,upstream (default: ours, plus upstream when --upstream-pkg)")
    args = p.parse_args()

    root = Path(args.upstream).resolve()
    if not (root / "testing").is_dir() and not (root / "examples").is_dir():
        p.error(f"upstream: {root} has neither testing/ nor examples/; give the root of upstream's repository")
    args.suites = [s for s in args.suites.split(",") if s]
    bad = [s for s in args.suites if s not in SUITES]
    if bad:
        p.error(f"--suites: unknown {bad}; expected names from {list(SUITES)}")
    python = args.python or str(here.parent / ".venv" / "bin" / "python")
    if not os.path.exists(python):
        p.error(f"--python: {python} does not exist (run scripts/setup_env.sh, or pass --python)")
    sides = args.sides.split(",") if args.sides else (["ours"] + (["upstream"] if args.upstream_pkg else []))
    if "upstream" in sides and not args.upstream_pkg:
        p.error("--sides upstream needs --upstream-pkg (an unpacked upstream wheel)")
    r = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    args.upstream_commit = r.stdout.strip() or os.environ.get("UPSTREAM_COMMIT", "unknown (not a git checkout)")
    out = Path(args.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    # The tests run from a copy of examples/ and testing/ (plus pyproject.toml, for pytest's
    # settings): in the checkout, pytest would put its root on sys.path, where the tilelang/
    # source folder would shadow the package under test.
    tree = out / "upstream-tests"
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir()
    for name in ("examples", "testing"):
        if (root / name).is_dir():
            shutil.copytree(root / name, tree / name, symlinks=True,
                            ignore=shutil.ignore_patterns("__pycache__", "*.png", "*.jpg", "*.pdf"))
    if (root / "pyproject.toml").exists():
        shutil.copy(root / "pyproject.toml", tree / "pyproject.toml")
    checkout, root = root, tree
    files = find_tests(root, args.suites, args.filter)
    print(f"[compat] {len(files)} test files; sides: {', '.join(sides)}; output: {out}", file=sys.stderr)

    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    base_env.setdefault("TILELANG_PRINT_ON_COMPILATION", "0")
    envs = {
        "ours": dict(base_env, TILELANG_CACHE_DIR=str(out / "cache-ours"),
                     **({"TILELANG_PROVIDE_TVM": "0"} if args.no_provide_tvm else {}),
                     **({"PYTHONPATH": args.ours_pythonpath} if args.ours_pythonpath else {})),
        "upstream": dict(base_env, PYTHONPATH=str(Path(args.upstream_pkg).resolve()) if args.upstream_pkg else "",
                         TILELANG_CACHE_DIR=str(out / "cache-upstream")),
    }
    pythons = {"ours": python, "upstream": args.upstream_python or python}
    packages = {s: which_package(pythons[s], envs[s]) for s in sides}
    for s in sides:
        print(f"[compat] {s}: tilelang from {packages[s]}", file=sys.stderr)
    if "upstream" in sides and str(checkout) in str(packages.get("upstream")):
        print("[compat] warning: the control imports tilelang from the checkout itself", file=sys.stderr)

    runs = []
    if args.control_results:
        runs += _reused_side(Path(args.control_results), "upstream", {str(f.relative_to(root)) for _, f in files})
        sides = [s for s in sides if s != "upstream"]
        packages["upstream"] = f"(reused from {args.control_results})"
    def run_side(side):
        """Every file under one package, `args.jobs` at a time; the runs, as they finish."""
        done = []
        with cf.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futs = [pool.submit(run_file, side, pythons[side], envs[side], root, suite, f, out, args.timeout,
                                args.collect_only) for suite, f in files]
            for n, fut in enumerate(cf.as_completed(futs), 1):
                run = fut.result()
                done.append(run)
                c = Counter(o for o, _ in run["results"].values())
                print(f"[compat] {side} {n}/{len(files)} {run['file']}: {dict(c)} ({run['seconds']} s)",
                      file=sys.stderr, flush=True)
        return done

    if args.sides_at_once and len(sides) > 1:
        # Both packages at once, each in its own test processes (never two packages in one
        # process): upstream's side compiles through nvcc, several seconds a kernel, and one
        # after the other the call's time ran out before its files did.
        if args.deadline:
            _DEADLINE[0] = time.time() + args.deadline
        with cf.ThreadPoolExecutor(max_workers=len(sides)) as pool:
            for done in pool.map(run_side, sides):
                runs += done
    else:
        for side in sides:  # one side at a time
            if args.deadline:  # each side gets the same time to start its files
                _DEADLINE[0] = time.time() + args.deadline
            runs += run_side(side)
    text, per = summarize(runs, args, packages)
    (out / "summary.md").write_text(text)
    (out / "results.json").write_text(json.dumps(
        {"runs": [{k: v for k, v in r.items() if k != "results"} for r in runs],
         "tests": {t: {s: list(v) for s, v in res.items()} for t, res in per.items()}}, indent=1))
    print(text)
    print(f"[compat] wrote {out / 'summary.md'} and {out / 'results.json'}", file=sys.stderr)


if __name__ == "__main__":
    main()
