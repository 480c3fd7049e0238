"""Autotuning: compile a kernel for each configuration, check it, time it, keep the fastest.

    @tilelang.autotune(configs=[{"block_M": 64}, {"block_M": 128}], warmup=10, rep=20)
    @tilelang.jit(out_idx=[-1])
    def matmul(M, N, K, block_M=128): ...

    kernel = matmul(1024, 1024, 1024)   # tunes once per argument tuple, returns the best
    kernel.config, kernel.latency       # what won, and its time in ms

In eager style (a @tilelang.jit function called with tensors) the call tunes on those
tensors and returns the best kernel's outputs. A configuration that does not compile, or
whose result differs from `ref_prog`, is skipped and reported; progress is printed to
stderr. On the GPU times are CUDA-event medians with the L2 flushed; on the CPU,
wall-clock medians (tilelang.profiler.do_bench).

At scale (docs/export.md): configurations are compiled in parallel in forked worker
processes that fill the disk kernel cache (then loaded on a thread pool), then timed one
at a time; `timeout`
bounds each compilation, `time_budget` the whole tuning, and with `early_stop` a
configuration whose first quick timing is `early_stop_factor` times the best so far is
not timed further. The result is cached on disk (``$TILELANG_CACHE_DIR/autotune``) per
(kernel source, arguments, configurations, target and device), so another process picks
the best configuration without tuning again: it compiles (or loads) that one only.
"""
from __future__ import annotations

import concurrent.futures as _futures
import copy
import hashlib
import inspect
import json
import math
import os
import platform
import sys
import tempfile
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


_FALSE = ("0", "", "false", "no", "off")


def _env_flag(name, default: bool = False) -> bool:
    v = os.environ.get(name)
    return default if v is None else v.strip().lower() not in _FALSE


def default_workers(n_configs: int) -> int:
    """Compile threads: TILELANG_AUTO_TUNING_CPU_COUNTS if set, else CPU_UTILITIES (0.9) of the
    cores, at most TILELANG_AUTO_TUNING_MAX_CPU_COUNT, never more than the configurations."""
    cores = os.cpu_count() or 1
    if os.environ.get("TILELANG_AUTO_TUNING_CPU_COUNTS"):
        n = int(os.environ["TILELANG_AUTO_TUNING_CPU_COUNTS"])
    else:
        n = max(1, math.ceil(cores * float(os.environ.get("TILELANG_AUTO_TUNING_CPU_UTILITIES", "0.9"))))
    if os.environ.get("TILELANG_AUTO_TUNING_MAX_CPU_COUNT"):
        n = min(n, int(os.environ["TILELANG_AUTO_TUNING_MAX_CPU_COUNT"]))
    return max(1, min(n, n_configs))


class _Progress:
    """A progress bar on stderr: tqdm when installed, else one updating line (one line per
    step when stderr is not a terminal)."""

    def __init__(self, total, desc, enabled):
        self.total, self.desc, self.enabled, self.n = total, desc, enabled, 0
        self._bar = None
        self._tty = enabled and sys.stderr.isatty()
        if enabled:
            try:
                from tqdm import tqdm

                self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=True)
            except ImportError:
                pass

    def update(self, note=""):
        self.n += 1
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(1)
            if note:
                self._bar.set_postfix_str(note[:60])
            return
        width = 24
        filled = width * self.n // max(self.total, 1)
        line = f"{self.desc} [{'#' * filled}{'.' * (width - filled)}] {self.n}/{self.total}" + (f" {note}" if note else "")
        if self._tty:
            print("\r" + line, end="" if self.n < self.total else "\n", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)

    def close(self):
        if self._bar is not None:
            self._bar.close()
        elif self._tty and self.enabled and self.n < self.total:
            print(file=sys.stderr, flush=True)


