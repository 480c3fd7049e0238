"""Timing and checking kernels: ``kernel.get_profiler()``, ``tilelang.profiler.do_bench``."""
from __future__ import annotations

import enum
import statistics
import time

import numpy as np


class TensorSupplyType(enum.Enum):
    Integer = 1
    Uniform = 2
    Normal = 3
    Randn = 4
    Zero = 5
    One = 6
    Auto = 7


def do_bench(fn, warmup=5, rep=20, **_):
    """Median wall time of ``fn()`` in milliseconds (CPU timing; fn must be synchronous)."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


class Profiler:
    """Makes inputs for a kernel, times it and compares it with a reference."""

    def __init__(self, kernel, supply=None):
        self.kernel = kernel
        self.supply = supply or TensorSupplyType.Auto
        self._inputs = None

    def _make_inputs(self):
        from .jit.arguments import numpy_dtype

        rng = np.random.default_rng(0)
        inputs = []
        for i in self.kernel.in_idx:
            p = self.kernel.params[i]
            if not p.is_tensor:
                raise TypeError(f"the profiler cannot invent the scalar argument {p.name!r}")
            if any(isinstance(d, str) for d in p.dims):
                raise TypeError(f"the profiler cannot size the dynamic tensor {p.name!r}")
            dt = numpy_dtype(p.dtype)
            if self.supply in (TensorSupplyType.Zero,):
                a = np.zeros(p.dims)
            elif self.supply in (TensorSupplyType.One,):
                a = np.ones(p.dims)
            elif self.supply == TensorSupplyType.Integer or p.dtype.startswith(("int", "uint")):
                a = rng.integers(-2, 3, size=p.dims)
            elif self.supply == TensorSupplyType.Uniform:
                a = rng.uniform(-1, 1, size=p.dims)
            else:
                a = rng.standard_normal(size=p.dims)
            inputs.append(a.astype(dt))
        return inputs

    def inputs(self):
        if self._inputs is None:
            self._inputs = self._make_inputs()
        return self._inputs

    def do_bench(self, func=None, warmup=5, rep=20, n_warmup=None, n_repeat=None, **_):
        args = self.inputs()
        fn = (lambda: func(*args)) if func is not None else (lambda: self.kernel(*args))
        return do_bench(fn, warmup=n_warmup or warmup, rep=n_repeat or rep)

    def assert_allclose(self, reference_program, atol=1e-2, rtol=1e-2, max_mismatched_ratio=0.0):
        args = self.inputs()
        out = self.kernel(*args)
        ref = reference_program(*args)
        outs = out if isinstance(out, (list, tuple)) else [out]
        refs = ref if isinstance(ref, (list, tuple)) else [ref]
        for o, r in zip(outs, refs):
            np.testing.assert_allclose(np.asarray(o, dtype=np.float64), np.asarray(r, dtype=np.float64),
                                       atol=atol, rtol=rtol)
