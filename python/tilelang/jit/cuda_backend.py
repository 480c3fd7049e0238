"""The CUDA side of a JITKernel: compile (NVRTC, nvcc as fallback; works with no GPU when
the arch is given), then launch on torch CUDA tensors on the current stream."""
from __future__ import annotations

import os
import sys
import time

from .. import _tl, env
from ..errors import TileLangArgumentError, TileLangRuntimeError
from ..lower import lower_cuda_kernels
from . import arguments as _arguments
from . import kernel as _kernel




# Integer scalar dtypes a call plan checks itself (their range from numpy); others (bool,
# int4) go through arguments.scalar_arg.
_PLAIN_INTS = {f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)}


def _search_dirs():
    """Folders where pip wheels put libnvrtc (nvidia-cuda-nvrtc)."""
    dirs = []
    for p in sys.path:
        for sub in ("nvidia/cuda_nvrtc/lib", "nvidia/cu13/lib", "nvidia/cu12/lib"):
            d = os.path.join(p, sub)
            if os.path.isdir(d):
                dirs.append(d)
    return dirs


def _templates_root() -> str:
    return os.path.dirname(os.path.dirname(env.template_dir()))  # .../templates


# Dynamic row lengths (a T.dynamic K as a tensor's innermost size) stop the compiler from
# proving 16-byte rows: no vector copies, no TMA. Unless "tl.enable_dynamic_alignment" is set
# to False, a kernel with such sizes is compiled for
# calls where each is a multiple of this many elements ("tl.dynamic_alignment" = "16:k,n",
# the promise the compiler may rely on for exactly those sizes; checked per call), and a
# call with other sizes runs a general variant, compiled when first needed.
DYNAMIC_ALIGNMENT = 16


def _device_compile_flags(value) -> list:
    """tl.device_compile_flags (upstream's key): a string split as a shell would, or a list
    of strings, each split the same way."""
    if value is None or value == "":
        return []
    import shlex

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(i, str) for i in items):
        raise TypeError(f"pass config tl.device_compile_flags: expected a string or a list of strings, got {value!r}")
    return [tok for item in items for tok in shlex.split(item)]


# nvcc options that upstream's examples pass in compile_flags (upstream builds with nvcc) and
# that the in-process compiler (NVRTC) has no form of: what each means there.
_NVCC_ONLY = {
    "--expt-relaxed-constexpr": "device code may call constexpr host functions already",
    "-expt-relaxed-constexpr": "device code may call constexpr host functions already",
    "--expt-extended-lambda": "there is no host code to share lambdas with",
    "-expt-extended-lambda": "there is no host code to share lambdas with",
    "--extended-lambda": "there is no host code to share lambdas with",
}


def _in_process_flags(flags, remarks) -> list:
    """compile_flags as the in-process compiler takes them: -O<n> and -W<...> (host-compiler
    options: device code is always fully optimized) and the nvcc-only options above are
    dropped, each with a remark; a comma list in --ptxas-options / -Xptxas becomes one option
    per entry (NVRTC passes each as it is)."""
    out = []
    for f in flags:
        why = _NVCC_ONLY.get(f)
        if why is None and (f.startswith("-O") or (f.startswith("-W") and f != "-w")):
            why = "a host-compiler option; device code is compiled fully optimized"
        if why is not None:
            remarks.append(f"compile flag {f}: nvcc's, not taken by the in-process compiler ({why}); ignored")
            continue
        for prefix in ("--ptxas-options=", "-Xptxas="):
            if f.startswith(prefix) and "," in f:
                out += [prefix + part for part in f[len(prefix):].split(",") if part]
                break
        else:
            out.append(f)
    return out


def _enabled(configs, key, default=False):
    if key not in configs:
        return default
    return str(configs[key]).lower() in ("1", "true", "yes", "on")


