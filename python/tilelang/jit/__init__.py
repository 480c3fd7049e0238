"""``tilelang.compile`` and ``@tilelang.jit`` (lazy and eager styles)."""
from __future__ import annotations

import ast
import functools
import inspect
import numbers
import os
import sys
import textwrap

from ..frontend import eager as _eager
from ..frontend.parser import Parser, PrimFunc
from .kernel import JITKernel
from .target import resolve

__all__ = ["JITKernel", "compile", "jit"]


def compile(func, out_idx=None, target=None, execution_backend=None, target_host=None,  # noqa: A001
            verbose=False, pass_configs=None, compile_flags=None) -> JITKernel:
    """Compiles a @T.prim_func for a target and returns a callable kernel."""
    from ..tvm.transform import current_config

    scoped = current_config()  # `with tilelang.tvm.transform.PassContext(config=...)`
    if scoped:
        pass_configs = dict(scoped, **(pass_configs or {}))
    # the function's own (T.annotate_pass_configs / T.annotate_compile_flags in its body);
    # the arguments here override its pass configs and add to its flags
    if getattr(func, "pass_configs", None):
        pass_configs = dict(func.pass_configs, **(pass_configs or {}))
    if getattr(func, "compile_flags", None):
        compile_flags = list(func.compile_flags) + (
            [compile_flags] if isinstance(compile_flags, str) else list(compile_flags or []))
    kernel = JITKernel(func, out_idx=out_idx, target=resolve(target), pass_configs=pass_configs,
                       compile_flags=compile_flags, verbose=verbose)
    # Pass-config keys the compiler does not act on (upstream ones among them) are accepted
    # and named in the remarks.
    from ..transform import config_remarks

    extra = config_remarks(pass_configs, kernel.target)
    if extra:
        kernel.remarks = list(kernel.remarks) + extra
        if os.environ.get("TILELANG_REMARKS", "0") not in ("0", "", "false"):
            for r in extra:
                print(f"[tilelang] {kernel.name}: {r}", file=sys.stderr)
    return kernel


