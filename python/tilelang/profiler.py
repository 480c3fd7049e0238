"""Timing and checking kernels: ``kernel.get_profiler()`` and ``tilelang.profiler.do_bench``.

On the GPU, times are CUDA-event (or CUDA-graph) medians with the L2 cache flushed before
each run; on the CPU, wall-clock medians."""
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


def do_bench(fn, warmup=25, rep=100, backend="event", return_mode="median", _flush_bytes=256 << 20,
             quantiles=None, **_):
    """Median time of ``fn()`` in milliseconds.

    backend "event": CUDA events around each run, L2 flushed in between; "cudagraph": fn is
    captured once in a CUDA graph and the graph replayed (no launch overhead); "cupti"
    (upstream's kernel-only timing): the device time of the kernels fn launches, from
    torch.profiler's CUPTI records, averaged over `rep` runs (the flush excluded), so host
    overhead between kernels does not count. Without a GPU (or before CUDA is used),
    wall-clock time. With `quantiles` (e.g. [0.5, 0.2, 0.8]), the list of those quantiles
    of the run times instead (not with "cupti", which has one figure: the mean)."""
    if quantiles is not None:
        return_mode = ("quantiles", tuple(float(q) for q in quantiles))
    if not _cuda_ready():
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(rep):
            t0 = time.perf_counter()
            fn()
            times.append((time.perf_counter() - t0) * 1e3)
        return _reduce(times, return_mode)
    import torch

    flush = torch.empty(_flush_bytes, dtype=torch.int8, device="cuda")
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
    elif backend not in ("event", "cupti"):
        raise ValueError(f"do_bench: backend must be 'event', 'cupti' or 'cudagraph', got {backend!r}")
    for _ in range(warmup):
        run()
    torch.cuda.synchronize()
    if backend == "cupti":
        return _kernel_time_ms(run, flush, rep)
    times = []
    for _ in range(rep):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return _reduce(times, return_mode)


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
    return statistics.median(times)


_ENCODED = ("float4_e2m1fn", "int4", "uint4", "float8_e8m0fnu")


def _encoded_input(p, rng, supply):
    """Storage bytes (uint8, int8 for int4) of an input of a 4-bit or e8m0 parameter: small
    integers, or uniform values, rounded to the type; e8m0 gets powers of two from 1/8 to 8."""
    import ml_dtypes

    from .utils.tensor import pack_4bit

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

    def _shape(self, p, sizes):
        """Parameter p's shape, its dynamic dimensions given by `sizes` ({name: size},
        upstream's dynamic_symbolic_constraints)."""
        if not any(isinstance(d, str) for d in p.dims):
            return tuple(p.dims)
        if sizes is None:
            raise TypeError(f"the profiler cannot size the dynamic tensor {p.name!r}: give "
                            "do_bench(dynamic_symbolic_constraints={name: size}) or input_tensors=[...]")
        from .jit.kernel import dim_value

        try:
            return tuple(dim_value(d, sizes) for d in p.dims)
        except KeyError as e:
            raise ValueError(f"dynamic_symbolic_constraints: no size for {e.args[0]!r} (a dimension of "
                             f"{p.name!r}); got {sorted(sizes)}") from None

    def _make_inputs(self, sizes=None):
        from .jit.arguments import numpy_dtype

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
            x = torch.randint(-2, 3, shape, generator=self._gen, device=dev)
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

    def do_bench(self, func=None, warmup=25, rep=100, n_warmup=None, n_repeat=None, backend="event",
                 input_tensors=None, dynamic_symbolic_constraints=None, **_):
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
        return do_bench(fn, warmup=n_warmup or warmup, rep=n_repeat or rep, backend=backend)

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