def _innermost_dynamic_dims(kernel):
    """The dynamic size variables in some tensor parameter's innermost dimension (`k`, or
    the variable of an affine size such as `4 * k`): the ones the promise is about."""
    names = []
    for p in kernel.params:
        d = p.dims[-1] if p.is_tensor and p.dims else None
        var = getattr(d, "var", d) if isinstance(d, str) else None  # an AffineDim is a str too
        if var is not None and var not in names:
            names.append(var)
    return names


class CudaBackend:
    def __init__(self, kernel, arch, pass_configs, flags, verbose, general=False):
        """general=True: the variant without an alignment promise (see general())."""
        self.kernel = kernel
        self._is_general = general
        if arch is None:
            arch = default_arch()
        self.arch = arch
        # The promise is the JIT's alone: it checks it at each call.
        pass_configs = {k: v for k, v in pass_configs.items() if k != "tl.dynamic_alignment"}
        self._args = (dict(pass_configs), flags, verbose)
        self._general = None
        wanted = _enabled(pass_configs, "tl.enable_dynamic_alignment", default=True)
        self._align_dims = _innermost_dynamic_dims(kernel) if wanted and not general else []
        self._align = 1
        if self._align_dims:
            self._align = DYNAMIC_ALIGNMENT
            promise = f"{DYNAMIC_ALIGNMENT}:{','.join(self._align_dims)}"
            pass_configs = dict(pass_configs, **{"tl.dynamic_alignment": promise})
        # (unset: the compiler decides whether a launch goes persistent, so it gets the count)
        if _enabled(pass_configs, "tl.auto_persistent", default=True) and "tl.sm_count" not in pass_configs:
            sms = _current_sm_count()
            if sms:  # (unknown: the compiler's remark says the launch stays as written)
                pass_configs = dict(pass_configs, **{"tl.sm_count": str(sms)})
        t0 = time.perf_counter()
        # One CUDA kernel per T.Kernel: launched in order on one stream, they run in order.
        kernels, self.remarks, _ = lower_cuda_kernels(kernel.func.node, pass_configs, arch)
        self.srcs = [src for _, src in kernels]
        self.lowered, self.src = kernels[0]
        self.source = "\n".join(src.code for src in self.srcs)
        from ..engine.callback import postprocess

        self.source = postprocess("cuda", self.source, f"cuda -arch={arch}")
        self.shared_bytes = max(src.shared_bytes for src in self.srcs)
        # the arch's opt-in limit (src/target/cuda_target.cc), checked before any build so the
        # error comes before any launch
        limit = _tl.cuda_target(arch)["max_shared_bytes"]
        if limit is not None and self.shared_bytes > limit:
            # fragments the compiler had to stage in shared memory (a T.gemm that fell back to
            # element loops, say) are often what overflows: name them, with the reasons given
            staged = [r for r in self.remarks if "kept in shared memory" in r or "no tensor cores" in r]
            why = ("; the compiler staged fragments in shared memory: " + "; ".join(staged)) if staged else ""
            raise TileLangRuntimeError(
                f"kernel {kernel.name!r} needs {self.shared_bytes} bytes of shared memory, the device "
                f"({arch}) has {limit}; use smaller tiles or fewer pipeline stages{why}")
        fast = str(pass_configs.get("tl.enable_fast_math", "")).lower() in ("1", "true")
        all_flags = _in_process_flags(flags, self.remarks) + (["--use_fast_math"] if fast else [])
        # the device headers' switches (float8 hardware conversions, tf32 mma, native 16-bit
        # arithmetic), on unless their keys are turned off: src/target/cuda_target.cc
        all_flags += _tl.cuda_compile_defines({k: str(v) for k, v in pass_configs.items()})
        all_flags += _device_compile_flags(pass_configs.get("tl.device_compile_flags"))
        self.nvrtc_flags = all_flags  # (get_ptx compiles the source again with the same ones)
        path, hit, compiler, log, usage = _tl.build_cuda(
            self.source, arch, env.kernel_cache_dir(), [_templates_root()], all_flags, _search_dirs(), "")
        self.cubin_path, self.cache_hit, self.compiler, self.build_log = path, hit, compiler, log
        if "Used" not in log:
            # Some NVRTC builds (e.g. a pip wheel's) leave ptxas' report out of the log.
            usage = {k: None for k in ("registers", "spill_stores_bytes", "spill_loads_bytes")}
        self.resource_usage = usage
        self.compile_seconds = time.perf_counter() - t0
        if self._align > 1:
            self.remarks.append(
                f"dynamic size(s) {', '.join(self._align_dims)}: compiled for multiples of {self._align} elements "
                "(vector copies, TMA); a call with other sizes runs a general variant, compiled when first needed")
        self.remarks.append(f"compiled by {compiler} for {arch}: {usage.get('registers') or '?'} registers, "
                            f"{usage.get('spill_stores_bytes') if usage.get('registers') else '?'} bytes spilled, "
                            f"{self.shared_bytes} bytes of dynamic shared memory")
        if not hit and (verbose or env.print_on_compilation()):
            print(f"[tilelang] compiled kernel {kernel.name!r} for cuda ({arch}) in {self.compile_seconds:.2f} s",
                  file=sys.stderr)
        self._module = None

    def general(self):
        """The variant for any sizes: this one when it makes no alignment promise."""
        if self._align == 1:
            return self
        if self._general is None:
            configs, flags, verbose = self._args
            self._general = CudaBackend(self.kernel, self.arch, configs, flags, verbose, general=True)
        return self._general

    def _load(self):
        if self._module is None:
            ok, why = _tl.cuda_available()
            if not ok:
                raise TileLangRuntimeError(f"kernel {self.kernel.name!r} needs a CUDA device: {why}")
            limit = _tl.max_shared_memory_per_block_optin(_current_device())
            if self.shared_bytes > limit:
                raise TileLangRuntimeError(
                    f"kernel {self.kernel.name!r} needs {self.shared_bytes} bytes of shared memory, the "
                    f"device has {limit}; use smaller tiles or fewer pipeline stages")
            self._more_modules = [_with_tensor_maps(_tl.CudaModule(self.cubin_path, src.entry), src, self.arch)
                                  for src in self.srcs[1:]]
            self._module = _with_tensor_maps(_tl.CudaModule(self.cubin_path, self.src.entry), self.src, self.arch)
        return self._module

    def _prepare(self, torch):
        """Per-kernel facts the call path reads (computed once: calls must be cheap)."""
        k = self.kernel
        self._torch = torch
        self._device = torch.device("cuda", _current_device())
        self._dtypes = {i: _kernel.torch_storage_dtype(torch, k.params[i].dtype) for i in range(len(k.params))
                        if k.params[i].is_tensor}
        # (index, param, torch dtype, shape when every dimension is static): the fast path
        # compares a whole shape at once.
        self._in = [(i, k.params[i], self._dtypes.get(i),
                     tuple(k.params[i].dims) if all(isinstance(d, int) for d in k.params[i].dims) else None)
                    for i in k.in_idx]
        # (index, torch dtype, storage shape when static, dims, returned, values per byte) of
        # each output allocated per call (T.alloc_global workspaces too, not returned); a
        # 4-bit output's storage holds two values per byte along its last dimension.
        self._out = []
        for i in k.alloc_idx:
            p = k.params[i]
            static = all(isinstance(d, int) for d in p.dims)
            shape = _kernel.storage_shape(tuple(p.dims), p.pack, p.name) if static else None
            self._out.append((i, self._dtypes[i], shape, p.dims, i in k.out_idx, p.pack))
        # One letter per launch argument (launch_packed): parameters, then dynamic sizes.
        letters = {"ptr": "p", "i32": "i", "i64": "l", "f32": "f", "f64": "d"}
        self._kinds = "".join(letters[kind] for kind in self.src.arg_kinds)
        # What the launches read, converted from the C++ side once rather than per call.
        self._dyn_names = [name for name, *_ in self.src.dynamic_dims]
        # Scalar parameters a launch's grid reads (T.ceildiv(max_seqlen, block_M)).
        self._grid_params = [list(getattr(src, "grid_params", [])) for src in self.srcs]
        self._block, self._shared = list(self.src.block), self.src.shared_bytes
        self._more_launches = [(src, more, list(src.block), src.shared_bytes)
                               for src, more in zip(self.srcs[1:], self._more_modules)]
        get_raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        index = self._device.index
        self._stream = (lambda: get_raw(index)) if get_raw else (lambda: torch.cuda.current_stream().cuda_stream)
        # From the next call on, the kernel's ordinary calls skip this file (JITKernel.__call__).
        # (Not the general variant's: the plan runs the aligned one and hands other sizes back.)
        if not self._is_general and get_raw:
            try:
                self.kernel._call_plan = self._call_plan(torch, get_raw)
            except (TypeError, ValueError) as e:  # (an extension built from other sources)
                self.kernel._call_plan = None
                self.remarks.append(f"calls take the Python path: the C++ call plan could not be built ({e})")

    def _call_plan(self, torch, get_raw):
        """The per-call path in C++ (_tl.CudaCallPlan, python/src/bind_cuda_call.cc) for this
        kernel, or None when a call needs what only this file does (assumption checks, several
        launches, strided or packed tensors, raw pointers). The plan returns CALL_FALLBACK for
        any call it does not take as it is (sizes off the alignment promise too: the general
        variant is this file's); call() then runs."""
        import numpy as np

        k = self.kernel
        if k._assume_checks or self._more_launches or any(self._grid_params) or not hasattr(_tl, "CudaCallPlan"):
            return None
        names = list(self._dyn_names)
        dim_max = {}

        def code(d, p):
            if isinstance(d, int):
                return d
            if not isinstance(d, str):
                raise LookupError  # an AffineDim: the Python path computes it
            if d not in names:
                names.append(d)
            dim_max[d] = min(dim_max.get(d, p.dim_max[d]), p.dim_max[d])
            return -(names.index(d) + 1)

        inputs = []
        try:
            for i, p, want_dtype, _static in self._in:
                letter = self._kinds[i]
                if p.is_tensor:
                    if p.strides is not None or p.pack != 1:
                        return None
                    inputs.append(("p", i, want_dtype, [code(d, p) for d in p.dims], 0, 0))
                elif p.is_pointer or p.dtype == "bool":
                    return None
                elif letter in "fd" and (p.dtype.startswith("float") or p.dtype == "bfloat16"):
                    inputs.append((letter, i, None, [], 0, 0))
                elif letter in "il" and p.dtype in _PLAIN_INTS:
                    info = np.iinfo(p.dtype)
                    inputs.append((letter, i, None, [], int(info.min), int(info.max)))
                else:
                    return None
            given = set(dim_max)  # the sizes the inputs' shapes give
            if any(name not in given for name in list(self._dyn_names) + list(self._align_dims)):
                return None  # a size no input tensor gives
            outputs = []
            for i, dtype, _shape, p_dims, returned, pack in self._out:
                if pack != 1 or any(isinstance(d, str) and d not in given for d in p_dims):
                    return None
                outputs.append((i, dtype, [code(d, k.params[i]) for d in p_dims], returned))
        except LookupError:
            return None
        n_params = len(k.params)
        dynamic_args = list(range(n_params, n_params + len(self._dyn_names)))
        grid, grid_fn = ([1], self.src.grid) if self._dyn_names else (list(self._static_grid()), None)
        return _tl.CudaCallPlan(self._module, torch.Tensor, torch.empty, self._device, self._device.index,
                                get_raw, inputs, outputs, [dim_max[n] for n in names], dynamic_args, self._kinds,
                                grid, grid_fn, self._block, self._shared, _kernel.CALL_FALLBACK,
                                [names.index(n) for n in self._align_dims], self._align)

    def call(self, args):
        k = self.kernel
        if len(args) != len(k.in_idx):
            names = ", ".join(k.params[i].name for i in k.in_idx)
            raise TileLangArgumentError(f"{k.name}() takes {len(k.in_idx)} argument(s) ({names}), got {len(args)}")
        module = self._module or self._load()
        if not hasattr(self, "_torch"):
            try:
                import torch
            except ImportError:
                raise TileLangRuntimeError("CUDA kernels take torch tensors; install PyTorch") from None
            self._prepare(torch)
        torch = self._torch
        dims = {}
        values = [None] * len(k.params)
        index = self._device.index
        for (i, p, want_dtype, static_shape), a in zip(self._in, args):
            if want_dtype is None:
                if p.is_pointer:
                    values[i] = _arguments.pointer_arg(a, p.name, k.name, "cuda", self._device)
                else:
                    values[i] = _arguments.scalar_arg(a, p.name, p.dtype, k.name)
                    if p.name in k._sizing_scalars():
                        dims[p.name] = k._output_size_arg(p, values[i])
                continue
            if a is None:  # an optional input the kernel does not use: a null pointer
                values[i] = k._null_tensor(p)
                continue
            if p.strides is not None:
                # A T.StridedTensor: its strides are checked (and bound) on every call.
                a = _as_cuda_tensor(a, p.name, k.name, self._device, strided=True)
                k._check_tensor(p, _TensorView(a), dims)
                values[i] = a.data_ptr()
                continue
            # Fast path: a contiguous, aligned tensor of the right dtype on this device;
            # anything else goes through the checks that explain what is wrong.
            ptr = a.data_ptr() if type(a) is torch.Tensor else 1
            if not (ptr % 16 == 0 and a.dtype is want_dtype and a.get_device() == index and a.is_contiguous()):
                a = _as_cuda_tensor(a, p.name, k.name, self._device)
                k._check_tensor(p, _TensorView(a), dims)
                ptr = a.data_ptr()
            shape = a.shape if p.pack == 1 else _kernel.logical_shape(a.shape, p.pack)
            if static_shape is not None:
                if shape != static_shape:
                    k._check_tensor(p, _TensorView(a), dims)
            else:
                if len(shape) != len(p.dims):
                    k._check_tensor(p, _TensorView(a), dims)
                for axis, want in enumerate(p.dims):
                    got = shape[axis]
                    if want != got:
                        # A dynamic size must also fit the type the kernel reads it as.
                        if type(want) is str and dims.setdefault(want, got) == got and got <= p.dim_max[want]:
                            continue
                        k._check_tensor(p, _TensorView(a), dims)
            values[i] = ptr
        if self._align > 1:
            for name in self._align_dims:
                if dims.get(name, 1) % self._align:  # (a size not read from the arguments: not promised)
                    return self.general().call(args)
        outputs = []
        device = self._device
        for i, dtype, shape, p_dims, returned, pack in self._out:
            if shape is None:
                shape = tuple(_kernel.dim_value(d, dims) for d in p_dims)
                if pack > 1:
                    shape = _kernel.storage_shape(shape, pack, k.params[i].name)
            # Sizes as separate arguments: measured on the H200 machine, torch.empty(*shape,
            # ...) takes 2.3 us where torch.empty(shape_tuple, ...) takes 5.4 us.
            out = torch.empty(*shape, dtype=dtype, device=device) if shape else \
                torch.empty((), dtype=dtype, device=device)
            if returned:
                outputs.append(out)
            # A workspace is freed when this call returns: torch's caching allocator keeps
            # its memory for the stream, so the kernels queued on it still own it.
            values[i] = out.data_ptr()
        if k._assume_checks:
            k._check_assumptions(dims, values)
        dyn = [dims[name] for name in self._dyn_names]
        values.extend(dyn)
        gp = self._grid_params
        grid = self.src.grid(dyn + [values[i] for i in gp[0]]) if dyn or gp[0] else self._static_grid()
        if min(grid) > 0:
            module.launch_packed(grid, self._block, self._shared, self._stream(), self._kinds, values)
        for n, (src, more, block, shared) in enumerate(self._more_launches, 1):
            grid = src.grid(dyn + [values[i] for i in gp[n]])
            if min(grid) > 0:
                more.launch_packed(grid, block, shared, self._stream(), self._kinds, values)
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs

    def _static_grid(self):
        if not hasattr(self, "_grid"):
            self._grid = self.src.grid([])
        return self._grid


