"""Negative indices count from the end, as in Python and in upstream TileLang: `A[-1]` is
`A[n - 1]`, and in `for i in T.serial(4)`, `A[-i - 1]` is `A[n - 1 - i]`.

The rule applies to an index that is negative for *every* value it can take: a constant, or
`a * v + b` of one enclosing loop variable with constant bounds. Other indices (a symbolic
shift, say) are left as written, since they may be non-negative at run time. Upstream
rewrites the same cases in its LegalizeNegativeIndex pass; here the front end does it when
the access is built, so every later pass sees the in-bounds index."""
from __future__ import annotations

import numbers

from .. import _tl
from . import builder


def _static(x):
    v = getattr(getattr(x, "node", None), "const_value", x)
    return v if isinstance(v, numbers.Integral) and not isinstance(v, bool) else None


def _bounds(node):
    """(least, greatest) value of an index affine in one enclosing loop variable with constant
    bounds, `a * v + c`; None for any other index."""
    aff = _tl.affine_in_one_var(node)
    b = builder.active()
    if aff is None or b is None:
        return None
    name, a, c = aff
    ranges = b.loop_ranges.get(name)
    if not ranges or ranges[-1] is None or ranges[-1][1] <= 0:
        return None
    lo, n = ranges[-1]
    ends = (a * lo + c, a * (lo + n - 1) + c)
    return min(ends), max(ends)


def _always_negative(node) -> bool:
    bounds = _bounds(node)
    return bounds is not None and bounds[1] < 0


def from_end(index, extent):
    """`index`, or `extent + index` when index is negative for all its values."""
    n = _static(extent)
    if n is None:
        return index
    c = _static(index)
    if c is not None:
        return index + n if c < 0 else index
    node = getattr(index, "node", None)
    if isinstance(node, _tl.Expr) and node.dtype.startswith(("int", "uint")) and _always_negative(node):
        return index + n
    return index


def _sign(node):
    """'negative' / 'non-negative' when every value of an index (a constant, or affine in one
    loop variable with constant bounds) has that sign; None otherwise."""
    c = getattr(node, "const_value", None)
    bounds = (c, c) if isinstance(c, numbers.Integral) else _bounds(node)
    if bounds is None:
        return None
    return "negative" if bounds[1] < 0 else "non-negative" if bounds[0] >= 0 else None


def lane_from_end(index, extent):
    """A T.Ramp lane's index counted from the end when negative: statically where its sign is
    known, otherwise by a select at run time (upstream's rule for vector indices)."""
    from .values import as_expr, binary

    n = _static(extent)
    if n is None:
        return index
    e = as_expr(index, "int32")
    sign = _sign(e.node)
    if sign == "negative":
        return index + n
    if sign == "non-negative":
        return index
    from . import if_then_else

    return if_then_else(binary("lt", e, as_expr(0, "int32")), e + n, e)
