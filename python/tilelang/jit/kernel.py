"""A compiled kernel: call it with arrays; ask it for its source."""
from __future__ import annotations

import os
import sys
import threading
import time
import weakref

import numpy as np

from .. import _tl, env
from ..errors import TileLangCompileError, TileLangArgumentError, TileLangRuntimeError
from ..frontend.parser import PrimFunc
from ..language.dtypes import output_storage_dtype, pack_factor, packed_logical_strides, storage_dtypes
from ..language.values import Buffer, PrimExpr
from ..cache import report_cache_warnings
from . import arguments
from .target import resolve


# tl::cpu::kMbarrierStatus (templates/tl/cpu/mbarrier.h): a CPU kernel whose mbarrier wait could not pass
_MBARRIER_STATUS = 0x7B000000
_DIVERGENT_THREADS_STATUS = 0x7C000000  # (tl_cpu.h: kDivergentThreadsStatus)

class AffineDim(str):
    """A dimension `a * var + b` of a symbolic variable (T.Tensor((n * 4,), ...)): the text is
    the str value; the runtime takes var from another dimension or solves for it."""

    def __new__(cls, text, var, a, b):
        obj = super().__new__(cls, text)
        obj.var, obj.a, obj.b = var, a, b
        return obj

    def value(self, dims):
        return self.a * dims[self.var] + self.b

    def solve(self, size):
        """var for this size, or None when no integer gives it."""
        q, r = divmod(size - self.b, self.a)
        return q if r == 0 and q >= 0 else None


def dim_value(d, dims):
    """The size of dimension `d` (an int, a variable's name or an AffineDim) given the variables."""
    if isinstance(d, int):
        return d
    return d.value(dims) if isinstance(d, AffineDim) else dims[d]


class _ParamInfo:
    __slots__ = ("name", "is_tensor", "dtype", "dims", "dim_max", "strides", "pack", "storage")

    def __init__(self, p):
        self.is_tensor = isinstance(p, Buffer)
        self.name = p.name if self.is_tensor else p.node.var_name
        # (a T.ptr parameter's dtype, "handle", is no T.dtype: read the node's)
        self.dtype = str(p.dtype) if self.is_tensor else p.node.dtype
        # 4-bit types: `pack` values per byte along the last dimension; `storage`: the
        # dtypes the argument may have (dtypes.storage_dtypes).
        self.pack = pack_factor(self.dtype) if self.is_tensor else 1
        self.storage = storage_dtypes(self.dtype)
        # each dim: an int (static) or the name of a dynamic dimension
        self.dims = []
        # dynamic dimension name -> the largest size its integer type holds
        self.dim_max = {}
        # T.StridedTensor: each stride an int or the name of the variable it binds; None for
        # a T.Tensor (contiguous, as upstream requires of it)
        self.strides = None
        if self.is_tensor and p.node.strides:
            self.strides = []
            for s in p.node.strides:
                if s.is_var:
                    self.strides.append(s.var_name)
                    self.dim_max.setdefault(s.var_name, int(np.iinfo(s.dtype).max))
                elif (c := _const_int(s)) is not None:
                    self.strides.append(c)
                else:
                    raise TileLangRuntimeError(
                        f"parameter {self.name!r}: stride {s!r} must be an int or a T.dynamic variable")
        if self.is_tensor:
            for d in p.shape:
                if isinstance(d, int):
                    self.dims.append(d)
                elif isinstance(d, PrimExpr) and d.node.is_var:
                    self.dims.append(d.node.var_name)
                    self.dim_max[d.node.var_name] = int(np.iinfo(str(d.dtype)).max)
                elif isinstance(d, PrimExpr) and (form := _tl.affine_in_one_var(d.node)) is not None:
                    var, a, b = form
                    self.dims.append(AffineDim(str(d), var, a, b))
                    self.dim_max.setdefault(var, int(np.iinfo(str(d.dtype)).max))
                else:
                    raise TileLangRuntimeError(
                        f"parameter {self.name!r}: dimension {d!r} must be an int, a T.dynamic variable or "
                        "a * variable + b")

    def shape_str(self):
        return "(" + ", ".join(str(d) for d in self.dims) + ")"

    def strides_str(self):
        return "(" + ", ".join(str(d) for d in self.strides) + ")"

    @property
    def is_pointer(self):
        """A T.ptr parameter: an address."""
        return self.dtype == "handle"


def _const_int(e):
    """The value of a constant integer expression, or None."""
    from ..language.values import _py_or_expr

    v = _py_or_expr(e)
    return v if isinstance(v, int) else None