_ARCH_OF_DEVICE = {}


_SM_COUNT_OF_DEVICE = {}


def _current_sm_count():
    """The current device's SM count (a persistent launch's block count), or None without a
    usable device. Cached per device, as the arch is."""
    device = _current_device()
    if device not in _SM_COUNT_OF_DEVICE:
        count = None
        if _tl.cuda_available()[0]:
            try:
                from ..carver.arch.driver import cuda_driver

                count = int(cuda_driver.get_num_sms(device))
            except Exception:  # noqa: BLE001 (no driver entry point: the launch stays as written, said in a remark)
                count = None
        _SM_COUNT_OF_DEVICE[device] = count
    return _SM_COUNT_OF_DEVICE[device]


def default_arch() -> str:
    """The current device's arch (sm_90 becomes sm_90a: the cubin is for this device only,
    so Hopper's arch-specific features such as wgmma are free to use). Cached per device,
    so that processes forked to compile (the autotuner's) need no CUDA call."""
    forced = os.environ.get("TILELANG_CUDA_ARCH")
    if forced:
        # Compiling for a named arch (e.g. on a build machine without a GPU).
        return forced
    device = _current_device()
    arch = _ARCH_OF_DEVICE.get(device)
    if arch is None:
        ok, why = _tl.cuda_available()
        if not ok:
            raise TileLangRuntimeError(
                f"no CUDA device to read the arch from ({why}); give it, e.g. target='cuda -arch=sm_90a', "
                "or set TILELANG_CUDA_ARCH=sm_90a")
        arch = _tl.cuda_compile_arch(_tl.device_arch(device))  # sm_90 -> sm_90a
        _ARCH_OF_DEVICE[device] = arch
    return arch