class AutoTunedFunction:
    """A @tilelang.jit function whose tunable parameters come from `configs`."""

    def __init__(self, jitted: JITImpl, configs, warmup, rep, supply_type, ref_prog, supply_prog, rtol, atol,
                 max_mismatched_ratio, skip_check, manual_check_prog, verbose, timeout=100, early_stop=False,
                 early_stop_factor=2.0, time_budget=None, max_workers=None, cache_results=True,
                 do_not_specialize=None):
        self.jitted = jitted
        self.configs = configs
        self.warmup, self.rep = warmup, rep
        self.supply_type = supply_type
        self.ref_prog, self.supply_prog = ref_prog, supply_prog
        self.rtol, self.atol, self.max_mismatched_ratio = rtol, atol, max_mismatched_ratio
        self.skip_check, self.manual_check_prog = skip_check, manual_check_prog
        self.verbose = verbose
        self.timeout, self.time_budget = timeout, time_budget
        self.early_stop, self.early_stop_factor = early_stop, early_stop_factor
        self.max_workers = max_workers
        self.cache_results = cache_results
        # What the last tune() did: configurations compiled and timed, whether the result
        # came from the disk cache, and the seconds spent compiling / timing.
        self.stats = {}
        # the tuning results per call (argument tuple less `do_not_specialize`); upstream's
        # name for it is _tuner_cache (its tests clear it and count its entries)
        self._best = {}
        self.__name__ = getattr(jitted, "__name__", getattr(jitted.func, "__name__", "kernel"))
        self.__doc__ = getattr(jitted.func, "__doc__", None)
        self.do_not_specialize = _names_of(do_not_specialize, self)

    @property
    def _tuner_cache(self):
        return self._best

    @property
    def jit_impl(self):  # upstream's attribute name for the @tilelang.jit object
        return self.jitted

    def _tuning_key(self, args, kwargs):
        """What one tuning is remembered by: the call's arguments, positional and keyword
        forms alike when `do_not_specialize` names some, less those."""
        if not self.do_not_specialize:
            return _key_of(args, kwargs)
        sig = self.jitted.signature
        known = {k: v for k, v in kwargs.items() if k in sig.parameters}
        try:
            bound = sig.bind_partial(*args, **known)
        except TypeError as e:
            raise TypeError(f"{self.__name__}(): {e}") from None
        bound.apply_defaults()
        values = dict(bound.arguments, **{k: v for k, v in kwargs.items() if k not in sig.parameters})
        return _key_of((), {k: v for k, v in values.items() if k not in self.do_not_specialize})

    def _given_tunables(self, args, kwargs, configs):
        """The tunable parameters (keys of the configurations) the call gives itself:
        then nothing is tuned, the call's values are compiled as they are (as upstream)."""
        names = {k for c in configs for k in c if k != "pass_configs"}
        params = list(self.jitted.signature.parameters)
        given = {k: v for k, v in kwargs.items() if k in names}
        for i, v in enumerate(args[:len(params)]):
            if params[i] in names:
                given[params[i]] = v
        return given

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
        """Compiles one configuration; safe to call from several threads at once."""
        params = {k: v for k, v in config.items() if k != "pass_configs"}
        pass_configs = dict(self.jitted.pass_configs or {}, **(config.get("pass_configs") or {}))
        if self.jitted.is_lazy_mode():
            prim = self.jitted.func(*args, **dict(kwargs, **params))
            return _compile(prim, out_idx=self.jitted.out_idx, target=self.jitted.target, pass_configs=pass_configs,
                            compile_flags=self.jitted.compile_flags)
        # Eager style: a private copy of the @jit object per configuration (its kernel table
        # and pass configs are not shared between compiling threads).
        jitted = copy.copy(self.jitted)
        jitted.pass_configs = pass_configs
        jitted._kernels = {}
        jitted._runtime_scalars = set(self.jitted._runtime_scalars)
        return jitted.compile(*args, **dict(kwargs, **params))

    def _warm_in_processes(self, args, kwargs, configs, workers, deadline):
        """Compiles the configurations in `workers` forked processes (each takes every
        workers-th one) so that their kernels land in the disk cache. Returns how many
        processes ran; 0 when that is not possible (no fork, the cache disabled, or
        TILELANG_AUTOTUNE_PROCESSES=0), and phase 1 then compiles on threads alone. A child
        never touches the GPU: the CUDA arch is read here, before forking, and children
        only compile. Failures in a child are ignored; phase 1 meets and reports them."""
        from .. import env
        from ..jit import cuda_backend

        if not hasattr(os, "fork") or not env.is_cache_enabled() or not _env_flag(
                "TILELANG_AUTOTUNE_PROCESSES", True):
            return 0
        device = cuda_backend._current_device()
        try:
            cuda_backend.default_arch()  # cached, so children inherit it without CUDA calls
        except Exception:  # noqa: BLE001 - no GPU: CPU kernels, or an explicit arch
            pass
        pids = []
        import warnings

        for w in range(workers):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
                pid = os.fork()
            if pid == 0:  # the child: compile its share, then leave without cleanup
                code = 0
                try:
                    # torch must not initialize CUDA in a forked child: the device is known.
                    cuda_backend._current_device = lambda: device
                    devnull = os.open(os.devnull, os.O_WRONLY)
                    os.dup2(devnull, 1)
                    os.dup2(devnull, 2)
                    for i in range(w, len(configs), workers):
                        try:
                            self._compile(args, kwargs, configs[i])
                        except BaseException:  # noqa: BLE001 - phase 1 reports it
                            pass
                except BaseException:  # noqa: BLE001
                    code = 1
                os._exit(code)
            pids.append(pid)
        limit = None if self.timeout is None else time.perf_counter() + float(self.timeout) * max(
            1, math.ceil(len(configs) / workers))
        if deadline is not None:
            limit = deadline if limit is None else min(limit, deadline)
        pending = set(pids)
        while pending:
            for pid in list(pending):
                done, _ = os.waitpid(pid, os.WNOHANG)
                if done:
                    pending.discard(pid)
            if pending and limit is not None and time.perf_counter() > limit:
                for pid in pending:
                    try:
                        os.kill(pid, 9)
                        os.waitpid(pid, 0)
                    except OSError:
                        pass
                break
            if pending:
                time.sleep(0.01)
        return len(pids)

    def _profiler(self, kernel, eager_inputs):
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
        else:
            scalars = [kernel.params[i].name for i in kernel.in_idx if not kernel.params[i].is_tensor]
            if scalars:
                raise _NeedsInputs(
                    f"autotune of {self.__name__}: the kernel takes scalar argument(s) {', '.join(scalars)}, "
                    "which the tuner cannot invent; give example inputs with "
                    "`with tilelang.autotuner.set_autotune_inputs(...)` around the call, or supply_prog=")
            # Configurations of one kernel take the same inputs: made once (random data for
            # two 4096 x 4096 operands takes about a second), then shared, as upstream does.
            key = tuple((kernel.params[i].dtype, tuple(kernel.params[i].dims)) for i in kernel.in_idx)
            cache = self.__dict__.setdefault("_shared_inputs", {})
            if key not in cache:
                cache.clear()  # one set at a time: a new shape replaces the last
                cache[key] = profiler.inputs()
            profiler._inputs = cache[key]
        return profiler

    def _measure(self, kernel, eager_inputs, best_latency=None):
        """(latency, ref_latency, stopped_early)."""
        profiler = self._profiler(kernel, eager_inputs)
        if self.ref_prog is not None and not self.skip_check:
            profiler.assert_allclose(self.ref_prog, atol=self.atol, rtol=self.rtol,
                                     max_mismatched_ratio=self.max_mismatched_ratio)
        if self.manual_check_prog is not None and not self.skip_check:
            self.manual_check_prog(kernel(*profiler.inputs()), self.ref_prog(*profiler.inputs())
                                   if self.ref_prog is not None else None)
        if self.early_stop and best_latency is not None:
            # A quick look first: a configuration far behind the best is not timed in full.
            probe = profiler.do_bench(n_warmup=1, n_repeat=3)
            if probe > self.early_stop_factor * best_latency:
                return probe, None, True
        latency = profiler.do_bench(warmup=self.warmup, rep=self.rep)
        return latency, None, False

    # ------------------------------------------------------------------ the disk cache

    def _cache_key(self, args, kwargs, configs, eager):
        from .. import __version__
        from ..jit.target import resolve

        func = self.jitted.func
        try:
            source = inspect.getsource(func)
        except (OSError, TypeError):
            return None
        tensors = [a for a in list(args) + list(kwargs.values()) if hasattr(a, "shape") and hasattr(a, "dtype")]
        try:
            t = resolve(self.jitted.target, tensors)
        except Exception:  # noqa: BLE001 - no target to key on: no caching
            return None
        target = t.kind if t.kind == "cpu" else f"cuda:{t.arch}"
        if t.kind == "cpu":
            device = f"{platform.machine()} {_cpu_model()} cores={os.cpu_count()}"
        else:
            from .. import _tl

            try:
                device = f"{_tl.device_arch(0)} sms={_tl.multiprocessor_count(0)}"
            except Exception:  # noqa: BLE001 - compiling for a named arch without a GPU
                device = "no-gpu"
        parts = ["tilelang-autotune-1", __version__, getattr(func, "__module__", ""), func.__qualname__, source,
                 repr(_key_of(args, kwargs)),
                 repr([str(getattr(a, "device", "cpu")) for a in tensors]), repr(configs), target, device,
                 repr(self.jitted.out_idx), repr(sorted((str(getattr(k, "value", k)), repr(v))
                                                        for k, v in (self.jitted.pass_configs or {}).items())),
                 repr(self.jitted.compile_flags), repr(eager), _inputs_id(get_autotune_inputs()),
                 repr(getattr(self.supply_type, "name", self.supply_type)),
                 # a different reference or check tolerance must check (so tune) again
                 _callable_id(self.ref_prog), _callable_id(self.manual_check_prog), _callable_id(self.supply_prog),
                 repr((self.skip_check, self.rtol, self.atol, self.max_mismatched_ratio))]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def _cache_enabled(self):
        from .. import env

        return self.cache_results and env.is_cache_enabled() and not _env_flag("TILELANG_AUTO_TUNING_DISABLE_CACHE")

    @staticmethod
    def _cache_path(key):
        from .. import env

        return os.path.join(env.cache_dir(), "autotune", key[:2], key + ".json")

    def _cache_load(self, key, configs):
        try:
            with open(self._cache_path(key)) as f:
                data = json.load(f)
            index = int(data["best_index"])
            if data.get("config_repr") != repr(configs[index]):
                return None
            return data
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            return None

    def _cache_store(self, key, configs, best_index, best, results):
        path = self._cache_path(key)
        data = {"best_index": best_index, "config_repr": repr(configs[best_index]), "latency": best.latency,
                "ref_latency": best.ref_latency, "kernel": self.__name__,
                "results": [{"index": i, "config": repr(configs[i]), "latency": lat, "error": err}
                            for i, lat, err in results],
                "created": time.time()}
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".tmp-")
            with os.fdopen(fd, "w") as f:
                json.dump(data, f, indent=1)
            os.replace(tmp, path)
        except OSError:
            pass  # an unwritable cache only costs the next process a tuning

    # ------------------------------------------------------------------ tuning

    def _eager_inputs(self, args, kwargs):
        if self.jitted.is_lazy_mode():
            return None
        tensors = [a for a in args if hasattr(a, "shape")] + [v for v in kwargs.values() if hasattr(v, "shape")]
        # .compile(M=..., N=...) of an eager kernel gives no tensors: the profiler makes them
        return tensors or None

    def tune(self, *args, **kwargs) -> AutotuneResult:
        key = self._tuning_key(args, kwargs)
        if key in self._best:
            return self._best[key]
        configs = self._configs_for(args, kwargs)
        given = self._given_tunables(args, kwargs, configs)
        if given:
            # The call fixes tunable parameters: compiled with its values, not tuned.
            self._say(f"tunable parameter(s) {', '.join(sorted(given))} given by the call: compiled as given, "
                      "not tuned")
            kernel = self._compile(args, kwargs, {})
            result = AutotuneResult(None, dict(given), None, kernel.get_kernel_source(),
                                    getattr(kernel, "func", None), kernel)
            kernel.latency, kernel.config, kernel.ref_latency = None, result.config, None
            self.stats = {"compiled": 1, "timed": 0, "from_cache": False, "given": sorted(given)}
            result._per_call = {_key_of(args, kwargs): kernel}
            self._best[key] = result
            return result
        eager = not self.jitted.is_lazy_mode()
        t0 = time.perf_counter()
        disk_key = self._cache_key(args, kwargs, configs, eager) if self._cache_enabled() else None
        cached = self._cache_load(disk_key, configs) if disk_key else None
        if cached is not None:
            result = self._from_cache(args, kwargs, configs, cached)
            if result is not None:
                for r in cached.get("results", []):
                    what = f"{r['latency']:.4f} ms" if r.get("latency") is not None else f"skipped ({r.get('error')})"
                    self._say(f"config {r['index'] + 1}/{len(configs)} {r['config']}: {what} (cached)")
                self.stats["pick_seconds"] = time.perf_counter() - t0
                self._say(f"best {result.config}: {result.latency:.4f} ms (cached result, "
                          f"{self.stats['pick_seconds'] * 1000:.0f} ms to pick)")
                result._per_call = {_key_of(args, kwargs): result.kernel}
                self._best[key] = result
                return result
        result = self._tune(args, kwargs, configs, disk_key, t0)
        result._per_call = {_key_of(args, kwargs): result.kernel}
        self._best[key] = result
        return result

    def _from_cache(self, args, kwargs, configs, cached):
        index = int(cached["best_index"])
        try:
            kernel = self._compile(args, kwargs, configs[index])
        except Exception:  # noqa: BLE001 - the cached winner no longer compiles: tune again
            return None
        self.stats = {"compiled": 1, "timed": 0, "from_cache": True, "compile_seconds": 0.0, "bench_seconds": 0.0}
        best = AutotuneResult(float(cached["latency"]), configs[index], cached.get("ref_latency"),
                              kernel.get_kernel_source(), getattr(kernel, "func", None), kernel)
        kernel.latency, kernel.config, kernel.ref_latency = best.latency, best.config, best.ref_latency
        return best

    def _tune(self, args, kwargs, configs, disk_key, t0):
        n = len(configs)
        deadline = None if self.time_budget is None else t0 + float(self.time_budget)
        failures, results = [], []
        workers = self.max_workers or default_workers(n)
        c0 = time.perf_counter()
        # Phase 0: the heavy part of compiling (lowering, NVRTC, the host compiler) in worker
        # processes, which fill the disk kernel cache; phase 1 then loads from it. Threads
        # alone do not scale: the front end and lowering hold the GIL, and NVRTC compiles
        # in one process barely overlap (measured on the H200 machine: 16 GEMMs on 16
        # threads took as long as one by one).
        warmed = self._warm_in_processes(args, kwargs, configs, workers, deadline) if workers > 1 else 0
        self._say(f"compiling {n} configurations on {workers} "
                  f"{'process(es), then loading them' if warmed else 'thread(s)'}")
        # Phase 1: compile (or load what phase 0 built) on threads.
        kernels = [None] * n
        progress = _Progress(n, f"[tilelang.autotune] {self.__name__}: compile", self.verbose)
        pool = _futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tl-autotune")
        try:
            futures = {pool.submit(self._compile, args, kwargs, c): i for i, c in enumerate(configs)}
            pending = set(futures)
            while pending:
                wait = None if deadline is None else max(0.0, deadline - time.perf_counter())
                if self.timeout is not None:
                    wait = float(self.timeout) if wait is None else min(wait, float(self.timeout))
                done, pending = _futures.wait(pending, timeout=wait, return_when=_futures.FIRST_COMPLETED)
                if not done:
                    # Nothing finished within the per-compilation timeout or the budget.
                    why = "time budget exhausted" if deadline is not None and time.perf_counter() >= deadline \
                        else f"compilation exceeded timeout={self.timeout}s"
                    for f in pending:
                        f.cancel()
                        i = futures[f]
                        failures.append((configs[i], f"skipped: {why}"))
                        results.append((i, None, why))
                    self._say(f"{len(pending)} configuration(s) not compiled: {why}")
                    break
                for f in done:
                    i = futures[f]
                    try:
                        kernels[i] = f.result()
                        progress.update(f"{configs[i]}")
                    except Exception as e:  # noqa: BLE001 - reported and skipped
                        reason = _reason(e)
                        failures.append((configs[i], reason))
                        results.append((i, None, reason))
                        progress.update(f"{configs[i]} failed")
                        self._say(f"config {i + 1}/{n} {configs[i]}: skipped ({reason[:160]})")
        finally:
            progress.close()
            pool.shutdown(wait=False, cancel_futures=True)
        compile_seconds = time.perf_counter() - c0
        # Phase 2: time one at a time, so configurations do not disturb each other's timings.
        b0 = time.perf_counter()
        best, best_index, timed = None, None, 0
        eager_inputs = self._eager_inputs(args, kwargs)
        for i, kernel in enumerate(kernels):
            if kernel is None:
                continue
            if deadline is not None and time.perf_counter() >= deadline:
                failures.append((configs[i], "not timed: time budget exhausted"))
                results.append((i, None, "time budget exhausted"))
                self._say(f"config {i + 1}/{n} {configs[i]}: not timed (time budget exhausted)")
                continue
            try:
                latency, _, stopped = self._measure(kernel, eager_inputs, best.latency if best else None)
                timed += 1
            except _NeedsInputs:
                raise  # the same for every configuration: the call's error, not one config's
            except Exception as e:  # noqa: BLE001 - a failing configuration is reported and skipped
                reason = _reason(e)
                failures.append((configs[i], reason))
                results.append((i, None, reason))
                self._say(f"config {i + 1}/{n} {configs[i]}: skipped ({reason[:160]})")
                continue
            results.append((i, latency, "early stop" if stopped else None))
            if stopped:
                self._say(f"config {i + 1}/{n} {configs[i]}: {latency:.4f} ms at a first look, over "
                          f"{self.early_stop_factor}x the best: not timed further")
                continue
            self._say(f"config {i + 1}/{n} {configs[i]}: {latency:.4f} ms")
            if best is None or latency < best.latency:
                best_index = i
                best = AutotuneResult(latency, configs[i], None, kernel.get_kernel_source(),
                                      getattr(kernel, "func", None), kernel)
        if best is None:
            lines = "\n".join(f"  {c}: {why}" for c, why in failures)
            raise TileLangRuntimeError(f"autotune of {self.__name__}: no configuration compiled and passed its "
                                       f"checks:\n{lines}")
        if self.ref_prog is not None:
            profiler = self._profiler(best.kernel, eager_inputs)
            best.ref_latency = profiler.do_bench(func=self.ref_prog, warmup=self.warmup, rep=self.rep)
        bench_seconds = time.perf_counter() - b0
        self.stats = {"compiled": sum(k is not None for k in kernels), "timed": timed, "from_cache": False,
                      "compile_seconds": compile_seconds, "bench_seconds": bench_seconds, "workers": workers}
        self._say(f"best {best.config}: {best.latency:.4f} ms ({n} configs in {time.perf_counter() - t0:.1f} s: "
                  f"compiling {compile_seconds:.1f} s on {workers} thread(s), timing {bench_seconds:.1f} s)")
        best.kernel.latency, best.kernel.config, best.kernel.ref_latency = best.latency, best.config, best.ref_latency
        if disk_key is not None:
            self._cache_store(disk_key, configs, best_index, best, sorted(results))
        return best

    def _kernel_for(self, args, kwargs):
        """The tuned (or given) configuration's kernel for these very arguments. A tuning
        reused across `do_not_specialize` values keeps its configuration, and the kernel is
        compiled for the call's values (a kernel built for other shapes is never returned)."""
        result = self.tune(*args, **kwargs)
        per_call = result.__dict__.setdefault("_per_call", {})
        call_key = _key_of(args, kwargs)
        if not per_call:
            per_call[call_key] = result.kernel
        if not self.do_not_specialize or call_key in per_call:
            return result, per_call.get(call_key, result.kernel)
        given = self._given_tunables(args, kwargs, self._configs_for(args, kwargs))
        kernel = self._compile(args, kwargs, {} if given else dict(result.config or {}))
        kernel.latency, kernel.config, kernel.ref_latency = result.latency, result.config, result.ref_latency
        per_call[call_key] = kernel
        return result, kernel

    def compile(self, *args, **kwargs):
        """Tunes (once per argument tuple, as a call does) and returns the best kernel, in
        either style: for an eager kernel, `.compile(M=..., N=...)` names its T.const sizes."""
        return self._kernel_for(args, kwargs)[1]

    def __call__(self, *args, **kwargs):
        # upstream's `f(..., __return_kernel=True)`: the tuned kernel, not a call of it
        return_kernel = kwargs.pop("__return_kernel", False)
        result, kernel = self._kernel_for(args, kwargs)
        if self.jitted.is_lazy_mode() or return_kernel:
            return kernel
        # Eager style: run the winner (or the call's own tunable values) on the given tensors.
        if self._given_tunables(args, kwargs, self._configs_for(args, kwargs)):
            return self.jitted(*args, **kwargs)
        return self.jitted(*args, **dict(kwargs, **{k: v for k, v in (result.config or {}).items()
                                                    if k != "pass_configs"}))

    def _say(self, line):
        if self.verbose:
            print(f"[tilelang.autotune] {self.__name__}: {line}", file=sys.stderr, flush=True)


