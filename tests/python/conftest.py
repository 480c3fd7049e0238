"""Shared fixtures and helpers for the Python test suite (target: cpu).

Run with:  TILELANG_CACHE_DIR=/tmp/tests-cache python -m pytest tests/python
"""
from __future__ import annotations

import inspect
import os
import sys

os.environ.setdefault("TILELANG_CACHE_DIR", "/tmp/tests-cache")
os.environ.setdefault("TILELANG_PRINT_ON_COMPILATION", "0")
# kernels compiled without an explicit target (e.g. @tilelang.jit) run on the CPU too,
# even on a machine with a GPU
os.environ.setdefault("TILELANG_DEFAULT_TARGET", "cpu")

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import tilelang  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))

# dtype name -> numpy dtype
NP = {
    "float16": np.dtype(np.float16),
    "bfloat16": np.dtype(ml_dtypes.bfloat16),
    "float8_e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn),
    "float8_e5m2": np.dtype(ml_dtypes.float8_e5m2),
    "float32": np.dtype(np.float32),
    "float64": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8),
    "uint16": np.dtype(np.uint16),
    "uint32": np.dtype(np.uint32),
    "int64": np.dtype(np.int64),
}

# relative tolerance (vs. the max |reference|) for results rounded to each dtype
RTOL = {"float16": 2e-3, "bfloat16": 1.6e-2, "float32": 1e-5, "float64": 1e-12, "int8": 0, "int32": 0, "int64": 0}


@pytest.fixture
def rng(request):
    """A generator seeded per test (stable across runs, different between tests)."""
    seed = sum(map(ord, request.node.nodeid)) % (2**32)
    return np.random.default_rng(seed)


def compile_cpu(func, out_idx=None, **kw):
    """tilelang.compile for the CPU target."""
    return tilelang.compile(func, out_idx=out_idx, target="cpu", **kw)


def rand(rng, shape, dtype="float32", low=-4, high=5):
    """Fresh non-zero-ish random data: normal floats, small ints for integer types."""
    dt = NP[str(dtype)]
    if np.issubdtype(dt, np.integer):
        return rng.integers(low, high, size=shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def poison(shape, dtype="float32"):
    """An output array filled with NaN (floats) or a sentinel (ints): unwritten spots show."""
    dt = NP[str(dtype)]
    if np.issubdtype(dt, np.integer):
        return np.full(shape, np.iinfo(dt).min + 7, dtype=dt)
    return np.full(shape, np.nan, dtype=dt)


def f64(x):
    return np.asarray(x).astype(np.float64)


def assert_close(got, ref, dtype="float32", rtol=None):
    """Compares in float64; the tolerance scales with the reference's magnitude."""
    got, ref = f64(got), f64(ref)
    assert got.shape == ref.shape, f"shape {got.shape} != {ref.shape}"
    assert not np.isnan(got).any() or np.isnan(ref).any(), "output has NaN (unwritten elements?)"
    tol = RTOL[str(dtype)] if rtol is None else rtol
    scale = max(1.0, float(np.nanmax(np.abs(ref)))) if ref.size else 1.0
    np.testing.assert_allclose(got, ref, rtol=0, atol=tol * scale + 1e-300, equal_nan=True)


def marker_line(func, marker="# ERR-HERE"):
    """The absolute line number (in func's file) of the line carrying `marker`."""
    lines, start = inspect.getsourcelines(func)
    hits = [start + i for i, ln in enumerate(lines) if marker in ln]
    assert len(hits) == 1, f"expected one {marker!r} line in {func.__name__}, got {hits}"
    return hits[0]


def refusal(tmp_path, source, message):
    """Loads `source` (a module defining a kernel) from a file, expecting the TileLangCompileError
    matching `message` while its @T.prim_func is parsed; returns the error (its .line names the
    user's line)."""
    import importlib.util

    from tilelang.errors import TileLangCompileError

    path = tmp_path / "k.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("k", path)
    with pytest.raises(TileLangCompileError, match=message) as info:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
    return info.value


def source_line(file, line):
    import linecache

    return linecache.getline(file, line).rstrip("\n")


# A test of the CPU target's own behaviour (a CPU-only refusal or run-time check, a process
# without torch), which TILELANG_TEST_CUDA=1 below would send to CUDA: skipped there.
cpu_target_only = pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") == "1",
                                     reason="checks the CPU target itself (TILELANG_TEST_CUDA sends kernels to CUDA)")


