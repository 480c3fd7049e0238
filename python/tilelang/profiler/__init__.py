"""Timing and checking kernels: ``kernel.get_profiler()`` and ``tilelang.profiler.do_bench``.

On the GPU, times are CUDA-event (or CUDA-graph, or CUPTI) times with the L2 cache flushed
before each run; on the CPU, wall-clock times. As upstream's, `warmup` and `rep` are budgets in
milliseconds and the result is the mean unless another `return_mode` is asked for."""
from __future__ import annotations

import enum
import os
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


def _cuda_ready():
    try:
        import torch

        return torch.cuda.is_available() and torch.cuda.is_initialized()
    except ImportError:
        return False


def do_bench(fn, warmup=25, rep=100, _n_warmup=0, _n_repeat=0, quantiles=None, fast_flush=True,
             backend="event", return_mode="mean", device=None, cache_size=256, early_stop_baseline=None,
             _flush_bytes=None, **_):
    """Time of ``fn()`` in milliseconds, with upstream's arguments and meaning: `warmup` and
    `rep` are time budgets in ms. After one untimed call, five runs estimate one run's time;
    then warmup / estimate runs warm up and rep / estimate runs (at least one) are timed
    (`_n_warmup` / `_n_repeat`, when positive, give the counts instead). The result is their
    mean (`return_mode`: "mean", "median", "min" or "max"), or with `quantiles` (e.g. [0.5,
    0.2, 0.8]) the list of those quantiles. With `early_stop_baseline`, an estimate above it
    is returned at once (a tuner's candidate that cannot win).

    backend "event": CUDA events around each run, L2 flushed in between; "cudagraph": fn is
    captured once in a CUDA graph and the graph replayed (no launch overhead); "cupti"
    (upstream's kernel-only timing): the device time of the kernels fn launches, from
    torch.profiler's CUPTI records, averaged over the runs (the flush excluded), so host
    overhead between kernels does not count; "wall": host wall-clock time per call. Without
    a GPU (or before CUDA is used), wall-clock time whatever the backend."""
    if quantiles is not None:
        return_mode = ("quantiles", tuple(float(q) for q in quantiles))
    elif return_mode not in ("mean", "median", "min", "max"):
        raise ValueError(f"do_bench: return_mode must be 'mean', 'median', 'min' or 'max', got {return_mode!r}")
    if backend not in ("event", "cupti", "cudagraph", "wall"):
        raise ValueError(f"do_bench: backend must be 'event', 'cupti', 'cudagraph' or 'wall', got {backend!r}")

    def counts(estimate_ms):
        estimate_ms = max(estimate_ms, 1e-6)
        n_warm = _n_warmup if _n_warmup > 0 else max(1, int(warmup / estimate_ms))
        n_rep = _n_repeat if _n_repeat > 0 else max(1, int(rep / estimate_ms))
        return n_warm, n_rep

    if not _cuda_ready() or backend == "wall":
        sync = _cuda_sync if _cuda_ready() else (lambda: None)

        def wall(n):
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                fn()
                sync()
                times.append((time.perf_counter() - t0) * 1e3)
            return times

        fn()
        sync()
        estimate = statistics.fmean(wall(5))
        if early_stop_baseline is not None and estimate > early_stop_baseline:
            return _early(estimate, return_mode)
        n_warm, n_rep = counts(estimate)
        wall(n_warm)
        return _reduce(wall(n_rep), return_mode)
    import torch

    flush_bytes = _flush_bytes if _flush_bytes is not None else int(cache_size) << 20
    flush = torch.empty(flush_bytes, dtype=torch.int8, device="cuda")
    run = fn
    if backend == "cudagraph":
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            fn()  # compile and load outside the capture
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, stream=stream):
                fn()
        torch.cuda.synchronize()
        run = graph.replay
    run()
    flush.zero_()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush.zero_()
        run()
    end.record()
    end.synchronize()
    estimate = start.elapsed_time(end) / 5
    if early_stop_baseline is not None and estimate > early_stop_baseline:
        return _early(estimate, return_mode)
    n_warm, n_rep = counts(estimate)
    for _ in range(n_warm):
        run()
    torch.cuda.synchronize()
    if backend == "cupti":
        return _kernel_time_ms(run, flush, n_rep)
    times = []
    for _ in range(n_rep):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return _reduce(times, return_mode)


def _cuda_sync():
    import torch

    torch.cuda.synchronize()


def _early(estimate, mode):
    """The estimate in the shape the caller asked for (one value, or one per quantile)."""
    if isinstance(mode, tuple) and mode[0] == "quantiles":
        return [estimate] * len(mode[1])
    return estimate


_FLUSH_RANGE = "tilelang.profiler.flush"


