"""Autotuning: compile a kernel for each configuration, check it, time it, keep the fastest.

    @tilelang.autotune(configs=[{"block_M": 64}, {"block_M": 128}], warmup=10, rep=20)
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128): ...

    kernel = matmul(1024, 1024, 1024)   # tunes once per argument tuple, returns the best
    kernel.config, kernel.latency       # what won, and its time in ms

In eager style (a @tilelang.jit function called with tensors) the call tunes on those
tensors and returns the best kernel's outputs. A configuration that does not compile, or
whose result differs from `ref_prog`, is skipped and reported; progress is printed to
stderr, one line per configuration. On the GPU times are CUDA-event medians with the L2
flushed; on the CPU, wall-clock medians (tilelang.profiler.do_bench).
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from ..errors import TileLangRuntimeError
from ..jit import JITImpl, compile as _compile, jit as _jit
from ..profiler import TensorSupplyType, do_bench
from .capture import AutotuneInputsCapture, get_autotune_inputs, set_autotune_inputs  # noqa: F401


@dataclass
class AutotuneResult:
    latency: float
    config: dict
    ref_latency: float | None
    libcode: str
    func: Any
    kernel: Any


def _key_of(args, kwargs):
    def part(v):
        if hasattr(v, "shape") and hasattr(v, "dtype"):
            return ("tensor", tuple(v.shape), str(v.dtype))
        try:
            hash(v)
            return v
        except TypeError:
            return repr(v)

    return tuple(part(a) for a in args), tuple(sorted((k, part(v)) for k, v in kwargs.items()))


class AutoTunedFunction:
    """A @tilelang.jit function whose tunable parameters come from `configs`."""

    def __init__(self, jitted: JITImpl, configs, warmup, rep, supply_type, ref_prog, supply_prog, rtol, atol,
                 max_mismatched_ratio, skip_check, manual_check_prog, verbose):
        self.jitted = jitted
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.supply_type = supply_type
        self.ref_prog, self.supply_prog = ref_prog, supply_prog
        self.rtol, self.atol, self.max_mismatched_ratio = rtol, atol, max_mismatched_ratio
        self.skip_check, self.manual_check_prog = skip_check, manual_check_prog
        self.verbose = verbose
        self._best = {}
        self.__name__ = getattr(jitted, "__name__", getattr(jitted.func, "__name__", "kernel"))
        self.__doc__ = getattr(jitted.func, "__doc__", None)

    def _configs_for(self, args, kwargs):
        configs = self.configs(*args, **kwargs) if callable(self.configs) else self.configs
        configs = list(configs or [])
        if not configs:
            raise ValueError(f"autotune of {self.__name__}: no configurations to try")
        for c in configs:
            if not isinstance(c, dict):
                raise TypeError(f"autotune of {self.__name__}: each configuration must be a dict of parameter "
                                f"values, got {type(c).__name__}")
        return configs

    def _compile(self, args, kwargs, config):
        params = {k: v for k, v in config.items() if k != "pass_configs"}
        pass_configs = dict(self.jitted.pass_configs or {}, **(config.get("pass_configs") or {}))
        if self.jitted.is_lazy_mode():
            prim = self.jitted.func(*args, **dict(kwargs, **params))
            return _compile(prim, out_idx=self.jitted.out_idx, target=self.jitted.target, pass_configs=pass_configs,
                            compile_flags=self.jitted.compile_flags)
        saved = self.jitted.pass_configs
        self.jitted.pass_configs = pass_configs
        try:
            return self.jitted.compile(*args, **dict(kwargs, **params))
        finally:
            self.jitted.pass_configs = saved

    def _measure(self, kernel, eager_inputs):
        profiler = kernel.get_profiler(self.supply_type)
        captured = get_autotune_inputs()
        if eager_inputs is not None:
            profiler._inputs = list(eager_inputs)
        elif captured is not None:
            n_in = len(kernel.in_idx)
            if len(captured) != n_in:
                raise TileLangRuntimeError(f"set_autotune_inputs gave {len(captured)} tensor(s) but the kernel takes "
                                           f"{n_in} input(s)")
            profiler._inputs = list(captured)
        elif self.supply_prog is not None:
            profiler._inputs = list(self.supply_prog(kernel.params))
        ref_latency = None
        if self.ref_prog is not None and not self.skip_check:
            profiler.assert_allclose(self.ref_prog, atol=self.atol, rtol=self.rtol,
                                     max_mismatched_ratio=self.max_mismatched_ratio)
        if self.manual_check_prog is not None and not self.skip_check:
            self.manual_check_prog(kernel(*profiler.inputs()), self.ref_prog(*profiler.inputs())
                                   if self.ref_prog is not None else None)
        latency = profiler.do_bench(warmup=self.warmup, rep=self.rep)
        if self.ref_prog is not None:
            ref_latency = profiler.do_bench(func=self.ref_prog, warmup=self.warmup, rep=self.rep)
        return latency, ref_latency

    def tune(self, *args, **kwargs) -> AutotuneResult:
        key = _key_of(args, kwargs)
        if key in self._best:
            return self._best[key]
        configs = self._configs_for(args, kwargs)
        eager = not self.jitted.is_lazy_mode()
        best, failures = None, []
        t0 = time.perf_counter()
        for n, config in enumerate(configs, 1):
            try:
                kernel = self._compile(args, kwargs, config)
                eager_inputs = None
                if eager:
                    eager_inputs = [a for a in args if hasattr(a, "shape")] + \
                                   [v for v in kwargs.values() if hasattr(v, "shape")]
                latency, ref_latency = self._measure(kernel, eager_inputs)
            except Exception as e:  # noqa: BLE001 - a failing configuration is reported and skipped
                reason = str(e).splitlines()[0] if str(e) else type(e).__name__
                failures.append((config, f"{type(e).__name__}: {reason}"))
                self._say(f"config {n}/{len(configs)} {config}: skipped ({type(e).__name__}: {reason[:160]})")
                continue
            self._say(f"config {n}/{len(configs)} {config}: {latency:.4f} ms")
            if best is None or latency < best.latency:
                best = AutotuneResult(latency, config, ref_latency, kernel.get_kernel_source(),
                                      getattr(kernel, "func", None), kernel)
        if best is None:
            lines = "\n".join(f"  {c}: {why}" for c, why in failures)
            raise TileLangRuntimeError(f"autotune of {self.__name__}: no configuration compiled and passed its "
                                       f"checks:\n{lines}")
        self._say(f"best {best.config}: {best.latency:.4f} ms ({len(configs)} configs in "
                  f"{time.perf_counter() - t0:.1f} s)")
        best.kernel.latency, best.kernel.config, best.kernel.ref_latency = best.latency, best.config, best.ref_latency
        self._best[key] = best
        return best

    def __call__(self, *args, **kwargs):
        result = self.tune(*args, **kwargs)
        if self.jitted.is_lazy_mode():
            return result.kernel
        # Eager style: run the winner on the given tensors.
        return self.jitted(*args, **dict(kwargs, **{k: v for k, v in result.config.items() if k != "pass_configs"}))

    def _say(self, line):
        if self.verbose:
            print(f"[tilelang.autotune] {self.__name__}: {line}", file=sys.stderr, flush=True)


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100, supply_type=TensorSupplyType.Auto,
             ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, do_not_specialize=None, early_stop=False,
             early_stop_factor=2.0, verbose=True):
    """Decorator stacked above @tilelang.jit (see the module comment). `configs` is a list of
    dicts of parameter values (optionally with "pass_configs"), or a function of the call's
    arguments returning one."""
    def wrap(f):
        jitted = f if isinstance(f, JITImpl) else _jit(f)
        return AutoTunedFunction(jitted, configs, warmup, rep, supply_type, ref_prog, supply_prog, rtol, atol,
                                 max_mismatched_ratio, skip_check, manual_check_prog, verbose)

    return wrap(func) if func is not None else wrap


class AutoTuner:
    """The object form: AutoTuner.from_kernel(fn, configs).set_compile_args(...)
    .set_profile_args(...).run() -> AutotuneResult."""

    def __init__(self, fn, configs):
        self.fn, self.configs = fn, configs
        self.compile_args, self.profile_args = {}, {}

    @classmethod
    def from_kernel(cls, kernel, configs):
        return cls(kernel, configs)

    def set_compile_args(self, out_idx=None, target="auto", execution_backend=None, target_host=None,
                         verbose=False, pass_configs=None):
        self.compile_args = dict(out_idx=out_idx, target=None if target == "auto" else target,
                                 pass_configs=pass_configs)
        return self

    def set_profile_args(self, warmup=25, rep=100, timeout=30, supply_type=TensorSupplyType.Auto, ref_prog=None,
                         supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
                         manual_check_prog=None, cache_input_tensors=False, backend="event"):
        self.profile_args = dict(warmup=warmup, rep=rep, supply_type=supply_type, ref_prog=ref_prog,
                                 supply_prog=supply_prog, rtol=rtol, atol=atol,
                                 max_mismatched_ratio=max_mismatched_ratio, skip_check=skip_check,
                                 manual_check_prog=manual_check_prog)
        return self

    def run(self, warmup=None, rep=None, timeout=None, *args, **kwargs) -> AutotuneResult:
        jitted = self.fn if isinstance(self.fn, JITImpl) else _jit(self.fn, **{
            k: v for k, v in self.compile_args.items() if v is not None})
        profile = dict(self.profile_args)
        if warmup is not None:
            profile["warmup"] = warmup
        if rep is not None:
            profile["rep"] = rep
        tuned = AutoTunedFunction(jitted, self.configs, profile.get("warmup", 25), profile.get("rep", 100),
                                  profile.get("supply_type", TensorSupplyType.Auto), profile.get("ref_prog"),
                                  profile.get("supply_prog"), profile.get("rtol", 1e-2), profile.get("atol", 1e-2),
                                  profile.get("max_mismatched_ratio", 0.01), profile.get("skip_check", False),
                                  profile.get("manual_check_prog"), True)
        return tuned.tune()


__all__ = ["autotune", "AutoTuner", "AutotuneResult", "do_bench", "set_autotune_inputs", "get_autotune_inputs"]