def _normalize_out_idx(out_idx, n):
    if out_idx is None:
        return []
    idx = [out_idx] if isinstance(out_idx, int) else list(out_idx)
    out = []
    for i in idx:
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            raise ValueError(f"out_idx {i} is out of range for a kernel with {n} parameters")
        out.append(j)
    return sorted(set(out))


# CUDA compiler flags a program written for the GPU may pass (T.annotate_compile_flags,
# compile_flags=): on the CPU target the C++ compiler's equivalent, or nothing. Fast math is
# not -ffast-math: a shared library linked with it sets flush-to-zero for the whole process
# (crtfastmath), changing every other kernel's subnormal results; these keep IEEE values.
_FAST = ("-fno-math-errno", "-freciprocal-math", "-ffp-contract=fast")
_NVCC_TO_CXX = {"--use_fast_math": _FAST, "-use_fast_math": _FAST}
_NVCC_ONLY = ("-lineinfo", "--ptxas-options", "-Xptxas", "--expt-", "-arch", "--gpu-architecture", "-gencode",
              "--generate-code", "-maxrregcount", "--maxrregcount", "-rdc", "--relocatable-device-code",
              "--extra-device-vectorization", "--extended-lambda", "--restrict", "-Xcompiler")


def _cpu_compile_flags(flags, remarks):
    """`flags` for the CPU target's C++ compiler: CUDA compiler flags translated or left out,
    each said in `remarks`; the others as given."""
    out = []
    for f in flags:
        if f in _NVCC_TO_CXX:
            out.extend(_NVCC_TO_CXX[f])
            remarks.append(f"compile flag {f}: {' '.join(_NVCC_TO_CXX[f])} on the CPU target")
        elif f.startswith(_NVCC_ONLY):
            remarks.append(f"compile flag {f}: a CUDA compiler flag, not used on the CPU target")
        else:
            out.append(f)
    return out


def _environment_pass_configs():
    """TILELANG_PASS_CONFIGS="key=value,key=value": defaults beneath every kernel's own
    pass_configs, for trying a setting on programs one cannot edit (upstream's examples)."""
    text = os.environ.get("TILELANG_PASS_CONFIGS", "")
    out = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep:
            raise ValueError(f"TILELANG_PASS_CONFIGS: expected key=value items separated by commas, got {item!r}")
        out[key.strip()] = value.strip()
    return out


