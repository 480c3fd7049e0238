"""Performance-regression helpers used by upstream's example scripts:
``tilelang.testing.process_func(fn, name, **kwargs)`` records the latency fn returns, and
``tilelang.testing.regression()`` runs the calling module's ``regression_*`` functions and
prints one ``name: latency`` line per recorded result (or, with
``TL_PERF_REGRESSION_FORMAT=json``, one JSON line after the marker below)."""
from __future__ import annotations

import json
import os
import sys
import time
import warnings
from dataclasses import dataclass

JSON_MARKER = "__TILELANG_PERF_RESULTS_JSON__="


@dataclass(frozen=True)
class PerfResult:
    name: str
    latency: float
    case: str | None = None


results: list = []
_case = None


def process_func(func, name=None, /, **kwargs):
    """Calls func(**kwargs), which returns a latency; records it under `name` (default: the
    function's module). A non-positive latency is retried a few times, then warned about."""
    label = name if name is not None else getattr(func, "__module__", "<unknown>")
    label = label[len("regression_"):] if label.startswith("regression_") else label
    latency = float(func(**kwargs))
    for _ in range(5):
        if latency > 0:
            break
        latency = float(func(**kwargs))
    if latency <= 0:
        warnings.warn(f"{label}: latency {latency} <= 0; not recorded", RuntimeWarning, stacklevel=2)
        return
    results.append(PerfResult(label, latency, _case))


def _selected(name, filters):
    import fnmatch

    short = name[len("regression_"):] if name.startswith("regression_") else name
    if not filters:
        return True
    return any(fnmatch.fnmatch(c.lower(), f.lower()) or f.lower() in c.lower() for f in filters for c in (name, short))


def _filters():
    raw = os.environ.get("TL_PERF_REGRESSION_ONLY", "").strip()
    if not raw:
        return []
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError:
        parsed = raw.split(",")
    if isinstance(parsed, str):
        parsed = [parsed]
    return [str(p).strip() for p in parsed if str(p).strip()] if isinstance(parsed, list) else []


def regression(prefixes=("regression_",), verbose=True):
    """Runs every callable of the calling module whose name starts with one of `prefixes`
    (sorted by name), then prints the recorded latencies."""
    global _case
    caller = sys._getframe(1).f_globals
    results.clear()
    funcs = sorted((k, v) for k, v in list(caller.items())
                   if callable(v) and any(k.startswith(p) for p in prefixes))
    funcs = [(k, v) for k, v in funcs if _selected(k, _filters())]
    for n, (k, fn) in enumerate(funcs, 1):
        _case = k[len("regression_"):] if k.startswith("regression_") else k
        t0 = time.perf_counter()
        if verbose:
            print(f"  [{n}/{len(funcs)}] {_case}", end="", flush=True)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn()
        finally:
            _case = None
        if verbose:
            print(f" ({time.perf_counter() - t0:.2f}s)", flush=True)
    if os.environ.get("TL_PERF_REGRESSION_FORMAT", "text").strip().lower() == "json":
        print(JSON_MARKER + json.dumps([dict(name=r.name, latency=r.latency, **({"case": r.case} if r.case else {}))
                                        for r in results], separators=(",", ":")))
    else:
        for r in results:
            print(f"{r.name}: {r.latency}")
