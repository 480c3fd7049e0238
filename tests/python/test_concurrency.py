"""Kernels under concurrency and over many compile-and-load cycles (CPU target): calls
from several Python threads at once, compiles from several threads at once, and loaded
libraries released when their kernels are dropped (bounded memory and mappings)."""
import gc
import os
import threading

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.jit import kernel as kernel_mod


def _scale_kernel(c, n=257, block=64):
    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Y[bx * block + i] = X[bx * block + i] * c + 1.0

    return scale


def _run_threads(fn, n):
    errors = []

    def wrap(i):
        try:
            fn(i)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=wrap, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def test_calls_from_many_threads():
    @T.prim_func
    def rowsum(A: T.Tensor((64, 96), "float64"), S: T.Tensor((64,), "float64")):
        with T.Kernel(4, threads=16) as bx:
            acc = T.alloc_fragment((16, 96), "float64")
            out = T.alloc_fragment((16,), "float64")
            T.copy(A[bx * 16, 0], acc)
            T.reduce_sum(acc, out, dim=1)
            T.copy(out, S[bx * 16])

    k = tilelang.compile(rowsum, out_idx=-1, target="cpu")

    def worker(i):
        rng = np.random.default_rng(i)
        for _ in range(40):
            a = rng.standard_normal((64, 96))
            np.testing.assert_allclose(k(a), a.sum(axis=1), rtol=1e-12, atol=1e-12)

    _run_threads(worker, 8)


def test_compiles_from_many_threads():
    consts = [1.5, 2.5, 3.5, 4.5, 5.5, 6.5]
    shared = _scale_kernel(7.25)
    x = np.linspace(-3, 3, 257, dtype=np.float32)

    def worker(i):
        own = tilelang.compile(_scale_kernel(consts[i]), out_idx=-1, target="cpu")
        both = tilelang.compile(shared, out_idx=-1, target="cpu")
        np.testing.assert_array_equal(own(x), x * np.float32(consts[i]) + np.float32(1.0))
        np.testing.assert_array_equal(both(x), x * np.float32(7.25) + np.float32(1.0))

    _run_threads(worker, len(consts))


def _mapped_kernel_libraries(cache_dir):
    with open("/proc/self/maps") as f:
        return {line.split()[-1] for line in f if cache_dir in line and line.rstrip().endswith(".so")}


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


@pytest.mark.cpu_target  # counts the CPU target's loaded libraries
def test_libraries_released_over_many_cycles(tmp_path, monkeypatch):
    cache = str(tmp_path / "cache")
    monkeypatch.setenv("TILELANG_CACHE_DIR", cache)
    funcs = [_scale_kernel(0.5 + i) for i in range(6)]
    x = np.linspace(-1, 1, 257, dtype=np.float32)

    # Distinct kernels, each its own library: all mapped while held, none once dropped.
    held = [tilelang.compile(f, out_idx=-1, target="cpu") for f in funcs]
    assert len(_mapped_kernel_libraries(cache)) == len(funcs)
    assert kernel_mod.loaded_library_count() >= len(funcs)
    del held
    gc.collect()
    assert _mapped_kernel_libraries(cache) == set()

    def cycle(i):
        k = tilelang.compile(funcs[i % len(funcs)], out_idx=-1, target="cpu")
        y = k(x)
        assert y[0] == np.float32(-1) * np.float32(0.5 + i % len(funcs)) + np.float32(1.0)

    # Each cycle loads its library again (cache hit, dlopen) and closes it (dlclose).
    for i in range(60):
        cycle(i)
    gc.collect()
    rss0 = _rss_kib()
    n = 300
    for i in range(n):
        cycle(i)
        if i % 50 == 0:
            assert len(_mapped_kernel_libraries(cache)) <= 1
    gc.collect()
    grown = _rss_kib() - rss0
    assert _mapped_kernel_libraries(cache) == set()
    # a few hundred KiB of allocator noise is fine; a leak of a library or its IR per
    # cycle would be tens of MiB
    assert grown < 16 * 1024, f"RSS grew by {grown} KiB over {n} compile-and-load cycles"
    print(f"RSS growth over {n} cycles: {grown} KiB")