class JITKernel:
    """A kernel compiled for one target. Calling it runs it on arrays; parameters listed in
    ``out_idx`` are allocated and returned rather than passed."""

    _call_plan = None  # a CUDA kernel's C++ call path, once its first call has prepared it

    def __init__(self, func: PrimFunc, out_idx=None, target="auto", pass_configs=None,
                 compile_flags=None, verbose=False):
        if not isinstance(func, PrimFunc):
            raise TypeError(f"tilelang.compile expects a @T.prim_func, got {type(func).__name__}")
        self.func = func
        self.name = func.name
        resolved = resolve(target)
        self.target = resolved.kind
        self.target_arch = resolved.arch
        self.params = [_ParamInfo(p) for p in func.params]
        # T.alloc_global buffers come last; out_idx (negative ones too) counts the others.
        self.workspace_idx = list(getattr(func, "workspace_params", ()))
        n_user = len(self.params) - len(self.workspace_idx)
        if out_idx is not None and func.out_params:
            raise ValueError(f"Out index conflict: {func.name} returns the tensors it creates with T.empty "
                             f"(out_idx {[i - n_user for i in func.out_params]}); do not also pass "
                             f"out_idx={out_idx!r}")
        self.out_idx = sorted(set(_normalize_out_idx(out_idx, n_user) + list(func.out_params)))
        for i in self.out_idx:
            if not self.params[i].is_tensor:
                raise ValueError(f"out_idx names the scalar parameter {self.params[i].name!r}")
        # allocated per call: the outputs (returned) and the workspaces (not)
        self.alloc_idx = sorted(self.out_idx + self.workspace_idx)
        self.in_idx = [i for i in range(len(self.params)) if i not in self.alloc_idx]
        self._check_output_dims()
        self.pass_configs = dict(_environment_pass_configs())
        self.pass_configs.update({getattr(k, "value", str(k)): str(v) for k, v in (pass_configs or {}).items()})
        self.compile_flags = [compile_flags] if isinstance(compile_flags, str) else list(compile_flags or [])
        self.remarks = []
        try:
            self._compile(verbose)
        except _tl.CompileError as e:
            # A mistake found while lowering: point at the user's line, as the front end does.
            msg, file, line, col, _, end_col = e.args
            raise TileLangCompileError(msg, file, line, col, end_col) from None
        self._assume_checks = self._host_assumptions()
        if os.environ.get("TILELANG_REMARKS", "0") not in ("0", "", "false"):
            for r in self.remarks:
                print(f"[tilelang] {self.name}: {r}", file=sys.stderr)
        from ..lower import tracing_requested

        if tracing_requested(self.pass_configs):
            self._dump_ir()
        self._register_with_torch()

    def _register_with_torch(self):
        """With torch loaded, the kernel is registered as a custom op now, so that a call
        traced by torch.compile becomes that op (registering while tracing would break the
        graph). Without torch, nothing happens and torch is never imported."""
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(getattr(torch, "library", None), "register_fake"):
            return
        global _torch_compiling
        _torch_compiling = torch.compiler.is_compiling
        try:
            from .torch_op import register

            register(self)  # the op lives as long as this kernel (see torch_op.py)
        except Exception as e:  # noqa: BLE001 - a kernel that torch cannot describe still runs eagerly
            self.remarks.append(f"not registered as a torch custom op ({e}); inside torch.compile a call "
                                "to it breaks the graph")

    def _dump_ir(self):
        """TILELANG_DUMP_IR_DIR / TILELANG_PASS_PROFILE (or their pass configs): the IR after
        each pass, one numbered file each, or the pass times (lowered again, with tracing on,
        through tilelang.lower)."""
        from ..lower import lower

        target = "cpu" if self.target == "cpu" else f"cuda -arch={self._cuda.arch}"
        lower(self.func, target=target, pass_configs=self.pass_configs)

    # ------------------------------------------------------------------ compilation

    def _compile(self, verbose):
        _tl.take_cache_warnings()  # anything left from an earlier build that raised
        try:
            self._compile_target(verbose)
        except RuntimeError as e:
            if not env.is_cache_enabled() or env.cache_writable():
                raise
            # A read-only or unusable cache folder: build privately (cached kernels found
            # there are still used by later compiles).
            report_cache_warnings([f"tilelang: the kernel cache {env.cache_dir()} cannot be written; kernels it "
                                   "lacks are compiled into a private temporary folder"], stacklevel=5)
            with env.private_cache():
                self._compile_target(verbose)

    def _compile_target(self, verbose):
        if self.target == "cuda":
            from .cuda_backend import CudaBackend

            try:
                self._cuda = CudaBackend(self, self.target_arch, self.pass_configs, self.compile_flags, verbose)
            finally:
                report_cache_warnings(_tl.take_cache_warnings(), stacklevel=6)
            self.source, self.remarks = self._cuda.source, self._cuda.remarks
            self.cache_hit, self.compile_seconds = self._cuda.cache_hit, self._cuda.compile_seconds
            self.dynamic_dims = self._cuda.src.dynamic_dims
            return
        t0 = time.perf_counter()
        lowered, self.remarks, _ = _tl.lower_cpu(self.func.node, self.pass_configs, False)
        self.remarks = list(self.remarks)
        cpu_flags = _cpu_compile_flags(self.compile_flags, self.remarks)
        self.lowered = lowered
        self.source, self.entry, self.dynamic_dims = _tl.codegen_cpu(lowered)
        cache_dir = env.kernel_cache_dir()
        try:
            path, hit, cmd = _tl.build_cpu(self.source, cache_dir, env.template_dir(), cpu_flags)
        finally:
            report_cache_warnings(_tl.take_cache_warnings(), stacklevel=6)
        try:
            self._library = _load_library(path, self.entry)
        except RuntimeError as e:
            if not hit:
                raise TileLangRuntimeError(f"kernel {self.name!r}: {e}") from None
            # A cached library that matches its checksum but does not load (a cache folder
            # copied from another machine, say): drop it and build again, once.
            try:
                os.unlink(path)
            except OSError:
                pass
            path, hit, cmd = _tl.build_cpu(self.source, cache_dir, env.template_dir(), cpu_flags)
            _tl.take_cache_warnings()  # the message below says it
            report_cache_warnings([f"tilelang: the cached kernel library {path} could not be loaded ({e}); "
                                   "it was rebuilt"], stacklevel=6)
            self._library = _load_library(path, self.entry)
        self._module = self._library.module
        self.library_path = path
        self.cache_hit = hit
        self.compile_seconds = time.perf_counter() - t0
        if not hit and (verbose or env.print_on_compilation()):
            print(f"[tilelang] compiled kernel {self.name!r} for cpu in {self.compile_seconds:.2f} s",
                  file=sys.stderr)

    def _sizing_scalars(self):
        """Names of integer scalar parameters that size an output (`n: T.int32`, then
        `T.empty((3, n * 2), ...)`): each call's value of the parameter gives the size."""
        if not hasattr(self, "_sizing_scalar_names"):
            used = {(d.var if isinstance(d, AffineDim) else d) for i in self.alloc_idx for d in self.params[i].dims
                    if isinstance(d, str)}
            self._sizing_scalar_names = {p.name for i, p in enumerate(self.params) if i in self.in_idx
                                         and not p.is_tensor and not p.is_pointer and "int" in p.dtype
                                         and p.name in used}
        return self._sizing_scalar_names

    def _output_size_arg(self, p, value):
        if value < 0:
            raise TileLangArgumentError(
                f"{self.name}(): argument {p.name!r} sizes an output, so it must be >= 0, got {value}")
        return int(value)

    def _check_output_dims(self):
        for i in self.alloc_idx:
            if self.params[i].strides is not None:
                # Allocated here, it would be contiguous: not what the kernel was compiled for.
                what = "output" if i in self.out_idx else "T.alloc_global buffer"
                raise TileLangRuntimeError(
                    f"{what} {self.params[i].name!r} is a T.StridedTensor; the runtime allocates contiguous "
                    "tensors only: pass it as an input, or declare it T.Tensor")
        known = {(d.var if isinstance(d, AffineDim) else d) for i in self.in_idx for d in self.params[i].dims
                 if isinstance(d, str)}
        known |= self._sizing_scalars()
        for i in self.alloc_idx:
            for d in self.params[i].dims:
                if isinstance(d, str) and (d.var if isinstance(d, AffineDim) else d) not in known:
                    what = "output" if i in self.out_idx else "T.alloc_global buffer"
                    raise TileLangRuntimeError(
                        f"{what} {self.params[i].name!r} has the dynamic dimension {d!r}, which no input "
                        "determines; the runtime cannot size it")

    # ------------------------------------------------------------------ introspection

    def get_kernel_source(self, kernel_only=True) -> str:
        return self.source

    @property
    def kernel_source(self) -> str:
        return self.source

    def get_host_source(self) -> str:
        """The host side of a call: argument checks, outputs, the launch (a readable
        description; the host path is Python, and on the CPU the entry point is in the
        kernel source)."""
        from .export import host_description

        return host_description(self)

    @property
    def host_source(self) -> str:
        return self.get_host_source()

    def get_remarks(self):
        """Decisions the compiler made for this kernel (instruction choices, fallbacks)."""
        return list(self.remarks)

    def show_source(self, which="kernel"):
        """Prints the kernel source ("kernel"), the host side ("host") or both ("both")."""
        if which not in ("kernel", "host", "both"):
            raise ValueError(f"show_source: which must be 'kernel', 'host' or 'both', got {which!r}")
        if which in ("kernel", "both"):
            print(self.get_kernel_source())
        if which in ("host", "both"):
            print(self.get_host_source())

    def export_sources(self, kernel_path=None, host_path=None):
        """Writes the kernel source and/or the host description to files."""
        for path, text in ((kernel_path, self.get_kernel_source()), (host_path, self.get_host_source())):
            if path:
                with open(path, "w") as f:
                    f.write(text)

    # ------------------------------------------------------------------ export

    def export_library(self, kernel_file, symbol=None):
        """Writes a self-contained artifact (see docs/export.md). CPU: the shared library
        `kernel_file` exporting the plain C function `symbol` (default tl_<name>), declared in
        `<stem>.h` beside it. CUDA: the cubin, and `<stem>.h` with the launch facts.
        Returns the paths written (a dict)."""
        from . import export

        if self.target == "cuda":
            return export.export_cuda(self, kernel_file, symbol)
        return export.export_cpu(self, kernel_file, symbol)

    def get_ptx(self) -> str:
        """The kernel's PTX (CUDA only; from NVRTC, no GPU needed)."""
        self._need_cuda("get_ptx")
        if getattr(self, "_ptx", None) is None:
            from .export import cuda_ptx

            self._ptx = cuda_ptx(self)
        return self._ptx

    def show_ptx(self):
        print(self.get_ptx())

    def export_ptx(self, path):
        with open(path, "w") as f:
            f.write(self.get_ptx())

    def get_sass(self) -> str:
        """The kernel's SASS (CUDA only), disassembled by cuobjdump from the cubin (cuobjdump
        or nvdisasm from the CUDA toolkit: on PATH, under $CUDA_HOME/bin or /usr/local/cuda/bin)."""
        self._need_cuda("get_sass")
        if getattr(self, "_sass", None) is None:
            from .export import cuda_sass

            self._sass = cuda_sass(self._cuda.cubin_path)
        return self._sass

    def show_sass(self):
        print(self.get_sass())

    def export_sass(self, path):
        with open(path, "w") as f:
            f.write(self.get_sass())

    def _need_cuda(self, what):
        if self.target != "cuda":
            raise TileLangRuntimeError(f"kernel.{what}() is for CUDA kernels; {self.name!r} targets {self.target}")

    @property
    def resource_usage(self) -> dict:
        """ptxas' report for CUDA kernels: registers, spill_stores_bytes, spill_loads_bytes
        (the maximum over the kernel's CUDA kernels) and per_function; {} on the CPU."""
        if self.target == "cuda":
            return dict(self._cuda.resource_usage or {})
        return {}

    @property
    def n_regs(self):
        return self.resource_usage.get("registers")

    @property
    def n_spills(self):
        """Bytes spilled (stores + loads), or None when unknown (CPU, or no ptxas report)."""
        u = self.resource_usage
        if u.get("spill_stores_bytes") is None and u.get("spill_loads_bytes") is None:
            return None
        return (u.get("spill_stores_bytes") or 0) + (u.get("spill_loads_bytes") or 0)

    @property
    def n_max_threads(self):
        if self.target != "cuda":
            return None
        n = 1
        for b in self._cuda.src.block:
            n *= b
        return n

    @property
    def shared_bytes(self):
        return self._cuda.shared_bytes if self.target == "cuda" else None

    def get_profiler(self, tensor_supply_type=None):
        from ..profiler import Profiler

        return Profiler(self, tensor_supply_type)

    def run_once(self, func=None):
        """Runs the kernel (or `func`) once on a profiler's inputs (upstream's name)."""
        return self.get_profiler().run_once(func)

    # ------------------------------------------------------------------ calling

    def __call__(self, *args):
        if _torch_compiling():
            # Traced by torch.compile: one graph node (the registered op), no graph break.
            op = getattr(self, "_torch_op", None)
            if op is not None:
                return op[1](*args)
        # A CUDA kernel's ordinary calls run in one C++ call (cuda_backend.CudaBackend._call_plan).
        plan = self._call_plan
        if plan is not None:
            try:
                result = plan(args)
            except RuntimeError as e:
                raise TileLangRuntimeError(arguments.describe_cuda_failure(self.name, e)) from e
            if result is not CALL_FALLBACK:
                return result
        return self._call_direct(args)

    def as_torch_op(self, name=None):
        """This kernel as a PyTorch custom operator ("namespace::op"; default
        tilelang::<name>_<n>): usable in torch.compile graphs and CUDA graphs. See
        jit/torch_op.py."""
        from .torch_op import as_torch_op

        return as_torch_op(self, name)

    def _call_direct(self, args):
        if self.target == "cuda":
            try:
                return self._cuda.call(args)
            except (TileLangArgumentError, TileLangRuntimeError):
                raise
            except RuntimeError as e:
                # From the driver (module load or launch): name the kernel, and say whether
                # the process can still use CUDA.
                raise TileLangRuntimeError(arguments.describe_cuda_failure(self.name, e)) from e
        n_in = len(self.in_idx)
        if len(args) != n_in:
            names = ", ".join(self.params[i].name for i in self.in_idx)
            raise TileLangArgumentError(
                f"{self.name}() takes {n_in} argument(s) ({names}), got {len(args)}")
        dims = {}
        values = [None] * len(self.params)
        use_torch = None
        for i, a in zip(self.in_idx, args):
            p = self.params[i]
            if p.is_tensor and a is None:
                values[i] = self._null_tensor(p)
            elif p.is_tensor:
                t = arguments.tensor_arg(a, p.name, self.name, strided=p.strides is not None)
                self._check_tensor(p, t, dims)
                values[i] = t.ptr
                if use_torch is None:
                    use_torch = t.obj if t.is_torch else False
            elif p.is_pointer:
                values[i] = arguments.pointer_arg(a, p.name, self.name, "cpu")
            else:
                values[i] = arguments.scalar_arg(a, p.name, p.dtype, self.name)
                if p.name in self._sizing_scalars():
                    dims[p.name] = self._output_size_arg(p, values[i])
        if use_torch is None:
            use_torch = _torch_when_loaded()
        outputs, workspaces = [], []  # workspaces stay referenced until the run returns
        for i in self.alloc_idx:
            p = self.params[i]
            shape = storage_shape(tuple(dim_value(d, dims) for d in p.dims), p.pack, p.name)
            out = _allocate(shape, p.dtype, use_torch)
            (outputs if i in self.out_idx else workspaces).append(out)
            values[i] = out.data_ptr() if use_torch is not None and use_torch is not False else \
                out.__array_interface__["data"][0]
        if self._assume_checks:
            self._check_assumptions(dims, values)
        for name, *_ in self.dynamic_dims:
            values.append(dims[name])
        status = self._module.run(values)
        if status != 0:
            if status >> 24 == _MBARRIER_STATUS >> 24:
                raise TileLangRuntimeError(
                    f"kernel {self.name!r}: the mbarrier wait at line {status & 0xFFFFFF} can never complete on "
                    "the CPU target: the arrivals or bytes it waits for never come (a GPU would hang too), or come "
                    "later in program order from threads the CPU's emulation does not run at the same time (it "
                    "runs warpgroups concurrently only as the branches of a top-level condition on the thread "
                    "index, outside loops; run this kernel on CUDA)")
            if status >> 24 == _DIVERGENT_THREADS_STATUS >> 24:
                raise TileLangRuntimeError(
                    f"kernel {self.name!r}: at line {status & 0xFFFFFF} a block's threads disagreed (a break or "
                    "continue taken by some of them and not others, or a loop whose bounds differ between them); "
                    "the CPU target runs a block's threads in lockstep and runs a loop, leaves it or skips an "
                    "iteration only with all of them (values every thread computes alike work); run this kernel "
                    "on CUDA")
            raise TileLangRuntimeError(f"kernel {self.name!r} failed with status {status}")
        if not outputs:
            return None
        return outputs[0] if len(outputs) == 1 else outputs

    def _host_assumptions(self):
        """The T.assume conditions over scalar parameters and dynamic sizes only (`N % 4 ==
        0`), compiled as Python: the host checks them before each launch, as upstream does. A
        condition naming anything else (a loop or thread index, an element, a function) is
        left to the kernel, which trusts it; so is one with a true division, whose meaning
        on integers Python does not share."""
        names = {p.name for p in self.params if not p.is_tensor and not p.is_pointer}
        names |= {name for name, *_ in self.dynamic_dims}
        checks = []
        for text in getattr(self.func, "assumptions", ()):
            if " / " in text:
                continue
            try:
                code = compile(text, "<T.assume>", "eval")
            except SyntaxError:
                continue
            if code.co_names and set(code.co_names) <= names:
                checks.append((text, code))
        return checks

    def _check_assumptions(self, dims, values):
        """Raises RuntimeError "Assume: <condition>" for a T.assume the call's sizes break."""
        env = dict(dims)
        for i, p in enumerate(self.params):
            if not p.is_tensor and not p.is_pointer and values[i] is not None:
                env[p.name] = values[i]
        for text, code in self._assume_checks:
            if not eval(code, {"__builtins__": {}}, env):  # noqa: S307 - our own printed condition, names checked
                raise TileLangRuntimeError(f"{self.name}(): Assume: {text} does not hold for this call "
                                           f"({', '.join(f'{k} = {env[k]}' for k in sorted(set(code.co_names)))})")

    def _null_tensor(self, p):
        """None for a tensor parameter the kernel never uses (an optional input the program was
        built without: `if with_bias:` around its only use) passes a null pointer, as upstream
        does; for one it uses, a clear error instead of a crash in the kernel."""
        unused = getattr(self, "_unused_tensors", None)
        if unused is None:
            kept = set(_tl.run_pass("drop-unused-params", self.func.node).param_names)
            unused = self._unused_tensors = {q.name for q in self.params if q.is_tensor and q.name not in kept}
        if p.name in unused:
            return 0
        raise TileLangArgumentError(
            f"{self.name}(): argument {p.name!r} is None, but the kernel uses {p.name} (None passes a null pointer "
            f"only for a tensor the kernel never reads or writes); pass a tensor of shape {p.shape_str()}")

    def _check_tensor(self, p, t, dims):
        if t.dtype not in p.storage:
            stored = "" if p.storage == (p.dtype,) else f" (stored as {' or '.join(p.storage)})"
            raise TileLangArgumentError(
                f"{self.name}(): argument {p.name!r} must have dtype {p.dtype}{stored}, got {t.dtype}")
        if p.pack > 1:
            return self._check_packed(p, t, dims)
        if len(t.shape) != len(p.dims):
            raise TileLangArgumentError(
                f"{self.name}(): argument {p.name!r} must be {len(p.dims)}-D with shape {p.shape_str()}, "
                f"got shape {tuple(t.shape)}")
        for axis, (want, got) in enumerate(zip(p.dims, t.shape)):
            if isinstance(want, AffineDim):
                self._check_affine(p, t, axis, want, int(got), dims)
            elif isinstance(want, int):
                if want != got:
                    raise TileLangArgumentError(
                        f"{self.name}(): argument {p.name!r} must have shape {p.shape_str()}, got "
                        f"{tuple(t.shape)} (dimension {axis} is {got}, expected {want})")
            elif want in dims and dims[want] != got:
                raise TileLangArgumentError(
                    f"{self.name}(): dynamic dimension {want!r} is {dims[want]} from an earlier argument but "
                    f"{got} in {p.name!r} (dimension {axis})")
            else:
                if got > p.dim_max[want]:
                    # The kernel reads the size as that type: a larger one would wrap.
                    raise TileLangArgumentError(
                        f"{self.name}(): dynamic dimension {want!r} is {got} in {p.name!r}, beyond the "
                        f"{p.dim_max[want]} its type holds; declare it T.dynamic({want!r}, \"int64\")")
                dims[want] = int(got)
        if p.strides is not None:
            self._check_strides(p, t, dims)

    def _check_strides(self, p, t, dims):
        """Upstream's rule for a T.StridedTensor: each static stride must be the argument's
        (or 0), a symbolic one is bound from it (the same variable twice must agree), and a
        dimension of size 1 may have any stride (torch and DLPack report them freely)."""
        got_all = tuple(t.strides)
        for axis, (want, got, size) in enumerate(zip(p.strides, got_all, t.shape)):
            if isinstance(want, int):
                if size != 1 and want != 0 and want != got:
                    raise TileLangArgumentError(
                        f"{self.name}(): argument {p.name!r} must have strides {p.strides_str()} (in elements), got "
                        f"{got_all} (dimension {axis} has stride {got}, expected {want})")
                continue
            if want in dims:
                if size != 1 and dims[want] != got:
                    raise TileLangArgumentError(
                        f"{self.name}(): stride {want!r} of argument {p.name!r} (dimension {axis}) is {got}, but "
                        f"{want} = {dims[want]} from an earlier size or stride")
                continue
            if got > p.dim_max[want]:
                raise TileLangArgumentError(
                    f"{self.name}(): stride {want!r} is {got} in {p.name!r}, beyond the {p.dim_max[want]} its type "
                    f"holds; declare it T.dynamic({want!r}, \"int64\")")
            dims[want] = int(got)

    def _check_packed(self, p, t, dims):
        """A 4-bit tensor's argument: its storage shape, whose last dimension holds p.pack
        values per byte, is checked as the logical shape; a T.StridedTensor's storage strides
        (in bytes) as the logical strides they give (packed_logical_strides)."""
        if len(t.shape) != len(p.dims) or not t.shape:
            raise TileLangArgumentError(
                f"{self.name}(): argument {p.name!r} ({p.dtype}, {p.pack} per byte along the last dimension) must "
                f"be {len(p.dims)}-D with logical shape {p.shape_str()}, got storage shape {tuple(t.shape)}")
        view = _LogicalView(logical_shape(t.shape, p.pack), p.dtype)
        storage = f"storage shape {tuple(t.shape)} is the logical shape {view.shape}"
        if p.strides is not None:
            view.strides = self._packed_strides(p, t)
            storage += f", its storage strides {tuple(t.strides)} the logical strides {view.strides}"
        try:
            self._check_tensor(_LogicalParam(p), view, dims)
        except TileLangArgumentError as e:
            raise TileLangArgumentError(
                f"{e} (argument {p.name!r} is {p.dtype} packed {p.pack} per byte: its {storage})") from None

    def _packed_strides(self, p, t):
        """The logical strides of a packed T.StridedTensor's argument, as upstream binds them:
        the bytes of the last dimension must be consecutive (a byte holds two neighbours)."""
        shape, strides = tuple(int(d) for d in t.shape), tuple(int(s) for s in t.strides)
        if shape[-1] != 1 and strides[-1] != 1:
            raise TileLangArgumentError(
                f"{self.name}(): argument {p.name!r} ({p.dtype}, {p.pack} per byte along the last dimension) must "
                f"have storage stride 1 in its last dimension, got storage strides {strides} for storage shape "
                f"{shape}; the values of a row must be packed in consecutive bytes")
        return packed_logical_strides(strides, p.pack)

    def _check_affine(self, p, t, axis, want, got, dims):
        var = want.var
        if var in dims:
            if want.value(dims) != got:
                raise TileLangArgumentError(
                    f"{self.name}(): argument {p.name!r} dimension {axis} is {got}, but {want} = "
                    f"{want.value(dims)} with {var} = {dims[var]} from an earlier argument")
            return
        n = want.solve(got)
        if n is None:
            raise TileLangArgumentError(
                f"{self.name}(): argument {p.name!r} dimension {axis} is {got}, which {want} gives for no integer "
                f"{var} >= 0 (shape {p.shape_str()}, got {tuple(t.shape)})")
        if n > p.dim_max[var]:
            raise TileLangArgumentError(
                f"{self.name}(): dynamic dimension {var!r} would be {n}, beyond the {p.dim_max[var]} its type holds")
        dims[var] = n


