"""`tilelang.profiler` is a package, as upstream's: `from tilelang.profiler.bench import do_bench`
gives the same function as `tilelang.profiler.do_bench`, and it times a CPU callable."""
from tilelang.profiler import do_bench as profiler_do_bench
from tilelang.profiler.bench import do_bench


def test_bench_module_has_do_bench():
    assert do_bench is profiler_do_bench
    calls = []
    ms = do_bench(lambda: calls.append(1), warmup=1, rep=3)
    assert ms >= 0 and len(calls) >= 3
