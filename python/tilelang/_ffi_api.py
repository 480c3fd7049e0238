"""``tilelang._ffi_api``: upstream's table of C++ functions reached through TVM's FFI.

This compiler's C++ core is reached through ``tilelang._tl`` instead, with its own
functions. The names below are those upstream's tests call; they import, and raise
NotImplementedError (naming the function and why) when called."""
from __future__ import annotations


def _not_here(name, why):
    def f(*args, **kwargs):
        raise NotImplementedError(f"tilelang._ffi_api.{name} is not provided by this compiler: {why}")

    f.__name__ = name
    return f


_TCGEN05 = "there is no tcgen05 (Blackwell) GEMM lowering here, so no tcgen05 instruction descriptors"
get_tcgen5_instr_desc = _not_here("get_tcgen5_instr_desc", _TCGEN05)
get_tcgen5_blockscaled_instr_desc = _not_here("get_tcgen5_blockscaled_instr_desc", _TCGEN05)


# Layout algebra (tilelang.layout), under upstream's FFI names.


def Layout_repeat(layout, dim, factor):  # noqa: N802 - upstream's name
    """layout.repeat(dim, factor), with the C++ core's argument checks (ValueError)."""
    from .layout.layout import Layout

    return Layout._from_index_map(layout._index_map().repeat(int(dim), int(factor)), layout.kind, layout._trusted)


def Layout_expand(layout, leading_shape):  # noqa: N802
    from .layout.layout import Layout

    return Layout._from_index_map(layout._index_map().expand([int(e) for e in leading_shape]), layout.kind,
                                  layout._trusted)


def Layout_is_equal(a, b):  # noqa: N802
    return a.is_equal(b)


def Fragment_is_equal(a, b):  # noqa: N802
    return a.is_equal(b)


def Layout_input_shape(layout):  # noqa: N802
    return layout.get_input_shape()


def Layout_output_shape(layout):  # noqa: N802
    return layout.get_output_shape()


def Layout_linearized_index(layout):  # noqa: N802
    return layout.get_linearized_forward_index()


def Layout_index(layout):  # noqa: N802
    return layout.index