def logical_shape(shape, pack):
    """The logical shape of a packed 4-bit tensor's storage shape."""
    shape = tuple(int(d) for d in shape)
    return shape[:-1] + (shape[-1] * pack,) if pack > 1 else shape


def storage_shape(shape, pack, name):
    """The storage shape of an allocated output of logical `shape` (its last dimension even)."""
    shape = tuple(shape)
    if pack == 1:
        return shape
    if not shape or shape[-1] % pack:
        raise TileLangRuntimeError(f"output {name!r}: a 4-bit tensor's last dimension must be a multiple of "
                                   f"{pack} (two values per byte), got shape {shape}")
    return shape[:-1] + (shape[-1] // pack,)


class _LogicalParam:
    """A packed parameter seen as its logical tensor (for the common shape checks)."""

    def __init__(self, p):
        self.name, self.dtype, self.dims, self.dim_max, self.pack = p.name, p.dtype, p.dims, p.dim_max, 1
        self.storage, self.shape_str = (p.dtype,), p.shape_str
        self.strides, self.strides_str = p.strides, p.strides_str


class _LogicalView:
    def __init__(self, shape, dtype, strides=()):
        self.shape, self.dtype, self.strides = shape, dtype, strides


def _never():
    return False


# What a CUDA kernel's call plan (set by CudaBackend on its first call) returns for a call it
# leaves to the Python path.
CALL_FALLBACK = object()

# torch.compiler.is_compiling once torch is loaded (set by JITKernel._register_with_torch).
_torch_compiling = _never


class _Library:
    """A loaded kernel library, shared by the kernels compiled to the same file. It is
    closed (dlclose) when the last of them is dropped; the C++ side keeps the OpenMP
    runtime loaded, so that closing the last library never unloads it under its idle
    worker threads."""

    __slots__ = ("module", "__weakref__")

    def __init__(self, module):
        self.module = module


_LOADED = weakref.WeakValueDictionary()
_LOADED_LOCK = threading.Lock()


def _load_library(path, entry):
    key = (path, entry)
    with _LOADED_LOCK:
        lib = _LOADED.get(key)
        if lib is None:
            lib = _Library(_tl.CpuModule(path, entry))
            _LOADED[key] = lib
        return lib


def loaded_library_count() -> int:
    """How many kernel libraries this process holds open (for tests and diagnostics)."""
    with _LOADED_LOCK:
        return len(_LOADED)


def torch_storage_dtype(torch, dtype):
    """The torch dtype of an allocated tensor of TileLang dtype `dtype` (packed bytes, or
    torch's float4_e2m1fn_x2, for the 4-bit types)."""
    name = output_storage_dtype(dtype, torch)
    return getattr(torch, "float4_e2m1fn_x2" if name == "float4_e2m1fnx2" else name)


class _TorchHost:
    device = "cpu"


def _torch_when_loaded():
    """With no tensor argument to follow, outputs are torch CPU tensors when the process has
    already imported torch (upstream returns torch tensors; a kernel() with no inputs is mostly
    called from torch code), else numpy arrays; torch is never imported here."""
    return _TorchHost() if "torch" in sys.modules else False


def _allocate(shape, dtype, like_torch):
    if like_torch is not None and like_torch is not False:
        import torch

        return torch.empty(shape, dtype=torch_storage_dtype(torch, dtype), device=like_torch.device)
    return np.empty(shape, dtype=arguments.numpy_dtype(output_storage_dtype(dtype)))
