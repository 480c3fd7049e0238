"""``T.gemm_sp(A_sparse, E, B, C, ...)``: C += A @ B where A is given in upstream's 2:4
structured-sparse form (1:2 for float32), as `tilelang.cuda.intrinsics.sparse_layout` and
upstream's example compressor define it:

- ``A_sparse`` holds the kept values, ``(M, K/2)`` (``(K/2, M)`` with ``transpose_A``): for
  each group of 4 consecutive elements of a row of A (2 for float32), the group's 2 (1) values
  in order;
- ``E`` holds the metadata, ``(M, K/e_factor)`` (transposed with A): one 4-bit code per group,
  packed little-endian into the meta elements (e_factor = meta bits / 4 * group). A code's
  bits [1:0] and [3:2] are the positions of the group's two values (float32: bit 1 of the
  code is the value's position in its pair).

This compiler has no sparse tensor-core path yet: the tile is decompressed into a dense tile
in shared memory (one T.Parallel loop, on both targets) and multiplied with T.gemm, which
does twice the sparse instruction's work. The kernel's remarks say so.
"""
from __future__ import annotations

from . import builder as _b
from .dtypes import canonical as _canonical
from .tileops_extra import _nest, _Tile
from .values import as_expr

# a value's dtype -> (values kept, group size): upstream's GROUP_CONFIG
GROUP = {"float32": (1, 2), "float16": (2, 4), "bfloat16": (2, 4), "int8": (2, 4), "uint8": (2, 4),
         "float8_e4m3fn": (2, 4), "float8_e5m2": (2, 4)}
META_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16, "int32": 32, "uint32": 32}
_BITS_PER_GROUP = 4


def e_factor(value_dtype: str, meta_dtype: str) -> int:
    """How many elements of the dense row one metadata element describes."""
    return META_BITS[meta_dtype] // _BITS_PER_GROUP * GROUP[value_dtype][1]


def gemm_sp(A_sparse, E, B, C, transpose_A=False, transpose_E=False, transpose_B=False, policy=None,
            clear_accum=False, k_pack=1, wg_wait=0, annotations=None):
    from . import GemmWarpPolicy, _remark, _static_bool, alloc_shared, gemm, if_then_else

    _b.require_kernel("T.gemm_sp")
    transpose_A = _static_bool(transpose_A, "T.gemm_sp transpose_A")
    transpose_E = _static_bool(transpose_E, "T.gemm_sp transpose_E")
    if transpose_E != transpose_A:
        raise _b._UserError(f"T.gemm_sp: the metadata is laid out as A_sparse is (transpose_E must equal "
                            f"transpose_A), got transpose_A={transpose_A}, transpose_E={transpose_E}")
    SA, SE = _Tile(A_sparse, "T.gemm_sp A_sparse"), _Tile(E, "T.gemm_sp E")
    vdt, mdt = _canonical(SA.buffer.dtype), _canonical(SE.buffer.dtype)
    if vdt not in GROUP:
        raise _b._UserError(f"T.gemm_sp: A_sparse's dtype must be one of {', '.join(GROUP)}, got {vdt}")
    if mdt not in META_BITS:
        raise _b._UserError(f"T.gemm_sp: E's dtype must be an 8, 16 or 32-bit integer, got {mdt}")
    if len(SA.extents) != 2 or len(SE.extents) != 2:
        raise _b._UserError(f"T.gemm_sp: A_sparse and E must be 2-D tiles, got {SA.extents} and {SE.extents}")
    kept, group = GROUP[vdt]
    factor = e_factor(vdt, mdt)
    rows, packed = (SA.extents[1], SA.extents[0]) if transpose_A else tuple(SA.extents)
    k = packed * group // kept
    want_e = (k // factor, rows) if transpose_A else (rows, k // factor)
    if packed * group % kept or k % factor or list(want_e) != list(SE.extents):
        raise _b._UserError(f"T.gemm_sp: A_sparse {SA.name} {SA.extents} holds {kept} of every {group} values of a "
                            f"dense tile with K = {k}, so E ({mdt}: {factor} values per element) must be "
                            f"{want_e}, got {SE.name} {SE.extents}")

    def at(r, c):  # (row of A, column along K) -> the index in the (maybe transposed) tile
        return [c, r] if transpose_A else [r, c]

    dense_shape = (k, rows) if transpose_A else (rows, k)
    b = _b.current()
    b.pending_name = f"{SA.name}_dense"
    dense = alloc_shared(dense_shape, vdt)
    D = _Tile(dense, "T.gemm_sp")
    codes_per_meta = factor // group

    def decode(v):
        r, g = v
        meta = as_expr(SE.load(at(r, (g * group) // factor)), mdt).astype("int32")
        code = (meta >> (4 * (g % codes_per_meta))) & 15
        zero = as_expr(0, vdt)
        if kept == 2:
            first, second = code & 3, (code >> 2) & 3
            v0, v1 = SA.load(at(r, g * 2)), SA.load(at(r, g * 2 + 1))
            for j in range(group):
                D.store(at(r, g * group + j), if_then_else(first == j, v0, if_then_else(second == j, v1, zero)))
        else:  # float32, 1:2: the code names the value's half of a 4-slot group
            pos = (code & 3) >> 1
            v0 = SA.load(at(r, g))
            for j in range(group):
                D.store(at(r, g * group + j), if_then_else(pos == j, v0, zero))

    _nest([rows, k // group], ["parallel", "parallel"], decode, prefix="sp")
    _remark(f"T.gemm_sp {SA.name}: decompressed into a dense {dense_shape[0]}x{dense_shape[1]} shared tile and "
            f"multiplied with T.gemm (no sparse tensor-core instructions in this compiler yet)")
    gemm(dense, B, C, transpose_A=transpose_A, transpose_B=transpose_B,
         policy=GemmWarpPolicy.Square if policy is None else policy, clear_accum=clear_accum, k_pack=k_pack,
         wg_wait=wg_wait, annotations=annotations)


__all__ = ["gemm_sp"]