class _NeedsInputs(ValueError):
    """The tuner cannot make the kernel's inputs (a scalar argument): upstream raises a
    ValueError naming set_autotune_inputs."""


def _names_of(do_not_specialize, tuned) -> tuple:
    if do_not_specialize is None:
        return ()
    names = (do_not_specialize,) if isinstance(do_not_specialize, str) else tuple(do_not_specialize)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"autotune of {tuned.__name__}: do_not_specialize takes parameter names, got {n!r}")
        if tuned.jitted.is_lazy_mode() and n not in tuned.jitted.signature.parameters:
            raise ValueError(f"autotune of {tuned.__name__}: do_not_specialize names {n!r}, which is not a "
                             f"parameter (parameters: {', '.join(tuned.jitted.signature.parameters)})")
    return names


def _reason(e) -> str:
    text = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _inputs_id(captured) -> str:
    """What the tuning was timed on: the set_autotune_inputs values (tensors by shape, dtype
    and device; scalars by value), or generated inputs."""
    if captured is None:
        return "generated inputs"
    return repr([(tuple(v.shape), str(v.dtype), str(getattr(v, "device", "cpu"))) if hasattr(v, "shape") else repr(v)
                 for v in captured])


def _callable_id(f) -> str:
    if f is None:
        return "None"
    try:
        return f"{getattr(f, '__qualname__', type(f).__name__)}\n{inspect.getsource(f)}"
    except (OSError, TypeError):
        return getattr(f, "__qualname__", type(f).__name__)


