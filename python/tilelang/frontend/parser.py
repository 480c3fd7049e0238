"""Python AST -> C++ IR.

The kernel's body is never executed by Python. The parser walks its AST:
- compile-time values (ints, floats, tuples, dtypes, closure and global variables,
  helper functions) are evaluated as Python;
- run-time values (loop indices, buffer elements, expressions on them) become IR
  expressions, and statements on them become IR statements;
- ``if``/``for``/``while`` on run-time values become IR control flow, while ``if`` on a
  compile-time value picks a branch and ``for`` over a Python tuple or list is unrolled.
Every statement carries its source span, and errors point at the user's line.
"""
from __future__ import annotations

import ast
import builtins
import collections.abc as _abc
import difflib
import inspect
import numbers
import operator
import textwrap

from .. import _tl
from ..errors import TileLangCompileError, compile_error_as
from ..language import KernelSpec, LoopSpec, ScopedBufferSpec, TensorSpec, WhileSpec, WsSpec
from ..language import Ref as T_Ref, Var as T_Var
from ..language import builder as _b
from ..language.dtypes import dtype as _dtype
from ..language.dtypes import require_supported as _require_supported
from ..language.pointers import HANDLE_DTYPE, PointerType
from ..language.allreduce import ReduceScope
from ..language.reducer import check_reducers_finalized, store_to_reducer
from ..language import _lanes, _last_dim_slice
from ..language.values import LaneValues, UnboundVar
from ..language.values import Buffer, BufferRef, PrimExpr, as_expr, binary, cast
from . import eager as _eager

_BINOPS = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
    ast.BitXor: operator.xor, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
}
_CMPOPS = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
    ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
}
_MISSING = object()
_RUNTIME_SCOPE = "\0runtime"  # a key (never a Python name) marking run-time loop/branch scopes


def _runs_as_code(st) -> bool:
    """A top-level statement that makes a kernel-less @T.prim_func run as one thread: a loop,
    or a store to a buffer element (`B[0] = A[15]`, as TIR functions write them)."""
    if isinstance(st, ast.For):
        return True
    targets = st.targets if isinstance(st, ast.Assign) else [st.target] if isinstance(st, (ast.AugAssign, ast.AnnAssign)) else []
    return any(isinstance(t, ast.Subscript) for t in targets)


def _has_kernel(fdef) -> bool:
    """Whether the function's body (not nested functions) has a `with ...Kernel(...)`, a
    TVM-style launch (`for ... in T.thread_binding(..., thread="blockIdx.x")`) or a
    T.CUDASourceCodeKernel."""
    todo = list(fdef.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, (ast.Attribute, ast.Name)) and \
                getattr(n.func, "attr", getattr(n.func, "id", None)) == "CUDASourceCodeKernel":
            return True
        if isinstance(n, ast.For) and isinstance(n.iter, ast.Call):
            f = n.iter.func
            named = (isinstance(f, ast.Attribute) and f.attr == "thread_binding") or \
                (isinstance(f, ast.Name) and f.id == "thread_binding")
            thread = [k.value for k in n.iter.keywords if k.arg == "thread"] + n.iter.args[2:3]
            if named and thread and isinstance(thread[0], ast.Constant) and str(thread[0].value).startswith("blockIdx"):
                return True
        if isinstance(n, ast.With):
            for item in n.items:
                f = item.context_expr.func if isinstance(item.context_expr, ast.Call) else None
                if (isinstance(f, ast.Attribute) and f.attr in ("Kernel", "ClusterKernel")) or \
                        (isinstance(f, ast.Name) and f.id in ("Kernel", "ClusterKernel")):
                    return True
        todo.extend(ast.iter_child_nodes(n))
    return False


def _is_runtime(v) -> bool:
    return isinstance(v, (PrimExpr, BufferRef)) or (isinstance(v, Buffer) and v.scope == "var")


def _as_runtime(v) -> PrimExpr:
    if isinstance(v, Buffer):
        return v[0].load()
    return as_expr(v)


# Elements a slice assignment (`X[i, a:b] = ...`) writes one by one, at most
_MOST_SLICE_LANES = 64


class PrimFunc:
    """A parsed kernel: the C++ function plus what the runtime needs about parameters."""

    def __init__(self, node, params, name, file, out_params=(), workspace_params=()):
        self.node = node
        self.params = params          # list of Buffer (tensors) or PrimExpr (scalar vars)
        self.name = name
        self.file = file
        self.out_params = list(out_params)  # indices of parameters that are eager outputs
        # indices of T.alloc_global buffers: the last parameters, allocated per call, never
        # passed by the caller nor returned
        self.workspace_params = list(workspace_params)
        # T.annotate_pass_configs / T.annotate_compile_flags in the body
        self.pass_configs = None
        self.compile_flags = None
        self.assumptions = []  # T.assume conditions, printed

    @property
    def attrs(self) -> dict:
        """Upstream's function attributes: global_symbol, and where the body set them,
        tilelang_out_idx (the T.empty outputs, counted from the end of the parameters),
        tilelang_pass_configs and tilelang_compile_flags."""
        attrs = {"global_symbol": self.name}
        n = len(self.params) - len(self.workspace_params)
        if self.out_params:
            attrs["tilelang_out_idx"] = [i - n for i in self.out_params]
        if self.pass_configs:
            attrs["tilelang_pass_configs"] = dict(self.pass_configs)
        if self.compile_flags:
            attrs["tilelang_compile_flags"] = list(self.compile_flags)
        return attrs

    @property
    def buffer_map(self) -> dict:
        """Upstream's map from a parameter to its buffer: here a tensor parameter is its
        buffer, so each maps to itself."""
        return {p: p for p in self.params if isinstance(p, Buffer)}

    def _take_annotations(self, builder):
        self.pass_configs = dict(builder.pass_configs) if builder.pass_configs else None
        self.compile_flags = list(builder.compile_flags) if builder.compile_flags else None
        self.assumptions = list(builder.assumptions)
        return self

    def script(self) -> str:
        return self.node.script()

    def __repr__(self):
        return self.node.script()


