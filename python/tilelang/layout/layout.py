"""``tilelang.layout.Layout`` (``T.Layout``): a map from a tile's logical indices to physical
indices, `Layout(shape, forward_fn)` with forward_fn(*indices) -> one index or a list.

The function is kept as written (evaluated on Python ints where a caller asks for one
element) and, for the algebra upstream's API offers (output shape, linearized index,
repeat, expand, equality), traced once on symbolic indices into an index map that the C++
core answers questions about (`_tl.IndexMap`, layout/index_map.h). On a tile the compiler
chooses its own layout (see tilelang.layout); on a global tensor a Layout is its storage
order (T.annotate_layout)."""
from __future__ import annotations

import numbers


def _ints(values, what):
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        raise ValueError(f"{what} needs a static shape of ints, got {list(values)}") from None


def _exprs(out):
    """forward_fn's result as a list of int32 index expressions."""
    from ..language.values import as_expr

    out = list(out) if isinstance(out, (list, tuple)) else [out]
    return [as_expr(o, "int32") for o in out]


def _py_value(e):
    """An expression's value as a Python int when it is a constant, else the expression."""
    from ..language.values import PrimExpr
    from .. import _tl

    node = _tl.simplify(e.node)
    v = node.const_value
    return int(v) if isinstance(v, (bool, int)) else PrimExpr(node)


class Layout:
    """A map from a tile's logical indices to a physical position: `Layout(shape, forward_fn)`
    with forward_fn(*indices) -> a physical index or a list of them."""

    def __init__(self, shape, forward_fn=None, kind="custom"):
        self.shape = tuple(shape) if shape is not None else None
        self.forward_fn = forward_fn
        self.kind = kind
        self._imap = None
        self._trusted = False  # a layout this package built (known injective)

    # ---- the symbolic map (traced once)

    def _index_map(self):
        """The layout as a `_tl.IndexMap` over variables i0, i1, ... (built on first use)."""
        if self._imap is None:
            self._imap = self._trace()
        return self._imap

    def _trace(self):
        from .. import _tl
        from ..language.values import PrimExpr

        if self.forward_fn is None:
            raise ValueError(f"the {self.kind} layout has no index function here")
        extents = _ints(self.shape, "this layout operation")
        variables = [PrimExpr(_tl.IndexMap.input_var(d)) for d in range(len(extents))]
        outputs = _exprs(self.forward_fn(*variables))
        return _tl.IndexMap([v.node for v in variables], extents, [o.node for o in outputs])

    @classmethod
    def _from_index_map(cls, imap, kind="custom", trusted=False):
        """A Layout over a `_tl.IndexMap` (the result of repeat / expand: injective when the
        layout it came from is, so `trusted` passes on)."""

        def forward(*indices):
            from ..language.values import as_expr

            return [_py_value(_wrap(n)) for n in imap.apply([as_expr(i, "int32").node for i in indices])]

        lay = cls(tuple(imap.extents), forward, kind=kind)
        lay._imap = imap
        lay._trusted = trusted
        return lay

    # ---- upstream's API

    @property
    def index(self):
        """The physical indices as expressions of the input variables (get_forward_vars())."""
        return [_wrap(o) for o in self._index_map().outputs]

    def get_input_shape(self):
        return list(self.shape) if self.shape is not None else None

    def get_output_shape(self):
        """Each physical index's extent (its largest value over the input shape, plus one)."""
        return list(self._index_map().output_extents())

    def get_forward_vars(self):
        return [_wrap(v) for v in self._index_map().vars]

    def get_forward_index(self):
        return self.index

    def get_linearized_forward_index(self):
        """The row-major offset of the physical indices in an array of get_output_shape()."""
        return _wrap(self._index_map().linearized())

    def map_forward_index(self, indices):
        """The physical indices at the given logical indices (ints or expressions)."""
        from ..language.values import as_expr

        indices = list(indices)
        return [_py_value(_wrap(n)) for n in self._index_map().apply([as_expr(i, "int32").node for i in indices])]

    def __call__(self, *indices):
        if self.forward_fn is not None and all(isinstance(i, numbers.Integral) for i in indices):
            out = self.forward_fn(*indices)
            return list(out) if isinstance(out, (list, tuple)) else [out]
        return self.map_forward_index(indices)

    def repeat(self, dim: int, factor: int) -> "Layout":
        """The layout tiled `factor` times along input dimension `dim`, with a new leading
        physical index saying which copy: (..., i, ...) -> [i // extent, *L(..., i % extent, ...)]."""
        if not isinstance(dim, int):
            raise TypeError(f"Layout.repeat: dim must be an int, got {type(dim).__name__}")
        if not isinstance(factor, int):
            raise TypeError(f"Layout.repeat: factor must be an int, got {type(factor).__name__}")
        if factor < 1:
            raise ValueError(f"Layout.repeat: factor must be >= 1, got {factor}")
        if factor == 1:
            return self
        return Layout._from_index_map(self._index_map().repeat(dim, factor), self.kind, self._trusted)

    def expand(self, leading_shape) -> "Layout":
        """The layout lifted over new leading dimensions, forwarded unchanged:
        (l..., i...) -> [l..., *L(i...)]."""
        if isinstance(leading_shape, numbers.Integral) and not isinstance(leading_shape, bool):
            leading_shape = [leading_shape]
        if not isinstance(leading_shape, (list, tuple)):
            raise TypeError(f"Layout.expand: leading_shape must be an int or a sequence of ints, got "
                            f"{type(leading_shape).__name__}")
        if not leading_shape:
            return self
        for k, extent in enumerate(leading_shape):
            if not isinstance(extent, numbers.Integral):
                raise TypeError(f"Layout.expand: leading_shape[{k}] must be an int, got {type(extent).__name__}")
            if extent <= 0:
                raise ValueError(f"Layout.expand: leading_shape[{k}] must be > 0, got {extent}")
        return Layout._from_index_map(self._index_map().expand([int(e) for e in leading_shape]), self.kind,
                                      self._trusted)

    def is_equal(self, other) -> bool:
        """Whether both layouts have the same input shape and give the same physical indices
        everywhere (proved symbolically, or checked point by point on small shapes)."""
        if not isinstance(other, Layout) or isinstance(other, _fragment_class()) != isinstance(self, _fragment_class()):
            return False
        if list(self.shape) != list(other.shape):
            return False
        return bool(self._index_map().equal(other._index_map()))

    def inverse(self):
        raise NotImplementedError("Layout.inverse is not provided by this compiler (it chooses tile layouts itself; "
                                  "see tilelang.layout)")

    def reshape(self, shape, rescale_num=1, rescale_den=1):
        """The layout over another input shape of as many elements: the new indices are read
        row-major as one flat element index, which the old shape splits again (upstream's
        reshape at an unchanged element width). `rescale_num / rescale_den` is the ratio of
        the old element count to the new (1: the same elements); a view of elements of another
        width (a ratio other than 1) is not provided here."""
        new, old, _ = _reshape_args(self, shape, rescale_num, rescale_den, "Layout.reshape")
        if new == old:
            return self
        base = self.forward_fn
        lay = Layout(tuple(new), lambda *idx: base(*_unflatten(_flatten(idx, new), old)), kind="custom")
        lay._trusted = self._trusted
        return lay

    def __repr__(self):
        return f"Layout({self.kind}, shape={self.shape})"


