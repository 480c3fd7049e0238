"""Run-time values seen by the front end: expressions, buffers and buffer accesses.

Compile-time values stay plain Python objects. Whenever an operator mixes a run-time
value with a Python number, the number becomes a constant of a matching type; the
typing rules themselves live in the C++ core (``tl::op::MakeBinary``).
"""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder
from .negative_index import from_end
from .dtypes import dtype, require_supported


class PrimExpr:
    """A run-time scalar expression (wraps a C++ ``Expr``)."""

    __slots__ = ("node",)

    def __init__(self, node):
        self.node = node

    @property
    def dtype(self) -> dtype:
        return dtype(self.node.dtype)

    def astype(self, t):
        return cast(self, t)

    def __repr__(self):
        return repr(self.node)

    def __bool__(self):
        raise TypeError(
            f"the run-time value `{self!r}` cannot be used where Python needs a bool at compile "
            "time; use it in an `if` inside the kernel, or T.if_then_else"
        )

    def __index__(self):
        v = self.node.const_value
        if isinstance(v, int):
            return v
        raise TypeError(f"`{self!r}` is a run-time value, not a compile-time integer")

    def __hash__(self):
        return id(self.node)

    # arithmetic
    def __add__(self, o): return binary("add", self, o)
    def __radd__(self, o): return binary("add", o, self)
    def __sub__(self, o): return binary("sub", self, o)
    def __rsub__(self, o): return binary("sub", o, self)
    def __mul__(self, o): return binary("mul", self, o)
    def __rmul__(self, o): return binary("mul", o, self)
    def __truediv__(self, o): return binary("div", self, o)
    def __rtruediv__(self, o): return binary("div", o, self)
    def __floordiv__(self, o): return binary("floordiv", self, o)
    def __rfloordiv__(self, o): return binary("floordiv", o, self)
    def __mod__(self, o): return binary("floormod", self, o)
    def __rmod__(self, o): return binary("floormod", o, self)
    def __pow__(self, o): return call_math("pow", self, o)
    def __rpow__(self, o): return call_math("pow", o, self)
    def __neg__(self): return binary("sub", _zero_like(self), self)
    def __pos__(self): return self
    def __abs__(self): return call_math("abs", self)
    def __and__(self, o): return binary("bitand", self, o) if not _is_bool(self) else binary("and", self, o)
    def __rand__(self, o): return binary("bitand", o, self) if not _is_bool(self) else binary("and", o, self)
    def __or__(self, o): return binary("bitor", self, o) if not _is_bool(self) else binary("or", self, o)
    def __ror__(self, o): return binary("bitor", o, self) if not _is_bool(self) else binary("or", o, self)
    def __xor__(self, o): return binary("bitxor", self, o)
    def __rxor__(self, o): return binary("bitxor", o, self)
    def __lshift__(self, o): return binary("shl", self, o)
    def __rlshift__(self, o): return binary("shl", o, self)
    def __rshift__(self, o): return binary("shr", self, o)
    def __rrshift__(self, o): return binary("shr", o, self)
    def __invert__(self):
        if _is_bool(self):
            return PrimExpr(_tl.logical_not(self.node))
        return binary("bitxor", self, -1)

    # comparisons build expressions (never Python bools)
    def __eq__(self, o): return binary("eq", self, o)
    def __ne__(self, o): return binary("ne", self, o)
    def __lt__(self, o): return binary("lt", self, o)
    def __le__(self, o): return binary("le", self, o)
    def __gt__(self, o): return binary("gt", self, o)
    def __ge__(self, o): return binary("ge", self, o)


def _is_bool(e) -> bool:
    return isinstance(e, PrimExpr) and e.node.dtype == "bool"


def _zero_like(e: PrimExpr):
    return const(0, e.dtype)


def const(value, t) -> PrimExpr:
    t = dtype(require_supported(t, "constant"))
    if t == "bool":
        return PrimExpr(_tl.const_int(int(bool(value)), "bool"))
    if t.is_float:
        return PrimExpr(_tl.const_float(float(value), t))
    v = int(value)
    if t == "uint64" and 2 ** 63 <= v < 2 ** 64:
        v -= 2 ** 64  # the IR keeps integer constants in 64 bits: the same bits, as uint64
    return PrimExpr(_tl.const_int(v, t))