class Parser:
    def __init__(self, func, eager_ctx=None, outer_locals=None):
        self.func = func
        self.outer_locals = dict(outer_locals) if outer_locals else {}
        self.eager = eager_ctx
        try:
            lines, start = inspect.getsourcelines(func)
        except (OSError, TypeError):
            # python -c, stdin, exec() of a string: Python kept no source to parse.
            raise TileLangCompileError(
                f"@T.prim_func {getattr(func, '__name__', '?')}: its source code is not available (defined in "
                "`python -c`, stdin or exec() of a string?); define kernels in a .py file, a notebook cell "
                "or the IPython REPL", "<unknown>", 0, 0) from None
        self.file = inspect.getsourcefile(func) or "<unknown>"
        raw = "".join(lines)
        source = textwrap.dedent(raw)
        first_raw = next((ln for ln in lines if ln.strip()), "")
        first_new = next((ln for ln in source.splitlines() if ln.strip()), "")
        self.col_offset = len(first_raw) - len(first_raw.lstrip()) - (len(first_new) - len(first_new.lstrip()))
        self.line_offset = start - 1
        tree = ast.parse(source)
        self.fdef = tree.body[0]
        if not isinstance(self.fdef, (ast.FunctionDef, ast.AsyncFunctionDef)):
            raise TypeError(f"{func!r} is not a function defined with def")
        self.globals = func.__globals__
        self.closure = {}
        if func.__closure__:
            for name, cell in zip(func.__code__.co_freevars, func.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:  # an empty cell: defined later in the enclosing scope
                    pass
        self.scopes: list[dict] = [{}]
        self.builder = _b.Builder(self.file)
        self.multi_assigned = _names_assigned_more_than_once(self.fdef)
        self.mutable_assignments = _mutable_assignments(self.fdef)
        self.returned = None
        self.in_macro = False

    # ------------------------------------------------------------------ spans, errors

    def span(self, node):
        line = getattr(node, "lineno", None)
        if line is None:
            return None
        col = node.col_offset + self.col_offset
        end_line = (getattr(node, "end_lineno", None) or line) + self.line_offset
        end_col = (getattr(node, "end_col_offset", None) or node.col_offset) + self.col_offset
        return (self.file, line + self.line_offset, col, end_line, end_col)

    def error(self, node, message, kind=None) -> TileLangCompileError:
        """The error at `node`; with `kind` (the exception class the kernel's code raised) it
        is also an instance of that class, as upstream's tests expect."""
        s = self.span(node)
        if s is None:
            return compile_error_as(kind, message)
        end_col = s[4] if s[3] == s[1] else None
        return compile_error_as(kind, message, s[0], s[1], s[2], end_col)

    def _guard(self, node, fn, *args, **kwargs):
        """Runs fn, turning any error into a TileLangCompileError at `node`."""
        prev = self.builder.span
        self.builder.span = self.span(node) or prev
        try:
            return fn(*args, **kwargs)
        except TileLangCompileError:
            raise
        except _tl.CompileError as e:
            msg, file, line, col, _, end_col = e.args
            if line:
                raise TileLangCompileError(msg, file, line, col, end_col) from None
            raise self.error(node, msg) from None
        except _tl.InternalCompilerError:
            raise
        except _b._UserError as e:
            raise self.error(node, str(e), getattr(e, "kind", ValueError)) from None
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, NameError,
                ZeroDivisionError, NotImplementedError, RuntimeError) as e:
            raise self.error(node, f"{type(e).__name__}: {e}", type(e)) from e
        finally:
            self.builder.span = prev

    # ------------------------------------------------------------------ names

    def lookup(self, name, node):
        for scope in reversed(self.scopes):
            if name in scope:
                return _eager.resolve(scope[name])
        if name in self.closure:
            return self.closure[name]
        if name in self.outer_locals and name not in self.func.__code__.co_names:
            return self.outer_locals[name]
        if name in self.globals:
            return self.globals[name]
        if hasattr(builtins, name):
            return getattr(builtins, name)
        raise self.error(node, f"name {name!r} is not defined")

    def bind(self, name, value):
        self.scopes[-1][name] = value

    def find_binding(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return _MISSING

    # ------------------------------------------------------------------ entry points

    def parse_prim_func(self) -> PrimFunc:
        returns = any(isinstance(st, ast.Return) and st.value is not None for st in self.fdef.body)
        if returns or any(a.annotation is None for a in self.fdef.args.args):
            # `def kernel(A, B):` with `A: T.Tensor(...)` in the body, or a kernel that returns
            # T.empty outputs (`def kernel(n: T.int32): out = T.empty(...); ...; return out`),
            # as upstream writes them: the eager style's parsing, with no arguments to bind
            # T.const sizes from.
            self.eager = _eager.EagerContext({a.arg: None for a in self.fdef.args.args}, {})
            return self.parse_eager({}, signature=True)
        prev = _b.set_builder(self.builder)
        try:
            params = []
            for arg in self.fdef.args.args:
                if arg.annotation is None:
                    raise self.error(arg, f"parameter {arg.arg!r} needs an annotation such as "
                                          f"T.Tensor((M, N), \"float16\")")
                spec = self._guard(arg.annotation, self.eval, arg.annotation)
                params.append(self._guard(arg, self.make_param, arg.arg, spec))
                self.bind(arg.arg, params[-1])
            self.builder.open()
            if _has_kernel(self.fdef) or not any(_runs_as_code(st) for st in self.fdef.body):
                self.visit_body(self.fdef.body)
            else:
                self.implicit_kernel(self.fdef)
            body = self.builder.close(self.span(self.fdef))
            workspaces = list(range(len(params), len(params) + len(self.builder.workspaces)))
            params = params + self.builder.workspaces
            node = _tl.prim_func(self.fdef.name, [p.node for p in params], body, self.span(self.fdef))
            return PrimFunc(node, params, self.fdef.name, self.file,
                            workspace_params=workspaces)._take_annotations(self.builder)
        finally:
            _b.set_builder(prev)

    def implicit_kernel(self, fdef):
        """A @T.prim_func without `with T.Kernel` whose body has loops or buffer stores: the
        body is one block of one thread (what upstream's CPU target runs as plain host code),
        so its loops and stores work. (Without those, tile operations outside a kernel stay
        an error.)"""
        span = self.span(fdef)
        bx = _tl.var("bx", "int32")
        self.builder.in_kernel = True
        self.builder.open()
        try:
            self.visit_body(fdef.body)
            body = self.builder.close(span)
        finally:
            self.builder.in_kernel = False
        _b.emit(_tl.kernel([_tl.const_int(1, "int32")], [bx], [1], body, span))

    def parse_eager(self, defaults: dict, signature=False) -> PrimFunc:
        """Parses an eager-style body; parameters get their values from the eager context.
        signature: a @T.prim_func's, whose parameters the signature or the body annotates."""
        prev = _b.set_builder(self.builder)
        prev_ctx = _eager.set_context(self.eager)
        try:
            for name, value in defaults.items():
                self.bind(name, value)
            if signature:
                for arg in self.fdef.args.args:
                    if arg.annotation is None:
                        self.bind(arg.arg, _Undeclared(arg.arg))
                        continue
                    spec = self._guard(arg.annotation, self.eval, arg.annotation)
                    self._guard(arg, self.declare_signature_param, arg.arg, spec)
            else:
                # eager style with tensors annotated in the signature (`def k(A: T.Tensor((64,),
                # T.float16))`, as upstream allows): declared as the body's annotations would
                # be, so the kernel also compiles without tensors when the shapes are static
                for arg in self.fdef.args.args + self.fdef.args.kwonlyargs:
                    if arg.annotation is None:
                        continue
                    try:
                        spec = self.eval(arg.annotation)
                    except Exception:  # noqa: BLE001 - not a T.Tensor annotation (a type, a string)
                        continue
                    if isinstance(spec, TensorSpec):
                        self.eager.args.setdefault(arg.arg, None)
                        self._guard(arg, self.declare_tensor_param, arg.arg, spec, arg)
                    elif isinstance(spec, PointerType):
                        # `A: T.ptr`: an address (a tensor's, or an int) at every call, never a
                        # compile-time value (par_compile passes T.ptr() in its place)
                        self._guard(arg, self.declare_signature_param, arg.arg, spec)
                        self.eager.pointer_params.add(arg.arg)
            # T.const dimensions the annotations will bind, known before any statement runs
            for name, value in _eager.shape_bindings(self.fdef, self.eager.args).items():
                self.eager.const_values.setdefault(name, value)
            self.builder.open()
            self.visit_body(self.fdef.body)
            body = self.builder.close(self.span(self.fdef))
            ctx = self.eager
            declared = {n for n, _ in ctx.tensor_params}
            if signature:
                for arg in self.fdef.args.args:
                    if arg.arg not in declared:
                        raise self.error(arg, f"parameter {arg.arg!r} needs an annotation such as "
                                              f"T.Tensor((M, N), \"float16\"), in the signature or in the body "
                                              f"(`{arg.arg}: T.Tensor(...)`)")
            for name, value in ctx.args.items():
                if _looks_like_tensor(value) and name not in declared:
                    raise self.error(self.fdef, f"parameter {name!r} receives a tensor but the body never "
                                                f"declares it; add `{name}: T.Tensor(shape, dtype)`")
            # the kernel's parameters follow the function's signature, whatever the order
            # of the annotations in the body
            order = {a.arg: i for i, a in enumerate(self.fdef.args.args + self.fdef.args.kwonlyargs)}
            ctx.tensor_params.sort(key=lambda nb: order.get(nb[0], len(order)))
            params = [b for _, b in ctx.tensor_params] + ctx.outputs
            out_params = list(range(len(ctx.tensor_params), len(params)))
            if ctx.outputs and self.returned is None:
                raise self.error(self.fdef, "the kernel creates outputs with T.empty but never returns them")
            workspaces = list(range(len(params), len(params) + len(self.builder.workspaces)))
            params = params + self.builder.workspaces
            node = _tl.prim_func(self.fdef.name, [p.node for p in params], body, self.span(self.fdef))
            return PrimFunc(node, params, self.fdef.name, self.file, out_params,
                            workspaces)._take_annotations(self.builder)
        finally:
            _eager.set_context(prev_ctx)
            _b.set_builder(prev)

    def make_param(self, name, spec):
        if isinstance(spec, TensorSpec):
            dims = []
            for d in spec.shape:
                if isinstance(d, _eager.ConstDim):
                    d._unbound()
                dims.append(as_expr(d, "int32").node)
            strides = [as_expr(s, "int32").node for s in spec.strides] if spec.strides else []
            return Buffer(_tl.buffer(name, spec.dtype, dims, "global", strides))
        if isinstance(spec, PointerType):
            return PrimExpr(_tl.var(name, HANDLE_DTYPE))  # an address, read by T.make_tensor
        if isinstance(spec, str):
            try:
                return PrimExpr(_tl.var(name, _require_supported(spec, f"parameter {name!r}")))
            except ValueError as e:
                raise _b._UserError(str(e)) from None
        if isinstance(spec, ScopedBufferSpec):
            raise _b._UserError(f"parameter {name!r}: {spec!r} annotates @T.macro parameters (tiles); a kernel's "
                                f"parameters are global tensors, T.Tensor(shape, dtype)")
        raise _b._UserError(f"parameter {name!r}: expected T.Tensor(shape, dtype) or a dtype, got {spec!r}")

    # ------------------------------------------------------------------ statements

    def visit_body(self, stmts):
        for s in stmts:
            self.visit_stmt(s)

    def visit_stmt(self, node):
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"`{type(node).__name__}` statements are not supported in TileLang kernels")
        self._guard(node, method, node)

    def stmt_Pass(self, node):
        pass

    def stmt_Assert(self, node):
        from .asserts import emit_assert

        cond = self.eval(node.test)
        msg = self.eval(node.msg) if node.msg is not None else ""
        emit_assert(cond, msg)

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant):  # docstrings and stray literals
            return
        value = self.eval(node.value)
        if isinstance(value, PrimExpr):
            _b.emit(_tl.evaluate(value.node, self.span(node)))

    def stmt_Return(self, node):
        value = self.eval(node.value) if node.value is not None else None
        if self.in_macro:
            self.returned = value
            return
        if self.eager is not None:
            outs = value if isinstance(value, (tuple, list)) else (value,)
            for v in outs:
                if not (isinstance(v, Buffer) and any(v is o for o in self.eager.outputs)):
                    raise _b._UserError("an eager kernel returns the tensors it created with T.empty")
            self.returned = list(outs)
        elif value is not None:
            raise _b._UserError("a @T.prim_func kernel returns nothing; write outputs into its parameters")

    def stmt_Assign(self, node):
        names = [t.id for t in _flat_targets(node.targets)] if _all_names(node.targets) else []
        self.builder.pending_name = names[0] if len(names) == 1 else None
        try:
            if len(names) > 1 and isinstance(node.value, ast.Tuple):
                values = []
                for n, elt in zip(names, node.value.elts):
                    self.builder.pending_name = n
                    values.append(self.eval(elt))
                value = tuple(values)
            else:
                value = self.eval(node.value)
        finally:
            self.builder.pending_name = None
        if self.builder.in_kernel and any(isinstance(t, (ast.Tuple, ast.List)) for t in node.targets) \
                and isinstance(value, tuple):
            # `a, b = b, a` / `A[0], A[1] = A[1], A[0]`: Python takes every right-hand value
            # before the first store; run-time values are read into fresh lets first.
            value = tuple(self.snapshot(v, node) for v in value)
        for target in node.targets:
            self.assign(target, value, node)

    def snapshot(self, value, node):
        """A run-time value read now, into a let (later stores cannot change it)."""
        if isinstance(value, BufferRef) and value.is_point:
            value = value.load()
        elif isinstance(value, Buffer) and value.scope == "var":
            value = value[0].load()
        if not (_is_runtime(value) and isinstance(value, PrimExpr)):
            return value
        var = _tl.var("tl_tuple_value", value.dtype)
        _b.emit(_tl.let(var, value.node, self.span(node)))
        return PrimExpr(var)

    def stmt_AnnAssign(self, node):
        if not isinstance(node.target, ast.Name):
            raise _b._UserError("annotated assignment needs a plain name")
        name = node.target.id
        ann = self.eval(node.annotation)
        if isinstance(ann, TensorSpec):
            return self.declare_tensor_param(name, ann, node)
        if isinstance(ann, str) and node.value is None:
            if self.eager is not None and name in self.eager.args:
                # eager style: `alpha: T.float32` makes the parameter a run-time scalar
                if self.builder.in_kernel or any(n == name for n, _ in self.eager.tensor_params):
                    raise _b._UserError(f"declare the scalar parameter {name!r} once, before `with T.Kernel`")
                var = PrimExpr(_tl.var(name, _dtype(ann)))
                self.eager.tensor_params.append((name, var))
                self.eager.scalar_params.add(name)
                self.bind(name, var)
                return
            raise _b._UserError(f"`{name}: {ann}` declares a scalar with no value; give it one: `{name}: {ann} = ...`")
        if node.value is None:
            raise _b._UserError(f"unsupported annotation for {name!r}: {ann!r}")
        value = self.eval(node.value)
        if isinstance(ann, str) and _is_runtime(value):
            value = cast(_as_runtime(value), ann)
        elif isinstance(ann, str) and self.builder.in_kernel:
            value = cast(value, ann)
        self.assign(node.target, value, node)

    def declare_signature_param(self, name, spec):
        """A @T.prim_func parameter annotated in the signature, next to others annotated in
        the body."""
        param = self.make_param(name, spec)
        self.eager.tensor_params.append((name, param))
        if not isinstance(param, Buffer):
            self.eager.scalar_params.add(name)
        self.bind(name, param)

    def declare_tensor_param(self, name, spec: TensorSpec, node):
        ctx = self.eager
        if ctx is None:
            raise _b._UserError(f"`{name}: T.Tensor(...)` in the body belongs to the eager style "
                                "(@tilelang.jit without an inner @T.prim_func)")
        if name not in ctx.args:
            raise _b._UserError(f"{name!r} is not a parameter of {self.fdef.name}()")
        if any(n == name for n, _ in ctx.tensor_params):
            raise _b._UserError(f"parameter {name!r} is annotated twice (in the signature and in the body); "
                                "keep one")
        arg = ctx.args[name]
        shape = _shape_of(arg)
        if shape is not None and len(shape) != len(spec.shape):
            raise _b._UserError(f"parameter {name!r}: expected a {len(spec.shape)}-D tensor "
                                f"{_fmt_shape(spec.shape)}, got shape {tuple(shape)}")
        for i, d in enumerate(spec.shape):
            if isinstance(d, _eager.ConstDim):
                if d.value is None:
                    if shape is None:
                        raise _b._UserError(f"T.const {d.name!r} is unknown: pass {d.name}=... to .compile(), "
                                            "or call the kernel with tensors")
                    d.value = int(shape[i])
                    ctx.bound_from[d.name] = f"{name}.shape[{i}]"
        dims = [_eager.resolve(d) for d in spec.shape]
        strides = []
        if spec.strides:
            # T.StridedTensor: T.const strides bind to the argument's, as sizes do to its shape.
            got = _eager._element_strides(arg)
            for i, st in enumerate(spec.strides):
                if isinstance(st, _eager.ConstDim) and st.value is None:
                    if got is None:
                        raise _b._UserError(f"T.const {st.name!r} is unknown: pass {st.name}=... to .compile(), "
                                            "or call the kernel with tensors")
                    st.value = int(got[i])
                    ctx.bound_from[st.name] = f"{name}.stride[{i}]"
            strides = [as_expr(_eager.resolve(st), "int32").node for st in spec.strides]
        buf = Buffer(_tl.buffer(name, spec.dtype, [as_expr(d, "int32").node for d in dims], "global", strides))
        ctx.tensor_params.append((name, buf))
        self.bind(name, buf)

    def stmt_AugAssign(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise _b._UserError(f"unsupported operator {type(node.op).__name__}")
        rhs = self.eval(node.value)
        if isinstance(node.target, ast.Subscript):
            ref = self.eval(node.target)
            if not isinstance(ref, BufferRef):
                container = self.eval(node.target.value)
                key = self.eval_subscript_key(node.target.slice)
                container[key] = op(container[key], rhs)
                return
            if store_to_reducer(ref, rhs, "add" if isinstance(node.op, ast.Add) else type(node.op).__name__):
                return
            self.store(ref, op(ref.load(), rhs), node)
            return
        if isinstance(node.target, ast.Name):
            current = self.lookup(node.target.id, node.target)
            if isinstance(current, Buffer) and current.scope == "var":
                self.store(current[0], op(current[0].load(), rhs), node)
                return
            self.assign(node.target, op(current, rhs), node)
            return
        raise _b._UserError("unsupported augmented assignment target")

    def assign(self, target, value, node):
        if isinstance(target, (ast.Tuple, ast.List)):
            try:
                values = list(value)
            except TypeError:
                raise _b._UserError(f"cannot unpack {value!r}") from None
            if len(values) != len(target.elts):
                raise _b._UserError(f"cannot unpack {len(values)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self.assign(t, v, node)
            return
        if isinstance(target, ast.Subscript):
            ref = self.eval(target)
            if isinstance(ref, BufferRef):
                if store_to_reducer(ref, value, None):
                    return
                self.store(ref, value, node)
                return
            container = self.eval(target.value)
            container[self.eval_subscript_key(target.slice)] = value
            return
        if isinstance(target, ast.Attribute):
            setattr(self.eval(target.value), target.attr, value)
            return
        if not isinstance(target, ast.Name):
            raise _b._UserError(f"cannot assign to {type(target).__name__}")
        name = target.id
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)) and self.builder.in_kernel:
            self.check_carried_assignment(name)
        existing = self.find_binding(name)
        if isinstance(existing, Buffer) and existing.scope == "var" and not isinstance(value, Buffer):
            self.store(existing[0], value, node)
            return
        if name in getattr(self, "ref_params", ()) and isinstance(existing, BufferRef) and existing.is_point:
            self.store(existing, value, node)  # `x: T.Ref` bound to an element: assignments write it
            return
        if isinstance(value, BufferRef) and not value.is_point:
            self.bind(name, value)  # `X = A_shared[:64, :32]`: a name for the region, used as a tile operand
            return
        if isinstance(value, UnboundVar):
            self.bind(name, value)  # `v = T.int32()`: a variable that T.let(v, ...) binds later
            return
        if _is_runtime(value) and not isinstance(value, Buffer) and self.builder.in_kernel:
            expr = _as_runtime(value)
            judged = isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign))
            if (id(node), name) in self.mutable_assignments if judged else name in self.multi_assigned:
                # Reassigned later: a mutable scalar rather than an immutable binding.
                buf = Buffer(_tl.buffer(name, expr.dtype, [_tl.const_int(1, "int32")], "var"))
                _b.emit(_tl.allocate(buf.node, expr.node, self.span(node)))
                self.bind(name, buf)
                return
            self.bind(name, self.let_value(name, expr, node))
            return
        self.bind(name, value)

    def check_carried_assignment(self, name):
        """Refuses to reassign, inside a run-time loop or branch, a name bound outside it to
        a compile-time number or an immutable run-time value: the new value would silently
        be lost after the loop or branch. Mutable scalars come from T.alloc_var."""
        crossed = False
        for scope in reversed(self.scopes):
            if name in scope:
                value = scope[name]
                if crossed and (isinstance(value, PrimExpr) or
                                (isinstance(value, numbers.Number) and not isinstance(value, Buffer))):
                    shown = f"the compile-time value {value!r}" if isinstance(value, numbers.Number) \
                        else "an immutable run-time value"
                    raise _b._UserError(
                        f"`{name}` was bound outside this run-time loop or branch (to {shown}), so assigning it "
                        f"here would be lost after it; declare it as a mutable scalar first: "
                        f"`{name} = T.alloc_var(dtype, init)`")
                return
            if scope.get(_RUNTIME_SCOPE):
                crossed = True

    def store(self, ref: BufferRef, value, node):
        if isinstance(value, LaneValues) and not ref.is_point:
            # Prev[j:j + w] = <w lane values>: one store per lane, in order
            for lane_ref, lane in zip(_lanes(ref, len(value.lanes), "assignment", "target"), value.lanes):
                self.store(lane_ref, lane, node)
            return
        if not ref.is_point:
            self.store_slice(ref, value, node)
            return
        if not self.builder.in_kernel:
            raise _b._UserError("buffer stores must be inside `with T.Kernel(...)`")
        idx = [as_expr(i, "int32").node for i in ref.items]
        v = as_expr(value, ref.buffer.dtype)
        _b.emit(_tl.store(ref.buffer.node, idx, v.node, self.span(node)))

    def store_slice(self, ref: BufferRef, value, node):
        """`X[i, a:b] = Y[j, c:d]` (the slice written on the right) or `X[i, a:b] = v`: as
        upstream, a vector store by each thread that runs it, here one store per element. The
        slice is points except a static run of the last dimension; a source slice of the same
        buffer is read whole before the first store (the ranges may overlap)."""
        parsed = _last_dim_slice(ref)
        if parsed is None or not isinstance(parsed[2], numbers.Integral) or not 0 < parsed[2] <= _MOST_SLICE_LANES:
            raise _b._UserError(f"assigning to a slice of {ref.buffer.name} is supported for up to "
                                f"{_MOST_SLICE_LANES} elements of its last dimension, of a static count; "
                                "use T.fill, T.copy or a T.Parallel loop")
        width = int(parsed[2])
        dsts = _lanes(ref, width, "slice assignment", "target")
        if isinstance(value, BufferRef) and not value.is_point:
            if not isinstance(getattr(node, "value", None), ast.Subscript):
                # a name bound to a slice is an alias (read where it is used, as a tile operand)
                raise _b._UserError(f"assigning a named slice to a slice of {ref.buffer.name}: write the source "
                                    "slice itself on the right (`X[i, a:b] = Y[j, c:d]`), or use T.copy")
            loads = [as_expr(r.load(), ref.buffer.dtype) for r in _lanes(value, width, "slice assignment", "value")]
            if value.buffer.name == ref.buffer.name:  # (the same buffer, or one named alike: read first)
                loads = [self.let_value(f"{ref.buffer.name}_lane{k}", e, node) for k, e in enumerate(loads)]
        elif _is_runtime(value) or isinstance(value, numbers.Number):
            loads = [as_expr(value, ref.buffer.dtype)] * width
        else:
            raise _b._UserError(f"cannot assign {value!r} to a slice of {ref.buffer.name}")
        for dst, v in zip(dsts, loads):
            self.store(dst, v, node)

    def let_value(self, name, expr, node):
        """`expr` bound to a new immutable variable here (a LetStmt over what follows)."""
        var = _tl.var(name, expr.dtype)
        _b.emit(_tl.let(var, expr.node, self.span(node)))
        self.builder.let_vars.append(var)
        self.builder.let_values.append(expr.node)
        return PrimExpr(var)

    def stmt_With(self, node):
        if len(node.items) != 1:
            raise _b._UserError("use one `with` item per statement")
        item = node.items[0]
        spec = self.eval(item.context_expr)
        if isinstance(spec, WhileSpec):  # `with T.While(cond):` (upstream's spelling of a while loop)
            if item.optional_vars is not None:
                raise _b._UserError("`with T.While(cond)` binds no names")
            if not self.builder.in_kernel:
                raise _b._UserError("T.While loops must be inside `with T.Kernel(...)`")
            cond = spec.cond
            if not _is_runtime(cond):
                raise _b._UserError("T.While needs a run-time condition")
            body = self.block(node.body, node)
            _b.emit(_tl.while_(_as_runtime(cond).node, body, self.span(node)))
            return
        if isinstance(spec, WsSpec):  # `with T.ws(i):` the warpgroup's threads only (language/barriers.py)
            if item.optional_vars is not None:
                raise _b._UserError("`with T.ws(...)` binds no names")
            self.scopes.append({_RUNTIME_SCOPE: True})
            self.builder.open()
            self.builder.in_ws = True
            try:
                _b.emit(spec.marker(self.span(node)))
                self.visit_body(node.body)
                body = self.builder.close(self.span(node))
            finally:
                self.builder.in_ws = False
                self.scopes.pop()
            _b.emit(_tl.if_(spec.cond.node, body, None, self.span(node)))
            return
        if isinstance(spec, ReduceScope):  # `with T.attr(T.comm_reducer(...), "reduce_scope", ...):`
            if item.optional_vars is not None or not self.builder.in_kernel:
                raise _b._UserError("`with T.attr(..., \"reduce_scope\", ...)` binds no names and goes inside a kernel")
            saved = getattr(self.builder, "reduce_scope", None)
            self.builder.reduce_scope = spec.reducer
            try:
                _b.emit(self.block(node.body, node))
            finally:
                self.builder.reduce_scope = saved
            return
        from ..language import _SBlock
        if isinstance(spec, _SBlock):  # `with T.sblock(name):` a lexical scope for safe values
            if item.optional_vars is not None:
                raise _b._UserError("`with T.sblock(...)` binds no names")
            spec.__enter__()
            self.visit_body(node.body)
            spec.__exit__(None, None, None)
            return
        if not isinstance(spec, KernelSpec):
            raise _b._UserError("inside a kernel, `with` is only used as `with T.Kernel(...) as ...`")
        if self.builder.in_kernel:
            raise _b._UserError("T.Kernel cannot be nested")
        names = []
        if item.optional_vars is not None:
            ov = item.optional_vars
            elts = ov.elts if isinstance(ov, (ast.Tuple, ast.List)) else [ov]
            for e in elts:
                if not isinstance(e, ast.Name):
                    raise _b._UserError("`as` takes names: `as bx` or `as (bx, by)`")
                names.append(e.id)
            if len(names) != len(spec.grid):
                raise _b._UserError(f"T.Kernel has {len(spec.grid)} grid dimension(s) but `as` names {len(names)}")
        self.kernel(node, spec, names, node.body)

    def kernel(self, node, spec, names, body_nodes, thread_names=()):
        """The kernel launch of `spec` around `body_nodes`, its block indices bound to `names`
        (and, for a TVM-style launch, its thread indices to `thread_names`)."""
        default_names = ["bx", "by", "bz"]
        vars_ = [_tl.var(names[i] if i < len(names) else default_names[i], "int32") for i in range(len(spec.grid))]
        grid = [as_expr(_eager.resolve(g), "int32").node for g in spec.grid]
        self.scopes.append({})
        for i, n in enumerate(names):
            self.bind(n, PrimExpr(vars_[i]))
        self.builder.in_kernel = True
        # what T.rng_init's default sequence (the thread's number in the grid) is made of
        self.builder.launch = (vars_, grid, list(spec.threads))
        self.builder.cluster_dims = list(getattr(spec, "cluster_dims", None) or [1, 1, 1])
        self.builder.open()
        try:
            from ..language import get_thread_binding
            if getattr(spec, "cluster_dims", None):
                from ..language.clusters import emit_cluster_marker
                emit_cluster_marker(spec.cluster_dims)
            for dim, n in enumerate(thread_names):
                if n is not None:
                    self.bind(n, get_thread_binding(dim))
            self.visit_body(body_nodes)
            check_reducers_finalized()
            body = self.builder.close(self.span(node))
        finally:
            self.builder.in_kernel = False
            self.builder.launch = None
            self.builder.cluster_dims = None
            self.scopes.pop()
        _b.emit(_tl.kernel(grid, vars_, spec.threads, body, self.span(node)))

    def binding_launch(self, node):
        """TVM's way of writing a launch (upstream's tests use it), outside any T.Kernel:

            for bx in T.thread_binding(n, thread="blockIdx.x"):        # then .y, .z
                for tx in T.thread_binding(128, thread="threadIdx.x"):  # then .y, .z
                    body

        is `with T.Kernel(n, threads=128) as bx:` with tx the thread index. Returns False
        when `node` is not such a loop."""
        from ..language import thread_binding

        def binding(f):
            if not (isinstance(f, ast.For) and isinstance(f.iter, ast.Call) and not f.orelse):
                return None
            it = f.iter
            if self.eval(it.func) is not thread_binding:
                return None
            if not isinstance(f.target, ast.Name):
                raise _b._UserError("a thread_binding loop binds one name")
            args = [self.eval(a) for a in it.args]
            kw = {k.arg: self.eval(k.value) for k in it.keywords}
            thread = kw.get("thread", args[2] if len(args) > 2 else "threadIdx.x")
            begin, end = (args + [None])[:2] if args else (kw.get("begin"), kw.get("end"))
            extent = begin if end is None else end - begin
            if end is not None and not (isinstance(begin, numbers.Integral) and begin == 0):
                raise _b._UserError("a launch's thread_binding loops start at 0")
            return f.target.id, extent, thread

        first = binding(node)
        if first is None or not str(first[2]).startswith("blockIdx."):
            return False
        axes = {"blockIdx": {}, "threadIdx": {}}
        f = node
        while True:
            b = binding(f)
            if b is None:
                break
            kind, _, axis = b[2].partition(".")
            if kind not in axes or axis not in ("x", "y", "z") or axis in axes[kind]:
                raise _b._UserError(f"thread_binding: thread must be blockIdx.x/y/z or threadIdx.x/y/z, each once, "
                                    f"got {b[2]!r}")
            if kind == "blockIdx" and axes["threadIdx"]:
                raise _b._UserError("thread_binding: the blockIdx loops come before the threadIdx loops")
            axes[kind][axis] = b
            if len(f.body) != 1 or binding(f.body[0]) is None:
                body = f.body
                break
            f = f.body[0]
        blocks = [axes["blockIdx"].get(a) for a in "xyz"]
        threads = [axes["threadIdx"].get(a) for a in "xyz"]
        for kind, bs in (("blockIdx", blocks), ("threadIdx", threads)):
            n = sum(b is not None for b in bs)
            if any(b is None for b in bs[:n]):
                raise _b._UserError(f"thread_binding: {kind} dimensions must be x, then y, then z")
        grid = [b[1] for b in blocks if b is not None]
        dims = [b[1] for b in threads if b is not None] or [1]
        spec = KernelSpec(grid, dims[0] if len(dims) == 1 else dims)
        self.kernel(node, spec, [b[0] for b in blocks if b is not None], body,
                    thread_names=[b[0] if b is not None else None for b in threads])
        return True

    def stmt_For(self, node):
        if node.orelse:
            raise self.error(node.orelse[0], "`for ... else` is not supported in kernels")
        if not self.builder.in_kernel and self.binding_launch(node):
            return
        it = node.iter
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" \
                and self.lookup("range", it.func) is builtins.range:
            args = [self.eval(a) for a in it.args]
            if all(isinstance(a, numbers.Integral) for a in args) and not self.builder.in_kernel:
                return self.unroll(node, range(*args))
            if len(args) == 3:
                spec = LoopSpec("serial", [args[0]], [args[1] - args[0]], step=args[2])
            elif len(args) == 2:
                spec = LoopSpec("serial", [args[0]], [args[1] - args[0]])
            else:
                spec = LoopSpec("serial", [0], [args[0]])
        else:
            spec = self.eval(it)
        if isinstance(spec, LoopSpec):
            return self.loop(node, spec)
        if isinstance(spec, (list, tuple, range)) or (
                isinstance(spec, _abc.Iterable) and not _is_runtime(spec) and not isinstance(spec, (Buffer, str))):
            # compile-time iterables (tuples, lists, enumerate(...), zip(...)) are unrolled
            return self.unroll(node, spec)
        raise _b._UserError(f"cannot loop over {spec!r} in a kernel; use T.Parallel, T.Pipelined, T.serial, "
                            "range, or a Python tuple/list")

    def unroll(self, node, values):
        for v in values:
            self.assign(node.target, v, node)
            self.visit_body(node.body)

    def loop(self, node, spec: LoopSpec):
        if not self.builder.in_kernel:
            raise _b._UserError(f"T.{spec.kind} loops must be inside `with T.Kernel(...)`")
        t = node.target
        targets = t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]
        if spec.decode is not None:
            return self.decoded_loop(node, spec, targets)
        if len(targets) != len(spec.extents):
            raise _b._UserError(f"the loop has {len(spec.extents)} dimension(s) but {len(targets)} loop variable(s)")
        if not all(isinstance(x, ast.Name) for x in targets):
            raise _b._UserError("loop variables must be plain names")
        step = spec.step
        if step is not None and not isinstance(step, numbers.Integral):
            raise _b._UserError("the loop step must be a compile-time integer")
        loop_vars, mins, extents = [], [], []
        for name, start, extent in zip(targets, spec.starts, spec.extents):
            start, extent = _eager.resolve(start), _eager.resolve(extent)
            ext = as_expr(extent, "int32")
            st = as_expr(start, ext.dtype)
            if ext.dtype != st.dtype:
                ext = cast(ext, st.dtype)
            if step not in (None, 1):
                ext = (ext + (step - 1)) // step if step > 0 else (ext + (step + 1)) // step
            loop_vars.append(_tl.var(name.id, str(ext.dtype)))
            mins.append(st)
            extents.append(ext)
        self.scopes.append({_RUNTIME_SCOPE: True})
        for name, var, st in zip(targets, loop_vars, mins):
            if step in (None, 1):
                self.bind(name.id, PrimExpr(var))
            else:
                self.bind(name.id, st + PrimExpr(var) * step)
        ranges = []
        for var, st, ext in zip(loop_vars, mins, extents):
            lo, n = st.node.const_value, ext.node.const_value
            known = isinstance(lo, int) and isinstance(n, int) and step in (None, 1)
            ranges.append((var.var_name, (lo, n) if known else None))
        body = self.loop_body(node, spec.kind, ranges)
        ann = {k: as_expr(v, "int32").node for k, v in spec.annotations.items()}
        for i in reversed(range(len(loop_vars))):
            mn = mins[i] if step in (None, 1) else as_expr(0, str(extents[i].dtype))
            body = _tl.for_(loop_vars[i], mn.node, extents[i].node, spec.kind, body, ann if i == 0 else {},
                            self.span(node))
        _b.emit(body)

    def loop_body(self, node, kind, ranges, guard=None):
        """The body of loop `node`, built with its variables' ranges ([(name, (lo, n) or None)]),
        its kind and the branch `guard` it runs under (if any) known to the front end's checks;
        ends the scope the caller opened for the loop's names."""
        loop_ranges = self.builder.loop_ranges
        for name, r in ranges:
            loop_ranges.setdefault(name, []).append(r)
        self.builder.loop_kinds.append(kind)
        branches = self.builder.branch_thread_dependent
        if guard is not None:
            branches.append(_tl.thread_dependent(guard.node, self.builder.let_vars, self.builder.let_values))
        self.builder.open()
        try:
            self.visit_body(node.body)
            return self.builder.close(self.span(node))
        finally:
            if guard is not None:
                branches.pop()
            self.builder.loop_kinds.pop()
            self.scopes.pop()
            for name, _ in ranges:
                loop_ranges[name].pop()

    def decoded_loop(self, node, spec: LoopSpec, targets):
        """A loop over one variable whose names are indices computed from it, the body under
        the spec's guard (T.Persistent)."""
        if len(targets) != spec.arity or not all(isinstance(x, ast.Name) for x in targets):
            raise _b._UserError(f"the loop binds {spec.arity} index name(s); got {len(targets)} target(s)")
        ext = as_expr(_eager.resolve(spec.extents[0]), "int32")
        var = _tl.var(f"{targets[0].id}_wave", str(ext.dtype))
        self.scopes.append({_RUNTIME_SCOPE: True})
        guard, indices = spec.decode(PrimExpr(var))
        for name, value in zip(targets, indices):
            self.bind(name.id, value)
        guard = as_expr(guard)
        body = self.loop_body(node, spec.kind, [(var.var_name, None)], guard=guard)
        body = _tl.if_(guard.node, body, None, self.span(node))
        _b.emit(_tl.for_(var, as_expr(0, str(ext.dtype)).node, ext.node, spec.kind, body, {}, self.span(node)))

    def stmt_If(self, node):
        cond = self.eval(node.test)
        if not _is_runtime(cond):
            self.visit_body(node.body if cond else node.orelse)
            return
        rt = _as_runtime(cond)
        branches = self.builder.branch_thread_dependent
        branches.append(_tl.thread_dependent(rt.node, self.builder.let_vars, self.builder.let_values))
        try:
            then_s = self.block(node.body, node)
            else_s = self.block(node.orelse, node) if node.orelse else None
        finally:
            branches.pop()
        _b.emit(_tl.if_(rt.node, then_s, else_s, self.span(node)))

    def block(self, stmts, node):
        self.scopes.append({_RUNTIME_SCOPE: True})
        self.builder.open()
        try:
            self.visit_body(stmts)
            return self.builder.close(self.span(node))
        finally:
            self.scopes.pop()

    def stmt_While(self, node):
        if node.orelse:
            raise self.error(node.orelse[0], "`while ... else` is not supported in kernels")
        if not self.builder.in_kernel:
            raise _b._UserError("while loops must be inside `with T.Kernel(...)`")
        cond = self.eval(node.test)
        if not _is_runtime(cond):
            raise _b._UserError("a `while` in a kernel needs a run-time condition")
        self.builder.loop_kinds.append("while")
        try:
            body = self.block(node.body, node)
        finally:
            self.builder.loop_kinds.pop()
        _b.emit(_tl.while_(_as_runtime(cond).node, body, self.span(node)))

    def stmt_Break(self, node):
        _b.emit(_tl.break_(self.span(node)))

    def stmt_Continue(self, node):
        _b.emit(_tl.continue_(self.span(node)))

    # ------------------------------------------------------------------ expressions

    def eval(self, node):
        method = getattr(self, "expr_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"`{type(node).__name__}` expressions are not supported in TileLang kernels")
        return method(node)

    def expr_Constant(self, node):
        return node.value

    def expr_Name(self, node):
        return self.lookup(node.id, node)

    def expr_Attribute(self, node):
        value = self.eval(node.value)
        try:
            return getattr(value, node.attr)
        except AttributeError:
            message = f"{_describe(value)} has no attribute {node.attr!r}"
            if inspect.ismodule(value):
                close = difflib.get_close_matches(node.attr, [n for n in dir(value) if not n.startswith("_")], n=1)
                prefix = "T" if value.__name__ == "tilelang.language" else value.__name__
                message = f"{prefix}.{node.attr} is not defined" + (
                    f"; did you mean {prefix}.{close[0]}?" if close else "")
            raise self.error(node, message) from None

    def eval_subscript_key(self, node):
        if isinstance(node, ast.Tuple):
            return tuple(self.eval_subscript_key(e) for e in node.elts)
        if isinstance(node, ast.Slice):
            return slice(*(None if p is None else _eager.resolve(self.eval(p)) for p in (node.lower, node.upper, node.step)))
        return _eager.resolve(self.eval(node))

    def expr_Subscript(self, node):
        value = self.eval(node.value)
        key = self.eval_subscript_key(node.slice)
        if isinstance(value, Buffer):
            return self._guard(node, value.__getitem__, key)
        return self._guard(node, operator.getitem, value, key)

    def expr_Tuple(self, node):
        return tuple(self._elts(node.elts))

    def expr_List(self, node):
        return list(self._elts(node.elts))

    def _elts(self, elts):
        out = []
        for e in elts:
            if isinstance(e, ast.Starred):
                out.extend(self.eval(e.value))
            else:
                out.append(self.eval(e))
        return out

    def expr_Lambda(self, node):
        """A lambda is a compile-time function: calling it evaluates its body here, with the
        parameters bound to the arguments (layout functions, small helpers)."""
        args = node.args
        if args.vararg or args.kwarg or args.kwonlyargs or args.defaults or args.posonlyargs:
            raise self.error(node, "a lambda in a kernel takes plain positional parameters only")
        names = [a.arg for a in args.args]
        scopes = list(self.scopes)  # the names it closes over, as at its definition

        def call(*values):
            if len(values) != len(names):
                raise _b._UserError(f"this lambda takes {len(names)} argument(s), got {len(values)}")
            saved = self.scopes
            self.scopes = scopes + [dict(zip(names, values))]
            try:
                return self.eval(node.body)
            finally:
                self.scopes = saved

        return call

    # Comprehensions over compile-time iterables are evaluated as Python (e.g. a list of
    # tiles: `accs = [T.alloc_fragment((bm,), dtype) for _ in range(4)]`).
    def _comprehension(self, node, make):
        out = []
        self.scopes.append({})
        try:
            self._comp_level(node, node.generators, 0, make, out)
        finally:
            self.scopes.pop()
        return out

    def _comp_level(self, node, gens, k, make, out):
        if k == len(gens):
            out.append(make())
            return
        gen = gens[k]
        if gen.is_async:
            raise self.error(node, "async comprehensions are not supported in kernels")
        iterable = self.eval(gen.iter)
        if _is_runtime(iterable) or isinstance(iterable, (LoopSpec, Buffer)):
            raise self.error(gen.iter, "a comprehension in a kernel must iterate over a compile-time "
                                       "value (a range, tuple or list); use a T.Parallel/T.serial loop")
        for v in iterable:
            self.assign(gen.target, v, node)
            keep = True
            for cond in gen.ifs:
                c = self.eval(cond)
                if _is_runtime(c):
                    raise self.error(cond, "a comprehension filter must be a compile-time condition")
                if not c:
                    keep = False
                    break
            if keep:
                self._comp_level(node, gens, k + 1, make, out)

    def expr_ListComp(self, node):
        return self._comprehension(node, lambda: self.eval(node.elt))

    def expr_GeneratorExp(self, node):
        return iter(self._comprehension(node, lambda: self.eval(node.elt)))

    def expr_SetComp(self, node):
        return set(self._comprehension(node, lambda: self.eval(node.elt)))

    def expr_DictComp(self, node):
        return dict(self._comprehension(node, lambda: (self.eval(node.key), self.eval(node.value))))

    def expr_Dict(self, node):
        return {self.eval(k): self.eval(v) for k, v in zip(node.keys, node.values)}

    def expr_BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"unsupported operator {type(node.op).__name__}")
        a, b = self.eval(node.left), self.eval(node.right)
        a = _as_runtime(a) if isinstance(a, Buffer) and a.scope == "var" else a
        b = _as_runtime(b) if isinstance(b, Buffer) and b.scope == "var" else b
        return self._guard(node, op, a, b)

    def expr_UnaryOp(self, node):
        v = self.eval(node.operand)
        if isinstance(v, Buffer) and v.scope == "var":
            v = _as_runtime(v)
        if isinstance(node.op, ast.Not):
            if _is_runtime(v):
                return PrimExpr(_tl.logical_not(_as_runtime(v).node))
            return not v
        if isinstance(node.op, ast.USub):
            return -v
        if isinstance(node.op, ast.UAdd):
            return +v
        if isinstance(node.op, ast.Invert):
            return ~v
        raise self.error(node, "unsupported unary operator")

    def expr_BoolOp(self, node):
        is_and = isinstance(node.op, ast.And)
        result = None
        for value_node in node.values:
            v = self.eval(value_node)
            if not _is_runtime(v):
                if is_and and not v:
                    return v if result is None else PrimExpr(_tl.const_int(0, "bool"))
                if not is_and and v:
                    return v if result is None else PrimExpr(_tl.const_int(1, "bool"))
                continue
            e = _as_runtime(v)
            result = e if result is None else binary("and" if is_and else "or", result, e)
        if result is None:
            return is_and
        return result

    def expr_Compare(self, node):
        left = self.eval(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node)
            op = _CMPOPS[type(op_node)]
            a = _as_runtime(left) if isinstance(left, Buffer) and left.scope == "var" else left
            b = _as_runtime(right) if isinstance(right, Buffer) and right.scope == "var" else right
            r = self._guard(node, op, a, b)
            if result is None:
                result = r
            elif _is_runtime(result) or _is_runtime(r):
                result = binary("and", result, r)
            else:
                result = result and r
            left = right
        return result

    def expr_IfExp(self, node):
        cond = self.eval(node.test)
        if not _is_runtime(cond):
            return self.eval(node.body) if cond else self.eval(node.orelse)
        from ..language import if_then_else

        return if_then_else(_as_runtime(cond), self.eval(node.body), self.eval(node.orelse))

    def expr_Slice(self, node):
        return slice(*(None if p is None else self.eval(p) for p in (node.lower, node.upper, node.step)))

    def expr_JoinedStr(self, node):
        parts = []
        for v in node.values:
            if isinstance(v, ast.Constant):
                parts.append(str(v.value))
            else:
                parts.append(format(self.eval(v.value)))
        return "".join(parts)

    def expr_Call(self, node):
        func = self.eval(node.func)
        args = self._elts(node.args)
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self.eval(kw.value))
            else:
                kwargs[kw.arg] = self.eval(kw.value)
        func = _runtime_builtin(func, args)
        args = [_eager.resolve(a) for a in args]
        kwargs = {k: _eager.resolve(v) for k, v in kwargs.items()}
        from ..language import Macro

        if isinstance(func, Macro):
            return self._guard(node, self.expand_macro, func, args, kwargs)
        return self._guard(node, func, *args, **kwargs)

    def check_reference_argument(self, macro, name, ann, value):
        _check_reference_argument(macro.func, name, ann, value)

    def expand_macro(self, macro, args, kwargs):
        """@T.macro: the macro's body is parsed in place, into the current kernel, with its
        parameters bound to the call's arguments (like an inlined __device__ function)."""
        try:
            bound = inspect.signature(macro.func).bind(*macro.bound_args, *args, **kwargs)
        except TypeError as e:
            raise _b._UserError(f"{macro.func.__name__}(): {e}") from None
        bound.apply_defaults()
        sub = Parser(macro.func, eager_ctx=self.eager)
        sub.builder = self.builder
        sub.in_macro = True
        sub.scopes = [dict(bound.arguments)]
        # T.SharedBuffer / FragmentBuffer / LocalBuffer annotations check their arguments
        # (a string annotation, under `from __future__ import annotations`, is read here)
        for arg in sub.fdef.args.args + sub.fdef.args.kwonlyargs:
            ann = macro.func.__annotations__.get(arg.arg)
            if isinstance(ann, str) and arg.annotation is not None and "Buffer" in ann:
                try:
                    ann = sub.eval(arg.annotation)
                except Exception:  # noqa: BLE001 - an annotation this front end cannot read checks nothing
                    ann = None
            if isinstance(ann, ScopedBufferSpec) and arg.arg in bound.arguments:
                ann.check(arg.arg, bound.arguments[arg.arg], macro.func.__name__)
            if ann in (T_Var, T_Ref) and arg.arg in bound.arguments:
                self.check_reference_argument(macro, arg.arg, ann, bound.arguments[arg.arg])
                if ann is T_Ref:
                    sub.ref_params = getattr(sub, "ref_params", set()) | {arg.arg}
        prev_span = self.builder.span
        try:
            sub.visit_body(sub.fdef.body)
        finally:
            self.builder.span = prev_span
        return sub.returned


