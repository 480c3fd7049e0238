"""Compiles random programs in batches (several kernels in one @T.prim_func, so one host
compile serves many programs), runs each with fresh inputs (and several sizes when it has
dynamic dimensions), and compares with the float64 reference.

Each batch runs in a forked child, so a crash (segfault, abort) of one batch is caught;
a batch that fails as a whole is retried program by program to name the culprit.
"""
from __future__ import annotations

import importlib.util
import multiprocessing as mp
import os
import shutil
import sys
import tempfile
import time
import traceback

import numpy as np

from .gen import NPD, generate, is_int, make_inputs, module_source

OK, MISMATCH, CRASH, REJECTED = "ok", "mismatch", "crash", "rejected"


def _load(src, path):
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.main


def _classify_compile_error(e):
    """A clear user-facing rejection, or a compiler failure (crash)?"""
    from tilelang.errors import TileLangCompileError

    msg = f"{type(e).__name__}: {e}"
    if isinstance(e, TileLangCompileError) and "internal" not in msg.lower():
        return REJECTED, msg
    return CRASH, msg


def compare(prog, got, exp):
    """None when every output matches, else a message."""
    for name, ref in exp.items():
        g = np.asarray(got[name])
        p = next(p for p in prog.params if p.name == name)
        gf = g.astype(np.float64)
        if gf.shape != ref.shape:
            return f"{name}: shape {gf.shape} != {ref.shape}"
        if is_int(p.dtype):
            sentinel = np.iinfo(NPD[p.dtype]).min + 7
            ref = np.where(np.isnan(ref), sentinel, ref)
            bad = gf != ref
        else:
            scale = max(1.0, float(np.nanmax(np.abs(ref)))) if ref.size and not np.isnan(ref).all() else 1.0
            tol = prog.tol * scale
            with np.errstate(invalid="ignore"):
                bad = ~((np.abs(gf - ref) <= tol) | (np.isnan(gf) & np.isnan(ref)))
        if bad.any():
            idx = np.argwhere(bad)
            first = tuple(int(v) for v in idx[0])
            return (f"{name}: {int(bad.sum())}/{bad.size} elements differ (tol {prog.tol:.1e}); "
                    f"first at {first}: got {gf[first]!r}, expected {ref[first]!r}")
    return None


def _run_progs(progs, kernel, target, cpu_kernel=None):
    """Runs every program of a compiled batch; returns {seed: (status, message)}."""
    results = {}
    nruns = max(p.runs for p in progs)
    for run in range(nruns):
        args, exps = {}, {}
        for p in progs:
            rr = run % p.runs
            a = make_inputs(p, rr)
            args.update(a)
            f64 = {k: (v.astype(np.float64) if isinstance(v, np.ndarray) else v) for k, v in a.items()}
            try:
                exps[p.seed] = p.ref(f64, rr)
            except Exception as e:  # a generator bug, not a compiler bug
                results[p.seed] = (CRASH, f"reference failed: {e!r}")
        order = [q.name for p in progs for q in p.params]
        call = [args[n] for n in order]
        if target == "cuda":
            got = _call_cuda(kernel, order, call)
        else:
            kernel(*call)
            got = args
        if cpu_kernel is not None:
            cpu_args = {n: (v.copy() if isinstance(v, np.ndarray) else v) for n, v in zip(order, call)}
            # the inputs were not changed by the GPU call; in-out tensors need their initial values
            for p in progs:
                cpu_args.update(make_inputs(p, run % p.runs))
            cpu_kernel(*[cpu_args[n] for n in order])
        for p in progs:
            if p.seed in results and results[p.seed][0] != OK:
                continue
            msg = compare(p, got, exps.get(p.seed, {}))
            if msg is None and cpu_kernel is not None:
                msg = compare(p, got, {k: cpu_args[k].astype(np.float64) for k in exps.get(p.seed, {})})
                msg = msg and "cuda vs cpu: " + msg
            if msg:
                dims = {k: v[run % p.runs] for k, v in p.dyn.items()}
                dims.update({k: v[run % p.runs] for k, v in p.scalar_vals.items()})
                results[p.seed] = (MISMATCH, f"run {run % p.runs} {dims}: {msg}")
            else:
                results.setdefault(p.seed, (OK, ""))
    return results


def _call_cuda(kernel, order, call):
    import torch

    moved = []
    for a in call:
        if isinstance(a, np.ndarray):
            if a.dtype == NPD["bfloat16"]:
                moved.append(torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda())
            else:
                moved.append(torch.from_numpy(np.ascontiguousarray(a)).cuda())
        else:
            moved.append(a)
    kernel(*moved)
    torch.cuda.synchronize()
    out = {}
    for n, a, m in zip(order, call, moved):
        if isinstance(a, np.ndarray):
            t = m.cpu()
            out[n] = (t.view(torch.int16).numpy().view(NPD["bfloat16"]) if t.dtype == torch.bfloat16
                      else t.numpy())
        else:
            out[n] = a
    return out


def _target_str(target, arch):
    if target == "cuda":
        return f"cuda -arch={arch}" if arch else "cuda"
    return "cpu"