def _is_lazy(func) -> bool:
    """Lazy style: the function builds and returns a @T.prim_func (an inner one, or one
    made by a helper). Eager style: the body itself is the kernel: it launches
    `with T.Kernel(...)`, annotates parameters (`A: T.Tensor(...)`) or uses T.const/T.empty."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError, SyntaxError):
        return True
    fdef = tree.body[0]
    if not isinstance(fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return True
    params = {a.arg for a in fdef.args.args + fdef.args.kwonlyargs}
    # A tensor annotation in the signature (`A: T.Tensor[(16, 16), T.float32]`) makes the
    # body the kernel, whatever it holds (a macro that launches it, a bare thread_binding loop).
    for a in fdef.args.args + fdef.args.kwonlyargs:
        if a.annotation is not None and _names_tensor_type(a.annotation):
            return False
    for node in _own_nodes(fdef):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                target = dec.func if isinstance(dec, ast.Call) else dec
                if (isinstance(target, ast.Attribute) and target.attr == "prim_func") or \
                        (isinstance(target, ast.Name) and target.id == "prim_func"):
                    return True
    for node in _own_nodes(fdef):
        if isinstance(node, (ast.With, ast.AsyncWith)):
            return False
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id in params:
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("const", "empty"):
            return False
    return True


def _names_tensor_type(ann) -> bool:
    """Whether an annotation is T.Tensor / T.StridedTensor / T.Buffer, called or subscripted."""
    while isinstance(ann, (ast.Subscript, ast.Call)):
        ann = ann.value if isinstance(ann, ast.Subscript) else ann.func
    return isinstance(ann, ast.Attribute) and ann.attr in ("Tensor", "StridedTensor", "Buffer")


def _own_nodes(fdef):
    """The nodes of a function's body, not descending into nested functions or classes
    (but yielding the nested definitions themselves)."""
    stack = list(fdef.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        stack.extend(ast.iter_child_nodes(node))


def _key_part(v):
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, numbers.Number):
        device = str(getattr(v, "device", "cpu"))
        # strides too: a T.StridedTensor's stride names are specialised from them
        from ..frontend.eager import _element_strides

        return ("tensor", tuple(int(s) for s in v.shape), str(v.dtype), device, _element_strides(v))
    try:
        hash(v)
        return v
    except TypeError:
        return repr(v)


def par_compile(funcs, out_idx=None, execution_backend=None, target=None, target_host=None, verbose=False,
                pass_configs=None, compile_flags=None, num_workers=None, ignore_error=False) -> list:
    """tilelang.compile of several @T.prim_func at once (upstream's name), in a pool of
    `num_workers` threads (default: one per function, at most the CPU count); the kernels in
    the functions' order. With `ignore_error`, a function that does not compile gives None
    and a warning; otherwise its error is raised."""
    funcs = list(funcs)
    if not funcs:
        return []
    workers = num_workers or min(len(funcs), os.cpu_count() or 1)
    kw = dict(out_idx=out_idx, execution_backend=execution_backend, target=target, target_host=target_host,
              verbose=verbose, pass_configs=pass_configs, compile_flags=compile_flags)
    return _run_all([functools.partial(compile, f, **kw) for f in funcs], workers, ignore_error)


def _run_all(jobs, workers, ignore_error):
    import concurrent.futures
    import warnings

    results = [None] * len(jobs)
    with concurrent.futures.ThreadPoolExecutor(max(1, workers), thread_name_prefix="tl-par-compile") as pool:
        futures = {pool.submit(job): i for i, job in enumerate(jobs)}
        for fut in concurrent.futures.as_completed(futures):
            i = futures[fut]
            try:
                results[i] = fut.result()
            except Exception as e:  # noqa: BLE001 (each failure is reported or raised)
                if not ignore_error:
                    raise
                warnings.warn(f"tilelang.par_compile: function {i} did not compile: {e}", stacklevel=3)
    return results


class JITImpl:
    """What ``@tilelang.jit`` returns."""

    def __init__(self, func, out_idx=None, target=None, pass_configs=None, compile_flags=None,
                 verbose=False):
        functools.update_wrapper(self, func)
        self.func = func
        self.out_idx = out_idx
        self.target = target
        self.pass_configs = pass_configs
        self.compile_flags = compile_flags
        self.verbose = verbose
        self.signature = inspect.signature(func)
        self.lazy = _is_lazy(func)
        if not self.lazy and out_idx is not None:
            raise ValueError("out_idx is for kernels that return a @T.prim_func; in the eager style "
                             "create outputs with T.empty() and return them")
        self._kernels = {}
        self._runtime_scalars = set()
        self._runtime_pointers = set()  # `A: T.ptr` parameters: addresses, never part of the key

    def is_lazy_mode(self) -> bool:
        return self.lazy

    # lazy: f(M, N, ...) -> JITKernel; eager: f(a, b, ...) -> outputs
    def __call__(self, *args, **kwargs):
        if self.lazy:
            return self.compile(*args, **kwargs)
        kernel, tensors = self._eager_kernel(args, kwargs, const_values={})
        return kernel(*tensors)

    def compile(self, *args, **kwargs) -> JITKernel:
        if self.lazy:
            key = (tuple(_key_part(a) for a in args), tuple(sorted((k, _key_part(v)) for k, v in kwargs.items())))
            kernel = self._kernels.get(key)
            if kernel is None:
                prim = self.func(*args, **kwargs)
                if not isinstance(prim, PrimFunc):
                    raise TypeError(f"{self.func.__name__}() must return a @T.prim_func, got {type(prim).__name__}")
                kernel = compile(prim, out_idx=self.out_idx, target=self.target, pass_configs=self.pass_configs,
                                 compile_flags=self.compile_flags, verbose=self.verbose)
                self._kernels[key] = kernel
            return kernel
        params = set(self.signature.parameters)
        consts = {k: v for k, v in kwargs.items() if k not in params}
        call_kwargs = {k: v for k, v in kwargs.items() if k in params}
        kernel, _ = self._eager_kernel(args, call_kwargs, const_values=consts)
        return kernel

    def par_compile(self, configs, num_workers=None, ignore_error=False) -> list:
        """self.compile for several configurations at once (a dict of keyword arguments or a
        tuple of positional ones each; upstream's name), in a pool of threads; the kernels in
        order, each also kept for later calls with those arguments."""
        jobs = []
        for cfg in configs:
            if isinstance(cfg, dict):
                jobs.append(functools.partial(self.compile, **cfg))
            elif isinstance(cfg, tuple):
                jobs.append(functools.partial(self.compile, *cfg))
            else:
                raise ValueError(f"par_compile: a configuration is a dict or a tuple, got {type(cfg).__name__}")
        if not jobs:
            return []
        return _run_all(jobs, num_workers or min(len(jobs), os.cpu_count() or 1), ignore_error)

    def get_tir(self, *args, **kwargs) -> PrimFunc:
        if self.lazy:
            return self.func(*args, **kwargs)
        return self.compile(*args, **kwargs).func

    def get_kernel_source(self, *args, **kwargs) -> str:
        return self.compile(*args, **kwargs).get_kernel_source()

    def _eager_key(self, values, const_values):
        parts = tuple((k, ("ptr",) if k in self._runtime_pointers else
                       ("scalar",) if k in self._runtime_scalars and not _is_tensor(v) else _key_part(v))
                      for k, v in values.items())
        return parts, tuple(sorted(const_values.items()))

    def _eager_kernel(self, args, kwargs, const_values):
        try:
            bound = self.signature.bind_partial(*args, **kwargs)
        except TypeError as e:
            raise TypeError(f"{self.func.__name__}(): {e}") from None
        bound.apply_defaults()
        values = dict(bound.arguments)
        given = dict(values)
        key = self._eager_key(given, const_values)
        kernel = self._kernels.get(key)
        if kernel is None:
            ctx = _eager.EagerContext(values, const_values)
            defaults = {k: v for k, v in values.items() if not _is_tensor(v)}
            for name in self.signature.parameters:
                values.setdefault(name, None)
            prim = Parser(self.func, eager_ctx=ctx).parse_eager(defaults)
            target = resolve(self.target, [v for v in values.values() if _is_tensor(v)])
            kernel = compile(prim, target=target, pass_configs=self.pass_configs,
                             compile_flags=self.compile_flags, verbose=self.verbose)
            kernel._eager_inputs = [n for n, _ in ctx.tensor_params]
            # run-time scalars (`alpha: T.float32` in the body) do not specialise the kernel
            self._runtime_scalars |= ctx.scalar_params
            self._runtime_pointers |= ctx.pointer_params
            self._kernels[key] = kernel
            self._kernels[self._eager_key(given, const_values)] = kernel
        tensors = [values.get(n) for n in getattr(kernel, "_eager_inputs", [])]
        return kernel, tensors


def _is_tensor(v) -> bool:
    return hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, numbers.Number)


def jit(func=None, *, out_idx=None, target=None, target_host=None, execution_backend=None,
        verbose=False, pass_configs=None, debug_root_path=None, compile_flags=None):
    """Decorator: ``@tilelang.jit`` or ``@tilelang.jit(out_idx=[-1], target="cpu")``."""
    def wrap(f):
        return JITImpl(f, out_idx=out_idx, target=target, pass_configs=pass_configs,
                       compile_flags=compile_flags, verbose=verbose)
    return wrap(func) if func is not None else wrap