def _check_reference_argument(macro, name, ann, value):
    """`x: T.Var` / `x: T.Ref` on a @T.macro parameter: assignments to x in the macro write the
    caller's variable (T.alloc_var), or, for T.Ref, also an element (`A[i]`); anything else
    is an error, as upstream's front end makes it."""
    var = isinstance(value, Buffer) and value.scope == "var"
    element = isinstance(value, BufferRef) and value.is_point
    if var or (ann is T_Ref and element):
        return
    what = "a variable (T.alloc_var)" + (" or an element (A[i])" if ann is T_Ref else "")
    raise _b._UserError(f"@T.macro {macro.__name__}: parameter {name!r} is annotated T.{ann.__name__}, so it takes "
                        f"{what} that its assignments write; got {value!r}")


class _Undeclared:
    """A @T.prim_func parameter whose annotation (`A: T.Tensor(...)`) is still to come."""

    def __init__(self, name):
        self.name = name

    def _error(self, *args, **kwargs):
        raise _b._UserError(f"parameter {self.name!r} needs an annotation such as T.Tensor((M, N), \"float16\") "
                            f"before it is used: in the signature, or `{self.name}: T.Tensor(...)` in the body")

    __getitem__ = __setitem__ = __add__ = __radd__ = __mul__ = __rmul__ = __call__ = _error

    def __repr__(self):
        return f"<undeclared parameter {self.name}>"