def as_expr(value, like: str | None = None) -> PrimExpr:
    """Converts a Python number (or a buffer element) to an expression.

    ``like`` is the dtype of the other operand: an int literal takes it, a float literal
    takes it when it is a float type.
    """
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, BufferRef):
        return value.load()
    if isinstance(value, Buffer) and value.scope == "var":  # T.alloc_var reads as its value
        return value[0].load()
    if isinstance(value, bool):
        return const(value, "bool")
    if isinstance(value, numbers.Integral):
        if like is not None and like != "bool":
            return const(int(value), like)
        return const(int(value), "int64" if not -2**31 <= int(value) < 2**31 else "int32")
    if isinstance(value, numbers.Real):
        if like is not None and dtype(like).is_float:
            return const(float(value), like)
        return const(float(value), "float32")
    why = getattr(value, "not_a_value", None)  # objects that say what they are for instead
    if why:
        raise TypeError(why)
    raise TypeError(f"expected a number or a run-time expression, got {type(value).__name__}: {value!r}")


def _like(x):
    if isinstance(x, PrimExpr):
        return x.node.dtype
    if isinstance(x, BufferRef):
        return x.buffer.dtype
    if isinstance(x, Buffer) and x.scope == "var":
        return x.dtype
    return None


def binary(op: str, a, b):
    la, lb = _like(a), _like(b)
    a = as_expr(a, lb)
    b = as_expr(b, la)
    return PrimExpr(_tl.binary(op, a.node, b.node, builder.current_span()))


def call_math(name: str, *args):
    like = next((_like(a) for a in args if _like(a) is not None), None)
    nodes = [as_expr(a, like).node for a in args]
    return PrimExpr(_tl.math(name, nodes, builder.current_span()))


def cast(value, t) -> PrimExpr:
    t = dtype(require_supported(t, "cast"))
    if isinstance(value, (PrimExpr, BufferRef)) or (isinstance(value, Buffer) and value.scope == "var"):
        return PrimExpr(_tl.cast(t, as_expr(value).node))  # (a T.alloc_var reads as its value)
    return const(value, t)


class Buffer:
    """A tensor parameter or a tile (shared, fragment, local, var)."""

    # tf32: declared T.tfloat32 (held as float32; a T.gemm on it rounds to TF32, GemmOp::tf32)
    __slots__ = ("node", "name", "dtype", "shape", "scope", "tf32")

    def __init__(self, node, tf32=False):
        self.node = node
        self.tf32 = tf32
        self.name = node.name
        self.dtype = dtype(node.dtype)
        self.scope = node.scope
        self.shape = [_py_or_expr(e) for e in node.shape]

    @property
    def data(self) -> "BufferData":
        """The buffer's storage, for a view of it with another shape:
        ``T.Tensor((m * n, k), dtype, A.data)`` (upstream's spelling of a reshape)."""
        return BufferData(self)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        return BufferRef(self, list(key))

    def __repr__(self):
        return f"<{self.scope} buffer {self.name}: {self.dtype}{list(self.shape)}>"

    # A scalar `var` buffer reads as its value in arithmetic.
    def _scalar(self):
        if self.scope != "var":
            raise TypeError(f"buffer {self.name} is a tile; index it, e.g. {self.name}[i, j]")
        return self[0].load()

    def __add__(self, o): return self._scalar() + o
    def __radd__(self, o): return o + self._scalar()
    def __sub__(self, o): return self._scalar() - o
    def __rsub__(self, o): return o - self._scalar()
    def __mul__(self, o): return self._scalar() * o
    def __rmul__(self, o): return o * self._scalar()
    def __truediv__(self, o): return self._scalar() / o
    def __lt__(self, o): return self._scalar() < o
    def __le__(self, o): return self._scalar() <= o
    def __gt__(self, o): return self._scalar() > o
    def __ge__(self, o): return self._scalar() >= o


class UnboundVar(PrimExpr):
    """A variable made by ``T.int32()`` (no value): bound later by ``T.let(v, value)``."""

    __slots__ = ()


def _py_or_expr(node):
    v = node.const_value
    return v if isinstance(v, int) and not isinstance(v, bool) else PrimExpr(node)


class BufferData:
    """`A.data`: what ``T.Tensor(shape, dtype, A.data)`` views with another shape."""

    def __init__(self, buffer):
        self.buffer = buffer

    def __repr__(self):
        return f"{self.buffer.name}.data"