def _with_tensor_maps(module, src, arch):
    """Declares the kernel's TMA descriptor parameters (each launch builds them from the
    tensors) and how it is launched."""
    for spec, im2col in zip(src.tma_specs, src.tma_im2col):
        module.add_tensor_map(*spec, im2col=im2col)
    module.programmatic_launch = programmatic_launch(src, arch)
    return module


def programmatic_launch(src, arch) -> bool:
    """Whether the kernel is launched with programmatic stream serialization allowed: it runs
    T.pdl_sync, so it may start while the previous kernel in the stream still runs (sm_90+:
    before, griddepcontrol is not emitted, so the kernel must not start early)."""
    return bool(src.programmatic_launch and arch and _tl.cuda_target(arch)["programmatic_launch"])


def _current_device() -> int:
    try:
        import torch

        return torch.cuda.current_device()
    except Exception:  # noqa: BLE001 - no torch: the first device
        return 0


class _TensorView:
    """What JITKernel._check_tensor reads from a tensor."""

    def __init__(self, t):
        from ..language.dtypes import canonical

        self.shape = tuple(t.shape)
        self.dtype = canonical(t.dtype)
        self.strides = tuple(t.stride())


# The checks (and their messages) are shared with docs/bad-input.md: jit/arguments.py.
_as_cuda_tensor = _arguments.as_cuda_tensor