def _runtime_builtin(func, args):
    """Python builtins applied to run-time values map to their TileLang versions."""
    from .. import language as T

    if not any(_is_runtime(a) for a in args):
        return func
    mapping = {builtins.min: T.min, builtins.max: T.max, builtins.abs: T.abs,
               builtins.float: lambda x: cast(_as_runtime(x), "float32"),
               builtins.int: lambda x: cast(_as_runtime(x), "int32"),
               builtins.bool: lambda x: cast(_as_runtime(x), "bool")}
    if func in (builtins.min, builtins.max) and len(args) > 2:
        f = mapping[func]
        return lambda *a: _fold(f, a)
    return mapping.get(func, func)


def _fold(f, values):
    out = values[0]
    for v in values[1:]:
        out = f(out, v)
    return out


def _flat_targets(targets):
    out = []
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)):
            out.extend(_flat_targets(t.elts))
        else:
            out.append(t)
    return out


def _all_names(targets):
    return all(isinstance(t, ast.Name) for t in _flat_targets(targets))


def _assigned_names(node) -> list:
    """The plain names one statement assigns (an augmented assignment counts twice: it reads
    the name's earlier value)."""
    targets = []
    if isinstance(node, ast.Assign):
        targets = _flat_targets(node.targets)
    elif isinstance(node, ast.AugAssign):
        targets = [node.target, node.target]
    elif isinstance(node, ast.AnnAssign) and node.value is not None:
        targets = [node.target]
    return [t.id for t in targets if isinstance(t, ast.Name)]


