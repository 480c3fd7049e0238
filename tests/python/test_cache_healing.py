"""The disk cache heals and never lies: a truncated, changed or missing cached library, or
an unreadable entry, is a miss that is rebuilt and reported once as a
TileLangCacheWarning; concurrent processes building the same kernel do not disturb each
other; the cache can be cleared and disabled; the key covers what changes the binary."""
import gc
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.cache import TileLangCacheWarning

# The CPU target's library cache and loader; the CUDA run of the suite does not apply.
pytestmark = pytest.mark.cpu_target


def _make_kernel(scale):
    @T.prim_func
    def axpy(X: T.Tensor((37,), "float32"), Y: T.Tensor((37,), "float32")):
        with T.Kernel(T.ceildiv(37, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < 37:
                    Y[bx * 16 + i] = Y[bx * 16 + i] + scale * X[bx * 16 + i]

    return axpy


def _check(kernel, scale):
    x = np.arange(37, dtype=np.float32)
    y = np.ones(37, dtype=np.float32)
    kernel(x, y)
    np.testing.assert_array_equal(y, 1 + np.float32(scale) * x)


def _compile_recording(func):
    """Compiles for the CPU; returns the kernel and the cache warnings raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = tilelang.compile(func, target="cpu")
    return k, [w for w in caught if issubclass(w.category, TileLangCacheWarning)]


def _entry_of(kernel):
    """(manifest path, library path) of a CPU kernel's cache entry."""
    lib = kernel.library_path
    folder, name = os.path.split(lib)
    key = name.split("-")[0]
    return os.path.join(folder, key + ".entry"), lib


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    return tmp_path / "cache"


def _first_build(scale):
    func = _make_kernel(scale)
    k, warned = _compile_recording(func)
    assert not k.cache_hit and not warned
    _check(k, scale)
    manifest, lib = _entry_of(k)
    assert os.path.isfile(manifest) and os.path.isfile(lib)
    # Drop the kernel so that the library is closed before the test damages it.
    del k
    gc.collect()
    return func, manifest, lib


def _truncate(path):
    with open(path, "r+b") as f:
        f.truncate(100)


def _flip_a_byte(path):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        b = f.read(1)
        f.seek(size // 2)
        f.write(bytes([b[0] ^ 0xFF]))
    assert os.path.getsize(path) == size


def _garble(path):
    with open(path, "wb") as f:
        f.write(b"\x00garbage\xff\n")


@pytest.mark.parametrize("damage,what,scale", [
    ("truncate", "truncated", 2.5),
    ("flip", "does not match its checksum", 3.5),
    ("delete", "is missing", 4.5),
    ("garble_manifest", "unreadable", 5.5),
])
def test_damaged_entry_is_rebuilt_with_one_warning(cache, damage, what, scale):
    func, manifest, lib = _first_build(scale)
    if damage == "truncate":
        _truncate(lib)
    elif damage == "flip":
        _flip_a_byte(lib)
    elif damage == "delete":
        os.unlink(lib)
    else:
        _garble(manifest)
    k, warned = _compile_recording(func)
    assert len(warned) == 1, [str(w.message) for w in warned]
    assert what in str(warned[0].message) and "rebuilt" in str(warned[0].message)
    assert not k.cache_hit
    _check(k, scale)
    # healed: the next compile is a clean hit
    k2, warned2 = _compile_recording(func)
    assert k2.cache_hit and not warned2
    _check(k2, scale)


def test_missing_manifest_is_a_plain_miss(cache):
    func, manifest, lib = _first_build(6.5)
    os.unlink(manifest)
    k, warned = _compile_recording(func)
    assert not k.cache_hit and not warned
    _check(k, 6.5)


def test_entry_that_does_not_load_is_rebuilt(cache):
    """A file with a valid checksum that dlopen refuses (e.g. a cache copied from another
    machine) is dropped and rebuilt, with one warning."""
    func, manifest, lib = _first_build(7.5)
    junk = b"not a shared library" * 10
    with open(lib, "wb") as f:
        f.write(junk)
    lines = open(manifest).read().splitlines()
    lines = [ln if not ln.startswith("file .so ") else
             " ".join(ln.split()[:3] + [str(len(junk)), tilelang._tl.content_hash(junk.decode())])
             for ln in lines]
    with open(manifest, "w") as f:
        f.write("\n".join(lines) + "\n")
    k, warned = _compile_recording(func)
    assert len(warned) == 1 and "could not be loaded" in str(warned[0].message)
    _check(k, 7.5)
    k2, warned2 = _compile_recording(func)
    assert k2.cache_hit and not warned2


TRUNCATED_SCRIPT = textwrap.dedent('''
    import sys
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def axpy(X: T.Tensor((37,), "float32"), Y: T.Tensor((37,), "float32")):
        with T.Kernel(T.ceildiv(37, 16), threads=16) as bx:
            for i in T.Parallel(16):
                if bx * 16 + i < 37:
                    Y[bx * 16 + i] = Y[bx * 16 + i] + 8.5 * X[bx * 16 + i]

    k = tilelang.compile(axpy, target="cpu")
    x = np.arange(37, dtype=np.float32)
    y = np.ones(37, dtype=np.float32)
    k(x, y)
    assert np.array_equal(y, 1 + 8.5 * x), y
    print("HIT", k.cache_hit)
    if len(sys.argv) > 1:
        # as a crash or a full disk would leave it (after the library is closed: a mapped
        # file that shrinks would crash this process)
        path = k.library_path
        del k
        import gc
        gc.collect()
        with open(path, "r+b") as f:
            f.truncate(64)
''')


def _run(script, cache_dir, *args, extra_env=None):
    env = dict(os.environ, TILELANG_CACHE_DIR=str(cache_dir), TILELANG_PRINT_ON_COMPILATION="0")
    env.pop("TILELANG_DISABLE_CACHE", None)
    env.update(extra_env or {})
    return subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                          timeout=240)


def test_truncated_library_heals_across_processes(tmp_path):
    """The case of the issue: a process leaves a truncated .so behind (a full disk, a
    crash); later runs used to fail with 'file too short' until the cache was deleted."""
    script = tmp_path / "trunc.py"
    script.write_text(TRUNCATED_SCRIPT)
    cache = tmp_path / "cache"
    r = _run(script, cache, "truncate")
    assert r.returncode == 0 and "HIT False" in r.stdout, r.stderr
    r = _run(script, cache)
    assert r.returncode == 0, r.stderr
    assert "HIT False" in r.stdout
    assert r.stderr.count("TileLangCacheWarning") == 1 and "truncated" in r.stderr, r.stderr
    r = _run(script, cache)
    assert r.returncode == 0 and "HIT True" in r.stdout and "Warning" not in r.stderr, r.stderr


CONCURRENT_SCRIPT = textwrap.dedent('''
    import os, sys, time, warnings
    if len(sys.argv) < 3:
        warnings.simplefilter("error")  # any cache warning fails the run
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def poly(X: T.Tensor((1000,), "float64"), Y: T.Tensor((1000,), "float64")):
        with T.Kernel(T.ceildiv(1000, 64), threads=64) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < 1000:
                    Y[bx * 64 + i] = X[bx * 64 + i] * X[bx * 64 + i] * 0.5 + 3.0

    # start together: wait for the go file
    go = sys.argv[1]
    while not os.path.exists(go):
        time.sleep(0.005)
    for _ in range(3):
        k = tilelang.compile(poly, target="cpu")
        x = np.linspace(-2, 2, 1000)
        y = np.zeros(1000)
        k(x, y)
        assert np.array_equal(y, x * x * 0.5 + 3.0)
    print("OK", k.cache_hit, k.library_path)
''')


def test_concurrent_processes_build_the_same_kernel(tmp_path):
    script = tmp_path / "conc.py"
    script.write_text(CONCURRENT_SCRIPT)
    cache = tmp_path / "cache"
    go = tmp_path / "go"
    env = dict(os.environ, TILELANG_CACHE_DIR=str(cache), TILELANG_PRINT_ON_COMPILATION="0")
    env.pop("TILELANG_DISABLE_CACHE", None)
    procs = [subprocess.Popen([sys.executable, str(script), str(go)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    import time

    time.sleep(1.0)  # let them import
    go.write_text("go")
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and "OK" in out, err
    # no temporary files are left, and one verified entry (or a few identical ones)
    leftovers = [p for p in cache.rglob("*.tmp")]
    assert not leftovers, leftovers
    assert len(list(cache.rglob("*.entry"))) == 1
    r = subprocess.run([sys.executable, str(script), str(go)], env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0 and "OK True" in r.stdout, r.stderr

    # Damage the entry, then let four processes meet it at once: each either heals it
    # (one warning) or finds it healed by another; none fails or sees a bad library.
    lib = r.stdout.split()[-1]
    with open(lib, "r+b") as f:
        f.truncate(100)
    go.unlink()
    procs = [subprocess.Popen([sys.executable, str(script), str(go), "allow-warnings"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    time.sleep(1.0)
    go.write_text("go")
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and "OK" in out, err
        assert err.count("TileLangCacheWarning") <= 1, err
    r = subprocess.run([sys.executable, str(script), str(go)], env=env, capture_output=True, text=True,
                       timeout=240)
    assert r.returncode == 0 and "OK True" in r.stdout, r.stderr


def test_clear_cache(cache):
    func = _make_kernel(9.5)
    k1 = tilelang.compile(func, target="cpu")
    assert not k1.cache_hit
    assert tilelang.compile(func, target="cpu").cache_hit
    tilelang.cache.clear_cache()
    assert not (cache / "cpu").exists()
    _check(k1, 9.5)  # a loaded kernel keeps working
    k3, warned = _compile_recording(func)
    assert not k3.cache_hit and not warned
    _check(k3, 9.5)
    assert tilelang.clear_cache is tilelang.cache.clear_cache


def test_disable_cache_env(cache, monkeypatch):
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "1")
    assert not tilelang.is_cache_enabled()
    func = _make_kernel(10.5)
    k1 = tilelang.compile(func, target="cpu")
    k2 = tilelang.compile(func, target="cpu")
    assert not k1.cache_hit and not k2.cache_hit
    _check(k1, 10.5)
    _check(k2, 10.5)
    assert not cache.exists() or not any(cache.rglob("*.so"))
    monkeypatch.setenv("TILELANG_DISABLE_CACHE", "0")
    assert tilelang.is_cache_enabled()


def test_disable_and_enable_cache_functions(cache):
    func = _make_kernel(11.5)
    try:
        tilelang.disable_cache()
        assert not tilelang.is_cache_enabled()
        assert not tilelang.compile(func, target="cpu").cache_hit
        assert not tilelang.compile(func, target="cpu").cache_hit
    finally:
        tilelang.enable_cache()
    assert tilelang.is_cache_enabled()
    assert not tilelang.compile(func, target="cpu").cache_hit
    assert tilelang.compile(func, target="cpu").cache_hit


KEY_SCRIPT = textwrap.dedent('''
    import sys
    import tilelang
    from tilelang import _tl, env
    src = "extern \\"C\\" int k(const void*) { return 0; }\\n"
    path, hit, _ = _tl.build_cpu(src, sys.argv[1], sys.argv[2], sys.argv[3:])
    print("HIT", hit, path)
''')


def test_key_covers_headers_compiler_and_flags(tmp_path):
    """Each run is a new process (header hashes and compiler identities are computed once
    per process)."""
    import shutil

    from tilelang import env

    headers = tmp_path / "headers"
    shutil.copytree(env.template_dir(), headers)
    script = tmp_path / "key.py"
    script.write_text(KEY_SCRIPT)
    cache = tmp_path / "cache"

    def build(*flags, extra_env=None):
        r = _run(script, cache, str(cache), str(headers), *flags, extra_env=extra_env)
        assert r.returncode == 0, r.stderr
        return r.stdout.split()[1] == "True"

    assert not build()
    assert build()
    # editing a header the generated code may include
    with open(headers / "math.h", "a") as f:
        f.write("\n// edited\n")
    assert not build()
    assert build()
    # a new header in the folder
    (headers / "extra.h").write_text("// new\n")
    assert not build()
    # flags
    assert not build("-DX=1")
    assert build("-DX=1")
    # another compiler command (the same compiler under another name counts as another)
    cxx = shutil.which("g++") or shutil.which("c++")
    assert not build(extra_env={"CXX": cxx})
    assert build(extra_env={"CXX": cxx})
    # include paths given through the environment
    assert not build(extra_env={"CPATH": str(tmp_path)})


def test_key_covers_the_headers_shared_with_cuda(tmp_path):
    """The CPU headers include float8.h and subbyte.h from the folder above theirs: editing
    one of those must not hand back a library built against the old text."""
    import shutil
    from pathlib import Path

    from tilelang import env

    tl = tmp_path / "tl"
    shutil.copytree(Path(env.template_dir()).parent, tl)
    script = tmp_path / "key.py"
    script.write_text(KEY_SCRIPT)
    cache = tmp_path / "cache"

    def build():
        r = _run(script, cache, str(cache), str(tl / "cpu"))
        assert r.returncode == 0, r.stderr
        return r.stdout.split()[1] == "True"

    assert not build()
    assert build()
    with open(tl / "subbyte.h", "a") as f:
        f.write("\n// edited\n")
    assert not build()
    assert build()


def _cuda_compiler():
    from tilelang.jit.cuda_backend import _search_dirs

    return tilelang._tl.find_cuda_compiler(_search_dirs())


def _compile_cuda_recording(func):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        k = tilelang.compile(func, target="cuda -arch=sm_80")
    return k, [w for w in caught if issubclass(w.category, TileLangCacheWarning)]


@pytest.mark.parametrize("damage", ["truncate", "flip", "log"])
def test_damaged_cubin_is_rebuilt_with_one_warning(cache, damage):
    """The CUDA cache (cubin + ptxas log) heals the same way; compiling needs NVRTC or
    nvcc, not a GPU."""
    ok, why = _cuda_compiler()
    if not ok:
        pytest.skip(f"no CUDA compiler: {why}")
    func = _make_kernel({"truncate": 12.5, "flip": 13.5, "log": 14.5}[damage])
    k, warned = _compile_cuda_recording(func)
    assert not k.cache_hit and not warned
    cubin = k._cuda.cubin_path
    folder, name = os.path.split(cubin)
    key = name.split("-")[0]
    logs = [f for f in os.listdir(folder) if f.startswith(key + "-") and f.endswith(".log")]
    assert os.path.isfile(os.path.join(folder, key + ".entry")) and len(logs) == 1
    if damage == "truncate":
        _truncate(cubin)
    elif damage == "flip":
        _flip_a_byte(cubin)
    else:
        with open(os.path.join(folder, logs[0]), "a") as f:
            f.write("edited")
    k2, warned = _compile_cuda_recording(func)
    assert len(warned) == 1 and "the cubin was rebuilt" in str(warned[0].message), [str(w.message) for w in warned]
    assert not k2.cache_hit
    with open(k2._cuda.cubin_path, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    k3, warned = _compile_cuda_recording(func)
    assert k3.cache_hit and not warned and k3._cuda.cubin_path == k2._cuda.cubin_path


def test_unwritable_cache_folder_falls_back_with_one_warning(tmp_path, monkeypatch):
    """A cache folder that cannot be written (here: beneath a regular file, which even
    root cannot create) still compiles and runs, with one warning per process."""
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("TILELANG_CACHE_DIR", str(blocker / "cache"))
    monkeypatch.delenv("TILELANG_DISABLE_CACHE", raising=False)
    tilelang.cache._reported.clear()
    warned = []
    for scale in (15.5, 16.5):
        k, w = _compile_recording(_make_kernel(scale))
        warned += w
        assert not k.cache_hit
        _check(k, scale)
    assert len(warned) == 1 and "cannot be written" in str(warned[0].message), [str(w.message) for w in warned]


def test_same_damage_reported_once_per_process(cache):
    """Two compiles that meet the same damaged entry (e.g. from two threads) warn once."""
    func, manifest, lib = _first_build(17.5)
    _truncate(lib)
    msgs = ["tilelang: the cached file X is 100 bytes, 200 were written (truncated); the kernel library was rebuilt"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tilelang.cache.report_cache_warnings(msgs)
        tilelang.cache.report_cache_warnings(msgs)
    assert len(caught) == 1
    k, warned = _compile_recording(func)
    assert len(warned) == 1
    _check(k, 17.5)