_CPU_MODEL = None


def _cpu_model() -> str:
    global _CPU_MODEL
    if _CPU_MODEL is None:
        model = platform.processor()
        try:
            with open("/proc/cpuinfo") as f:
                for line in f:
                    if line.startswith("model name"):
                        model = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        _CPU_MODEL = model
    return _CPU_MODEL


def autotune(func=None, *, configs=None, warmup=25, rep=100, timeout=100, supply_type=TensorSupplyType.Auto,
             ref_prog=None, supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
             manual_check_prog=None, cache_input_tensors=False, do_not_specialize=None, early_stop=False,
             early_stop_factor=2.0, verbose=True, time_budget=None, max_workers=None, cache_results=True):
    """Decorator stacked above @tilelang.jit (see the module comment). `configs` is a list of
    dicts of parameter values (optionally with "pass_configs"), or a function of the call's
    arguments returning one. `timeout`: seconds one compilation may take; `time_budget`:
    seconds for the whole tuning (the best so far wins); `max_workers`: compile threads
    (default: default_workers); `cache_results=False` neither reads nor writes the disk cache."""
    def wrap(f):
        jitted = f if isinstance(f, JITImpl) else _jit(f)
        return AutoTunedFunction(jitted, configs, warmup, rep, supply_type, ref_prog, supply_prog, rtol, atol,
                                 max_mismatched_ratio, skip_check, manual_check_prog, verbose, timeout=timeout,
                                 early_stop=early_stop, early_stop_factor=early_stop_factor, time_budget=time_budget,
                                 max_workers=max_workers, cache_results=cache_results,
                                 do_not_specialize=do_not_specialize)

    return wrap(func) if func is not None else wrap