def _kernel_time_ms(run, flush, rep):
    """Mean device time (ms) of the CUDA kernels one run() launches: every kernel's duration
    from the profiler's CUPTI activity records, less those launched inside the flush's
    annotated range (the flush may be the same fill kernel as a torch.zeros of fn's)."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(rep):
            with record_function(_FLUSH_RANGE):
                flush.zero_()
            run()
        torch.cuda.synchronize()
    kernels = flushed = 0.0
    for e in prof.events():
        if getattr(getattr(e, "device_type", None), "name", "") != "CUDA":
            continue
        if getattr(e, "is_user_annotation", False):
            if e.key == _FLUSH_RANGE:
                flushed += e.self_device_time_total
        else:
            kernels += e.self_device_time_total
    return (kernels - flushed) / rep * 1e-3  # microseconds -> ms


def _reduce(times, mode):
    if isinstance(mode, tuple) and mode[0] == "quantiles":
        return [float(np.quantile(times, q)) for q in mode[1]]
    if mode == "mean":
        return statistics.fmean(times)
    if mode == "min":
        return min(times)
    if mode == "max":
        return max(times)
    return statistics.median(times)


_ENCODED = ("float4_e2m1fn", "int4", "uint4", "float8_e8m0fnu")


def _encoded_input(p, rng, supply):
    """Storage bytes (uint8, int8 for int4) of an input of a 4-bit or e8m0 parameter: small
    integers, or uniform values, rounded to the type; e8m0 gets powers of two from 1/8 to 8."""
    import ml_dtypes

    from ..utils.tensor import pack_4bit

    shape = tuple(p.dims)
    if p.dtype == "float8_e8m0fnu":
        return np.exp2(rng.integers(-3, 4, size=shape)).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    if supply == TensorSupplyType.Zero:
        a = np.zeros(shape)
    elif supply == TensorSupplyType.One:
        a = np.ones(shape)
    elif supply == TensorSupplyType.Integer or p.dtype != "float4_e2m1fn":
        a = rng.integers(0 if p.dtype == "uint4" else -2, 3, size=shape)
    else:
        a = rng.uniform(-1, 1, size=shape)
    codes = a.astype(ml_dtypes.float4_e2m1fn).view(np.uint8) if p.dtype == "float4_e2m1fn" else \
        (a.astype(np.int64) & 0xF).astype(np.uint8)
    packed = pack_4bit(codes)
    return packed.view(np.int8) if p.dtype == "int4" else packed


class _Sized:
    """A parameter's description with its dynamic dimensions sized."""

    def __init__(self, p, dims):
        self._p, self.dims = p, list(dims)

    def __getattr__(self, name):
        return getattr(self._p, name)