def _reshape_args(layout, shape, num, den, what):
    """(new shape, old shape, True) checked for reshape: static shapes of the same element
    count under the rescale ratio, and a ratio of 1."""
    if isinstance(shape, numbers.Integral):
        shape = [shape]
    new = _ints(shape, f"{what}: shape")
    old = _ints(layout.shape, what)
    if any(d <= 0 for d in new):
        raise ValueError(f"{what}: shape must have positive extents, got {new}")
    if not all(isinstance(x, numbers.Integral) and x > 0 for x in (num, den)):
        raise ValueError(f"{what}: rescale_num and rescale_den must be positive ints, got {num!r} and {den!r}")
    count_old, count_new = 1, 1
    for d in old:
        count_old *= d
    for d in new:
        count_new *= d
    if count_old * num != count_new * den:
        raise ValueError(f"{what}: shape {new} has {count_new} elements, but the layout's input shape {old} has "
                         f"{count_old}" + (f" (rescaled by {num}/{den})" if num != den else ""))
    if num != den:
        raise NotImplementedError(f"{what}: a view of elements of another width (rescale {num}/{den}) is not provided "
                                  "by this compiler; reshape at the same element width")
    return new, old, True


def _flatten(idx, shape):
    """The row-major flat index of `idx` in `shape` (ints or index expressions)."""
    flat = 0
    for i, extent in zip(idx, shape):
        flat = flat * extent + i
    return flat


def _unflatten(flat, shape):
    """The row-major indices of flat element `flat` in `shape`."""
    out = []
    for extent in reversed(shape):
        out.append(flat % extent)
        flat = flat // extent
    return list(reversed(out))


def _wrap(node):
    from ..language.values import PrimExpr

    return PrimExpr(node)


def _fragment_class():
    from .fragment import Fragment

    return Fragment