def run_batch(seeds, target="cpu", arch=None, compile_only=False, workdir=None, kinds=None):
    """Compiles and runs programs `seeds` together. Returns {seed: (status, message)}."""
    import tilelang

    progs = [generate(s, kinds=kinds) for s in seeds]
    workdir = workdir or tempfile.mkdtemp(prefix="tlfuzz-")
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, f"fuzz_{seeds[0]}_{len(seeds)}.py")
    src = module_source(progs)
    try:
        func = _load(src, path)
        kernel = tilelang.compile(func, target=_target_str(target, arch))
        if compile_only:
            kernel.get_kernel_source()
    except Exception as e:
        status, msg = _classify_compile_error(e)
        if len(progs) == 1 and progs[0].expect_reject:
            return {progs[0].seed: (OK, "rejected as expected: " + msg) if status == REJECTED else (status, msg)}
        return {p.seed: (status, msg) for p in progs}
    if len(progs) == 1 and progs[0].expect_reject:
        return {progs[0].seed: (MISMATCH, "accepted a program that must be rejected")}
    if compile_only:
        return {p.seed: (OK, "compiled") for p in progs}
    cpu_kernel = tilelang.compile(func, target="cpu") if target == "cuda" else None
    try:
        return _run_progs(progs, kernel, target, cpu_kernel)
    except Exception as e:
        msg = f"run failed: {type(e).__name__}: {e}\n{traceback.format_exc(limit=3)}"
        return {p.seed: (CRASH, msg) for p in progs}


def _child(conn, seeds, kw):
    try:
        conn.send(run_batch(seeds, **kw))
    except BaseException as e:  # noqa: BLE001
        conn.send({s: (CRASH, f"{type(e).__name__}: {e}") for s in seeds})
    conn.close()


def run_isolated(seeds, timeout=300, **kw):
    """run_batch in a forked child; a child killed by a signal or a timeout is a crash."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, seeds, kw))
    proc.start()
    child.close()
    res = None
    timed_out = not parent.poll(timeout)
    if not timed_out:
        try:
            res = parent.recv()
        except EOFError:
            res = None
    proc.join(5)
    if proc.is_alive():
        proc.kill()
        proc.join()
    if res is None:
        why = f"timed out after {timeout} s" if timed_out else f"child died (exit code {proc.exitcode})"
        return {s: (CRASH, why) for s in seeds}
    return res


def fuzz(seed, count, target="cpu", arch=None, compile_only=False, batch=8, jobs=1, kinds=None,
         out=sys.stdout, verbose=False, timeout=300):
    """Programs seed .. seed+count-1. Returns a summary dict."""
    seeds = list(range(seed, seed + count))
    alone = [s for s in seeds if generate(s, kinds=kinds).expect_reject]  # they fail their batch
    rest = [s for s in seeds if s not in set(alone)]
    batches = [rest[i:i + batch] for i in range(0, len(rest), batch)] + [[s] for s in alone]
    workdir = tempfile.mkdtemp(prefix="tlfuzz-")
    kw = dict(target=target, arch=arch, compile_only=compile_only, kinds=kinds, workdir=workdir, timeout=timeout)
    results = {}
    t0 = time.time()
    pending = list(batches)
    if jobs <= 1:
        for b in pending:
            results.update(_finish(b, run_isolated(b, **kw), kw))
            if verbose:
                print(f"[{len(results)}/{count}] {time.time() - t0:.0f}s", file=out, flush=True)
    else:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(jobs) as ex:
            for res in ex.map(lambda b: _finish(b, run_isolated(b, **kw), kw), pending):
                results.update(res)
                if verbose:
                    print(f"[{len(results)}/{count}] {time.time() - t0:.0f}s", file=out, flush=True)
    shutil.rmtree(workdir, ignore_errors=True)
    summary = {k: [s for s, (st, _) in results.items() if st == k] for k in (OK, MISMATCH, CRASH, REJECTED)}
    summary["time"] = time.time() - t0
    summary["results"] = results
    return summary


def _finish(batch, res, kw):
    """A batch where every program failed the same way at compile time (or crashed) is
    retried one program at a time, to find which one it was."""
    if len(batch) > 1 and any(st in (CRASH, REJECTED) for st, _ in res.values()):
        failed = [s for s in batch if res[s][0] in (CRASH, REJECTED)]
        if len(failed) == len(batch) or any("child died" in res[s][1] or "timed out" in res[s][1] for s in failed):
            res = dict(res)
            for s in failed:
                res.update(run_isolated([s], **kw))
    return res


def report(summary, kinds=None, out=sys.stdout, show_rejected=True):
    from .gen import generate as _g

    res = summary["results"]
    n = len(res)
    print(f"programs: {n}  ok: {len(summary[OK])}  mismatches: {len(summary[MISMATCH])}  "
          f"crashes: {len(summary[CRASH])}  rejected: {len(summary[REJECTED])}  "
          f"time: {summary['time']:.1f}s", file=out)
    by_kind = {}
    for s, (st, _) in res.items():
        k = _g(s, kinds=kinds).kind
        by_kind.setdefault(k, {}).setdefault(st, 0)
        by_kind[k][st] += 1
    for k in sorted(by_kind):
        print(f"  {k:12s} " + "  ".join(f"{st}={c}" for st, c in sorted(by_kind[k].items())), file=out)
    for st in (MISMATCH, CRASH) + ((REJECTED,) if show_rejected else ()):
        for s in sorted(summary[st]):
            p = _g(s, kinds=kinds)
            print(f"\n==== {st.upper()} seed={s} kind={p.kind}", file=out)
            print(res[s][1][:2000], file=out)
            print("---- program (python -m tools.fuzz --replay %d) ----" % s, file=out)
            print(p.source(), file=out)
