"""Runs one upstream example's run_regression_perf with do_bench replaced by three plain
calls, so that ncu (outside, scripts/ncu_compare.sh) profiles the kernels of one call rather
than a benchmark loop (ncu and do_bench's CUPTI backend do not mix). Works under either
package; the examples come from /tmp/upstream-src (an unpacked checkout of upstream's repo).
    python scripts/ncu_probe.py <family> <module> '<json kwargs>' [function]
(function: another module-level function to call instead, e.g. an example's test_* entry)"""
import importlib, json, os, sys
fam, mod, kw = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
fn_name = sys.argv[4] if len(sys.argv) > 4 else "run_regression_perf"
ex = f"/tmp/upstream-src/examples/{fam}"
sys.path.insert(0, ex); os.chdir(ex)
import torch, tilelang, tilelang.profiler
def _plain(fn, *a, **k):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    return 0.0
tilelang.profiler.do_bench = _plain
getattr(importlib.import_module(mod), fn_name)(**kw)
print("probe done", fam, mod)