class Profiler:
    """Makes inputs for a kernel, times it and compares it with a reference."""

    def __init__(self, kernel, supply=None):
        self.kernel = kernel
        self.supply = supply or TensorSupplyType.Auto
        self._inputs = None

    @property
    def func(self):
        """The kernel itself (upstream's name: `profiler.do_bench(profiler.func)`)."""
        return self.kernel

    def _shape(self, p, sizes):
        """Parameter p's shape, its dynamic dimensions given by `sizes` ({name: size},
        upstream's dynamic_symbolic_constraints)."""
        if not any(isinstance(d, str) for d in p.dims):
            return tuple(p.dims)
        if sizes is None:
            raise TypeError(f"the profiler cannot size the dynamic tensor {p.name!r}: give "
                            "do_bench(dynamic_symbolic_constraints={name: size}) or input_tensors=[...]")
        from ..jit.kernel import dim_value

        try:
            return tuple(dim_value(d, sizes) for d in p.dims)
        except KeyError as e:
            raise ValueError(f"dynamic_symbolic_constraints: no size for {e.args[0]!r} (a dimension of "
                             f"{p.name!r}); got {sorted(sizes)}") from None

    def _make_inputs(self, sizes=None):
        from ..jit.arguments import numpy_dtype

        rng = np.random.default_rng(0)
        inputs = []
        for i in self.kernel.in_idx:
            p = self.kernel.params[i]
            if not p.is_tensor:
                raise TypeError(f"the profiler cannot invent the scalar argument {p.name!r}")
            shape = self._shape(p, sizes)
            if shape != tuple(p.dims):
                p = _Sized(p, shape)
            if p.dtype in _ENCODED:
                # 4-bit and e8m0 inputs: values made as numpy, stored as the kernel takes them
                x = _encoded_input(p, rng, self.supply)
                if self.kernel.target == "cuda":
                    import torch

                    x = torch.from_numpy(x).cuda()
                inputs.append(x)
                continue
            if self.kernel.target == "cuda" or _torch_importable():
                # torch tensors on the CPU target too when torch is there: references written
                # for upstream (A.view(...), torch.softmax) take torch tensors
                inputs.append(self._torch_input(p, "cuda" if self.kernel.target == "cuda" else "cpu"))
                continue
            if self.supply == TensorSupplyType.Zero:
                a = np.zeros(p.dims)
            elif self.supply == TensorSupplyType.One:
                a = np.ones(p.dims)
            elif self.supply == TensorSupplyType.Integer or p.dtype.startswith(("int", "uint")):
                a = rng.integers(-2, 3, size=p.dims)
            elif self.supply == TensorSupplyType.Uniform:
                a = rng.uniform(-1, 1, size=p.dims)
            else:
                a = rng.standard_normal(size=p.dims)
            inputs.append(a.astype(numpy_dtype(p.dtype)))
        return inputs

    def _torch_input(self, p, dev="cuda"):
        """A torch tensor on `dev` for parameter p, made by torch (numpy has no float8, and
        torch.from_numpy no bfloat16), with the supply's distribution."""
        import torch

        if not hasattr(self, "_gen"):
            self._gen = torch.Generator(device=dev).manual_seed(0)
        dtype, shape = getattr(torch, p.dtype), tuple(p.dims)
        if self.supply == TensorSupplyType.Zero:
            return torch.zeros(shape, dtype=dtype, device=dev)
        if self.supply == TensorSupplyType.One:
            return torch.ones(shape, dtype=dtype, device=dev)
        if self.supply == TensorSupplyType.Integer or p.dtype.startswith(("int", "uint", "bool")):
            from ..utils.tensor import integer_supply_range

            x = torch.randint(*integer_supply_range(p.dtype), shape, generator=self._gen, device=dev)
        elif self.supply == TensorSupplyType.Uniform:
            x = torch.rand(shape, generator=self._gen, device=dev) * 2 - 1
        else:
            x = torch.randn(shape, generator=self._gen, device=dev)
        return x.to(dtype)

    def inputs(self):
        if self._inputs is None:
            self._inputs = self._make_inputs()
        return self._inputs

    def run_once(self, func=None):
        """Runs the kernel (or `func`) once on the profiler's inputs and returns its result
        (upstream's name; T.print output appears then)."""
        args = self.inputs()
        return (func or self.kernel)(*args)

    def do_bench(self, func=None, warmup=25, rep=100, n_warmup=0, n_repeat=0, input_tensors=None, backend="event",
                 quantiles=None, return_mode="mean", dynamic_symbolic_constraints=None, device=None,
                 early_stop_baseline=None, **_):
        """Times the kernel (or `func`) on the profiler's inputs; on `input_tensors` when given,
        else on inputs sized by `dynamic_symbolic_constraints` ({name: size}) for a kernel with
        dynamic dimensions (upstream's arguments)."""
        if input_tensors is not None:
            args = list(input_tensors)
        elif dynamic_symbolic_constraints is not None:
            args = self._make_inputs(dict(dynamic_symbolic_constraints))
        else:
            args = self.inputs()
        fn = (lambda: func(*args)) if func is not None else (lambda: self.kernel(*args))
        return do_bench(fn, warmup=warmup, rep=rep, _n_warmup=n_warmup or 0, _n_repeat=n_repeat or 0,
                        quantiles=quantiles, backend=backend, return_mode=return_mode,
                        early_stop_baseline=early_stop_baseline)

    def assert_allclose(self, reference_program, atol=1e-2, rtol=1e-2, max_mismatched_ratio=0.01):
        """Runs the kernel and `reference_program` on the same inputs and compares each
        output element-wise (|out - ref| <= atol + rtol |ref|, NaN equal to NaN). As upstream,
        up to `max_mismatched_ratio` of the elements may miss (low-precision accumulation
        flips a few roundings); more, or outputs of another shape, raise AssertionError."""
        args = self.inputs()
        out = self.kernel(*args)
        ref = reference_program(*args)
        outs = out if isinstance(out, (list, tuple)) else [out]
        refs = ref if isinstance(ref, (list, tuple)) else [ref]
        for o, r in zip(outs, refs):
            if o is None or r is None:  # a reference may leave an output unchecked
                continue
            o64, r64 = _to_f64(o), _to_f64(r)
            if o64.shape != r64.shape:
                raise AssertionError(f"output shape {o64.shape} != reference shape {r64.shape}")
            missed = ~np.isclose(o64, r64, atol=atol, rtol=rtol, equal_nan=True)
            if o64.size and missed.mean() > max_mismatched_ratio:
                np.testing.assert_allclose(o64, r64, atol=atol, rtol=rtol,
                                           err_msg=f"{missed.sum()} of {o64.size} elements differ "
                                                   f"(allowed ratio {max_mismatched_ratio})")


def _torch_importable() -> bool:
    """Whether torch is installed (the CPU target's profiler then supplies torch tensors)."""
    import importlib.util

    return os.environ.get("TILELANG_PROFILER_NUMPY", "0") in ("0", "") and importlib.util.find_spec("torch") is not None


def _to_f64(x):
    if type(x).__module__.startswith("torch"):
        return x.detach().double().cpu().numpy()
    return np.asarray(x, dtype=np.float64)