def _names_assigned_more_than_once(fdef) -> set:
    """Names assigned at several places (or with +=): these become mutable scalars.

    Used for the assignments that _mutable_assignments does not judge (loop targets of
    unrolled Python loops)."""
    counts: dict[str, int] = {}
    for node in ast.walk(fdef):
        for n in _assigned_names(node):
            counts[n] = counts.get(n, 0) + 1
    return {n for n, c in counts.items() if c > 1}


def _is_scope_loop(node) -> bool:
    """A loop whose body is its own scope: a run-time loop (`for ... in T.serial(...)`,
    `range(...)`, any call) or a `while`. Names its body binds are gone after it, so the
    body's assignments do not meet those of sibling loops."""
    return isinstance(node, ast.While) or (isinstance(node, ast.For) and isinstance(node.iter, ast.Call))


def _mutable_assignments(fdef) -> set:
    """(id(statement), name) of the assignments that must make a mutable scalar: those whose
    name is assigned more than once within the statement's innermost loop body (counting the
    loops nested in it). An assignment made once per loop body (`index = i * n + v` in two
    sibling loops) stays an immutable binding, which the simplifier can see through; a mutable
    scalar is a one-element local array it cannot."""
    out = set()

    def region(stmts):
        counts: dict[str, int] = {}
        for st in stmts:
            for node in ast.walk(st):
                for n in _assigned_names(node):
                    counts[n] = counts.get(n, 0) + 1
        visit(stmts, counts)

    def visit(stmts, counts):
        for st in stmts:
            for n in _assigned_names(st):
                if counts.get(n, 0) > 1:
                    out.add((id(st), n))
            if _is_scope_loop(st):
                region(st.body)
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(st, field, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                    visit(inner, counts)
            for h in getattr(st, "handlers", []) or []:
                visit(h.body, counts)

    region(fdef.body)
    return out


def _describe(value):
    if isinstance(value, Buffer):
        return f"buffer {value.name}"
    return f"{type(value).__name__} value"


def _looks_like_tensor(value) -> bool:
    return hasattr(value, "shape") and hasattr(value, "dtype") and not isinstance(value, (numbers.Number, str))


def _shape_of(value):
    if value is None or not _looks_like_tensor(value):
        return None
    return tuple(int(s) for s in value.shape)


def _fmt_shape(shape):
    return "(" + ", ".join(getattr(s, "name", None) or str(s) for s in shape) + ")"


def parse_prim_func(func, outer_locals=None) -> PrimFunc:
    """@T.prim_func: parses the function now (errors are raised at the definition).
    ``outer_locals`` are the defining scope's locals, for names that only the parameter
    annotations use (Python does not put those in the function's closure)."""
    return Parser(func, outer_locals=outer_locals).parse_prim_func()
