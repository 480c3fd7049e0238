"""The on-disk kernel cache: a recompile in the same process and a compile in a new
process both load the cached library (only the cache_hit flag is asserted)."""
import os
import subprocess
import sys
import textwrap

import numpy as np

SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def axpy(X: T.Tensor((37,), "float32"), Y: T.Tensor((37,), "float32")):
        with T.Kernel(T.ceildiv(37, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < 37:
                    Y[bx * 16 + i] = Y[bx * 16 + i] + 2.5 * X[bx * 16 + i]

    flags = sys.argv[1:]
    hits = []
    for _ in range(2):
        k = tilelang.compile(axpy, target="cpu", compile_flags=flags)
        hits.append(k.cache_hit)
    x = np.arange(37, dtype=np.float32)
    y = np.ones(37, dtype=np.float32)
    k(x, y)
    assert np.array_equal(y, 1 + 2.5 * x), y
    print("HITS", *hits)
''')


def _run(script, cache_dir, *args):
    env = dict(os.environ, TILELANG_CACHE_DIR=str(cache_dir), TILELANG_PRINT_ON_COMPILATION="0")
    r = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True, timeout=240)
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("HITS"))
    return line.split()[1:]


def test_cache_across_processes(tmp_path):
    script = tmp_path / "axpy_cache.py"
    script.write_text(SCRIPT)
    cache = tmp_path / "cache"
    # a fresh cache: the first compile builds, the second in the same process hits
    assert _run(script, cache) == ["False", "True"]
    # a new process with the same cache directory loads the library from disk
    assert _run(script, cache) == ["True", "True"]
    # other compile flags are part of the key
    assert _run(script, cache, "-DTL_TEST_FLAG=1") == ["False", "True"]
    assert any(cache.rglob("*.so"))


def test_cache_in_process(tmp_path, monkeypatch):
    import tilelang
    import tilelang.language as T

    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "c2"))

    @T.prim_func
    def scale(X: T.Tensor((5,), "float64"), Y: T.Tensor((5,), "float64")):
        with T.Kernel(1, threads=1):
            for i in T.serial(5):
                Y[i] = X[i] * 3.0

    k1 = tilelang.compile(scale, out_idx=-1, target="cpu")
    k2 = tilelang.compile(scale, out_idx=-1, target="cpu")
    assert (k1.cache_hit, k2.cache_hit) == (False, True)
    x = np.linspace(-1, 1, 5)
    np.testing.assert_array_equal(k2(x), x * 3.0)
    assert k1.get_kernel_source() == k2.get_kernel_source()