# --------------------------------------------------------------------------------------
# TILELANG_TEST_CUDA=1 runs the whole suite on the CUDA target instead: every kernel
# compiled for the CPU is compiled for CUDA, numpy arguments travel to the GPU and back
# (in-place outputs included), so each CPU-target test also checks the CUDA path.
if os.environ.get("TILELANG_TEST_CUDA") == "1":
    import torch

    from tilelang.jit import kernel as _kernel_mod
    from tilelang.jit import target as _target_mod

    os.environ["TILELANG_DEFAULT_TARGET"] = "cuda"
    _parse = _target_mod.parse

    def _parse_as_cuda(t):
        r = _parse(t)
        arch = r.arch or os.environ.get("TILELANG_TEST_CUDA_ARCH")  # (compile-only triage without a GPU)
        return _target_mod.Target("cuda", arch) if r.kind in ("cpu", "auto", "cuda") else r

    _target_mod.parse = _parse_as_cuda

    # ml_dtypes types torch.from_numpy does not know: moved as raw bits of the same width
    _BITS = {"bfloat16": (np.int16, torch.bfloat16), "float8_e4m3fn": (np.uint8, torch.float8_e4m3fn),
             "float8_e5m2": (np.uint8, torch.float8_e5m2)}

    def _strided_to_torch(a):
        """A strided numpy view (T.StridedTensor tests) as a CUDA tensor with the same
        strides: the memory it spans is copied over and viewed with them."""
        itemsize = a.itemsize
        elem_strides = [s // itemsize for s in a.strides]
        span = 1 + sum((n - 1) * s for n, s in zip(a.shape, elem_strides))
        flat = np.lib.stride_tricks.as_strided(a, shape=(span,), strides=(itemsize,)).copy()
        return _to_torch(flat).as_strided(a.shape, elem_strides)

    def _to_torch(a, strided=False):
        if not isinstance(a, np.ndarray):
            return a
        if (strided and not a.flags.c_contiguous and a.size > 0 and a.ndim > 0
                and all(s > 0 and s % a.itemsize == 0 for s in a.strides)):
            return _strided_to_torch(a)
        a = np.ascontiguousarray(a)
        if a.dtype.name in _BITS:
            raw, tt = _BITS[a.dtype.name]
            return torch.from_numpy(a.view(raw)).view(tt).cuda()
        return torch.from_numpy(a).cuda()

    def _to_numpy(t, like=None):
        if not isinstance(t, torch.Tensor):
            return t
        t = t.cpu()
        for name, (raw, tt) in _BITS.items():
            if t.dtype == tt:
                return t.view(getattr(torch, np.dtype(raw).name)).numpy().view(NP[name])
        return t.numpy()

    _call = _kernel_mod.JITKernel.__call__
    # the call without the numpy conversion, for tests of what a CUDA kernel does with a
    # numpy array (tests/python/test_bad_input_gpu.py)
    _kernel_mod.JITKernel._call_unconverted = _call

    def _call_on_gpu(self, *args):
        if self.target != "cuda" or not any(isinstance(a, np.ndarray) for a in args):
            # torch tensors (tests written for CUDA: CUDA graphs, torch.compile) go
            # straight through, without the synchronization below.
            return _call(self, *args)
        # a T.StridedTensor parameter keeps its argument's strides; others get contiguous copies
        strided = [self.params[i].strides is not None for i in self.in_idx]
        strided += [False] * (len(args) - len(strided))
        moved = [_to_torch(a, s) for a, s in zip(args, strided)]
        out = _call(self, *moved)
        torch.cuda.synchronize()
        for a, m in zip(args, moved):
            if isinstance(a, np.ndarray) and a.flags.writeable:
                a[...] = _to_numpy(m)
        if isinstance(out, list):
            return [_to_numpy(o) for o in out]
        return _to_numpy(out)

    _kernel_mod.JITKernel.__call__ = _call_on_gpu


    # Tests of CPU-only behaviour (numpy argument errors, the CPU target's aliases, tiles
    # sized at run time) do not apply to the CUDA run.
    _CPU_ONLY = {"test_target_aliases", "test_argument_errors", "test_dynamic_size_tile", "test_torch_tensors"}

    def pytest_collection_modifyitems(config, items):
        for item in items:
            # @pytest.mark.cpu_target: a test of the CPU target's own machinery (its library
            # cache, numpy argument errors, exported shared libraries).
            if item.originalname in _CPU_ONLY or item.name in _CPU_ONLY or item.get_closest_marker("cpu_target"):
                item.add_marker(pytest.mark.skip(reason="CPU-target behaviour"))