class AutoTuner:
    """The object form: AutoTuner.from_kernel(fn, configs).set_compile_args(...)
    .set_profile_args(...).run() -> AutotuneResult."""

    def __init__(self, fn, configs):
        from .param import CompileArgs, ProfileArgs

        self.fn, self.configs = fn, configs
        self.compile_args, self.profile_args = CompileArgs(), ProfileArgs()

    @classmethod
    def from_kernel(cls, kernel, configs):
        return cls(kernel, configs)

    def generate_cache_key(self, parameters, extra_parameters) -> str | None:
        """The key results of this tuning are cached under: the kernel (name and source), the
        configurations, the call's parameters and every compile and profile setting that can
        change which configuration wins or whether it passes its check. None (no caching)
        when a callback decides checking or inputs (ref_prog, supply_prog, manual_check_prog):
        a function's behaviour cannot be keyed."""
        from dataclasses import fields

        p = self.profile_args
        if p.ref_prog is not None or p.supply_prog is not None or p.manual_check_prog is not None:
            return None
        fn = getattr(self.fn, "func", self.fn)
        try:
            source = inspect.getsource(fn)
        except (OSError, TypeError):
            source = ""
        from .. import __version__

        parts = ["tilelang-autotuner-object-1", __version__, getattr(fn, "__module__", ""),
                 getattr(fn, "__qualname__", repr(fn)), source, repr(self.configs),
                 repr([(k, str(v)) for k, v in dict(parameters).items()]),
                 repr(sorted((str(k), repr(v)) for k, v in dict(extra_parameters or {}).items())),
                 repr([(f.name, repr(getattr(self.compile_args, f.name))) for f in fields(self.compile_args)]),
                 repr([(f.name, repr(getattr(p, f.name))) for f in fields(p)
                       if f.name not in ("ref_prog", "supply_prog", "manual_check_prog")])]
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def set_compile_args(self, out_idx=None, target="auto", execution_backend="auto", target_host=None,
                         verbose=False, pass_configs=None):
        from .param import CompileArgs

        self.compile_args = CompileArgs(out_idx=out_idx, execution_backend=execution_backend, target=target,
                                        target_host=target_host, verbose=verbose, pass_configs=pass_configs)
        return self

    def set_profile_args(self, warmup=25, rep=100, timeout=30, supply_type=TensorSupplyType.Auto, ref_prog=None,
                         supply_prog=None, rtol=1e-2, atol=1e-2, max_mismatched_ratio=0.01, skip_check=False,
                         manual_check_prog=None, cache_input_tensors=False, backend="event"):
        from .param import ProfileArgs

        self.profile_args = ProfileArgs(warmup=warmup, rep=rep, timeout=timeout, backend=backend,
                                        supply_type=supply_type, ref_prog=ref_prog, supply_prog=supply_prog,
                                        rtol=rtol, atol=atol, max_mismatched_ratio=max_mismatched_ratio,
                                        skip_check=skip_check, manual_check_prog=manual_check_prog,
                                        cache_input_tensors=cache_input_tensors)
        return self

    def run(self, warmup=None, rep=None, timeout=None, use_pipeline=False, enable_grouped_compile=False,
            group_compile_size=10, benchmark_devices=None, benchmark_multi_gpu=False, early_stop=False,
            early_stop_factor=2.0, time_budget=None, max_workers=None) -> AutotuneResult:
        """Tunes and returns the AutotuneResult. The grouped-compile and multi-GPU options are
        accepted for upstream's callers; compilation is always parallel here."""
        c, p = self.compile_args, self.profile_args
        jit_kwargs = {k: v for k, v in (("out_idx", c.out_idx), ("pass_configs", c.pass_configs),
                                        ("target", None if c.target == "auto" else c.target)) if v is not None}
        jitted = self.fn if isinstance(self.fn, JITImpl) else _jit(self.fn, **jit_kwargs)
        tuned = AutoTunedFunction(jitted, self.configs, p.warmup if warmup is None else warmup,
                                  p.rep if rep is None else rep, p.supply_type, p.ref_prog, p.supply_prog, p.rtol,
                                  p.atol, p.max_mismatched_ratio, p.skip_check, p.manual_check_prog, True,
                                  timeout=p.timeout if timeout is None else timeout,
                                  early_stop=early_stop, early_stop_factor=early_stop_factor,
                                  time_budget=time_budget, max_workers=max_workers)
        self.tuned = tuned
        return tuned.tune()


__all__ = ["autotune", "AutoTuner", "AutotuneResult", "do_bench", "set_autotune_inputs", "get_autotune_inputs",
           "default_workers"]