class BufferRef:
    """``A[i, j]`` or ``A[a:b, :]``: an element (loaded when used in arithmetic) or a
    region (when given to a tile op)."""

    __slots__ = ("buffer", "items")

    def __init__(self, buffer: Buffer, items: list):
        if len(items) != buffer.ndim:
            raise IndexError(
                f"{buffer.name} has {buffer.ndim} dimension(s) but is indexed with {len(items)}"
            )
        for it in items:
            if isinstance(it, slice) and it.step not in (None, 1):
                raise IndexError(f"{buffer.name}: slices with a step are not supported")
        self.buffer = buffer
        self.items = [it if isinstance(it, slice) else from_end(it, dim) for it, dim in zip(items, buffer.shape)]

    @property
    def is_point(self) -> bool:
        return not any(isinstance(i, slice) for i in self.items)

    @property
    def dtype(self):
        return self.buffer.dtype

    def load(self) -> PrimExpr:
        if not self.is_point:
            raise TypeError(f"a slice of {self.buffer.name} is a region, not a value")
        if self.buffer.scope == "shared":  # (a reducer is a shared tile: reads of it are checked)
            from .reducer import check_reducer_read

            check_reducer_read(self.buffer)
        idx = [as_expr(i, "int32").node for i in self.items]
        return PrimExpr(_tl.load(self.buffer.node, idx))

    def region(self):
        mins, extents = [], []
        for dim, it in enumerate(self.items):
            if isinstance(it, slice):
                start = 0 if it.start is None else it.start
                stop = self.buffer.shape[dim] if it.stop is None else it.stop
                mins.append(as_expr(start, "int32").node)
                # A[bx * 1:(bx + 1) * 1] is one row: simplify, so the extent is the constant 1.
                extent = _tl.simplify(as_expr(stop - start, "int32").node)
                active = builder.active()
                if active is not None and active.let_vars and extent.const_value is None:
                    known = _tl.constant_through_lets(extent, active.let_vars, active.let_values)
                    if known is not None:
                        extent = _tl.const_int(known, "int32")
                extents.append(extent)
            else:
                mins.append(as_expr(it, "int32").node)
                extents.append(None)
        return (self.buffer.node, mins, extents)

    def __repr__(self):
        return f"{self.buffer.name}[{', '.join(map(str, self.items))}]"

    def __getattr__(self, name):
        # dtype helpers such as .astype on an element
        return getattr(self.load(), name)

    def __add__(self, o): return self.load() + o
    def __radd__(self, o): return o + self.load()
    def __sub__(self, o): return self.load() - o
    def __rsub__(self, o): return o - self.load()
    def __mul__(self, o): return self.load() * o
    def __rmul__(self, o): return o * self.load()
    def __truediv__(self, o): return self.load() / o
    def __rtruediv__(self, o): return o / self.load()
    def __floordiv__(self, o): return self.load() // o
    def __rfloordiv__(self, o): return o // self.load()
    def __mod__(self, o): return self.load() % o
    def __rmod__(self, o): return o % self.load()
    def __pow__(self, o): return self.load() ** o
    def __neg__(self): return -self.load()
    def __abs__(self): return abs(self.load())
    def __lt__(self, o): return self.load() < o
    def __le__(self, o): return self.load() <= o
    def __gt__(self, o): return self.load() > o
    def __ge__(self, o): return self.load() >= o
    def __eq__(self, o): return self.load() == o
    def __ne__(self, o): return self.load() != o
    def __and__(self, o): return self.load() & o
    def __rand__(self, o): return o & self.load()
    def __or__(self, o): return self.load() | o
    def __ror__(self, o): return o | self.load()
    def __xor__(self, o): return self.load() ^ o
    def __rxor__(self, o): return o ^ self.load()
    def __lshift__(self, o): return self.load() << o
    def __rlshift__(self, o): return o << self.load()
    def __rshift__(self, o): return self.load() >> o
    def __rrshift__(self, o): return o >> self.load()
    def __invert__(self): return ~self.load()
    def __rpow__(self, o): return o ** self.load()
    def __pos__(self): return self.load()
    def __hash__(self): return id(self)
    def __bool__(self): return bool(self.load())


def to_region(x, what: str):
    """A tile-op operand as the (buffer, mins, extents) triple the core expects."""
    if isinstance(x, Buffer):
        return (x.node, None, None)
    if isinstance(x, BufferRef):
        return x.region()
    raise TypeError(f"{what} must be a buffer or a buffer region, got {type(x).__name__}: {x!r}")


class LaneValues:
    """The per-lane results of a vector operation (T.atomic_addx2/x4 with return_prev=True):
    assigned to a slice of as many elements, `Prev[j:j + 2] = T.atomic_addx2(...)`."""

    __slots__ = ("lanes",)

    def __init__(self, lanes):
        self.lanes = list(lanes)

    def __repr__(self):
        return f"<{len(self.lanes)} lane values>"
