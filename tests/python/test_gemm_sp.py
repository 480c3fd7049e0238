"""T.gemm_sp: C += A @ B with A in the 2:4 structured-sparse form (1:2 for float32) and its
metadata E. The sparse operands are made here from random dense matrices with the format's
rule (tilelang.language.sparse_gemm), and the result is compared with the dense product in
float64. Runs on the CPU target; the sm_90a / sm_80 lowerings are compiled without a GPU."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import NP, f64, poison
from tilelang.cuda.intrinsics.sparse_layout import GROUP_CONFIG, get_e_factor, get_e_replicate_factor
from tilelang.errors import TileLangCompileError

META_NP = {"int8": np.int8, "int16": np.int16, "int32": np.int32}


def semi_sparse(rng, m, k, dtype):
    """A random (m, k) matrix with at most `kept` nonzeros in every group along k."""
    kept, group = GROUP_CONFIG[T.dtype(dtype)]
    if dtype.startswith("int"):
        dense = rng.integers(-3, 4, size=(m, k)).astype(np.float64)
    else:
        dense = rng.standard_normal((m, k))
    for r in range(m):
        for g in range(k // group):
            drop = rng.choice(group, size=group - kept, replace=False)
            dense[r, g * group + drop] = 0
    return dense.astype(NP[dtype])


def compress(dense, meta_dtype):
    """(values, metadata) of a semi-sparse matrix: each group's kept values in order, and one
    4-bit code per group (the kept values' positions, two 2-bit fields; float32 counts
    positions in 16-bit halves), packed little-endian into the metadata elements."""
    dtype = str(dense.dtype) if dense.dtype != np.dtype(NP["bfloat16"]) else "bfloat16"
    kept, group = GROUP_CONFIG[T.dtype(dtype)]
    m, k = dense.shape
    bits = np.dtype(META_NP[meta_dtype]).itemsize * 8
    per_meta = bits // 4
    values = np.zeros((m, k * kept // group), dense.dtype)
    codes = np.zeros((m, k // group), np.int64)
    for r in range(m):
        for g in range(k // group):
            nz = [j for j in range(group) if dense[r, g * group + j] != 0]
            if kept == 2:
                pos = (nz + [j for j in range(group) if j not in nz])[:2]
                pos.sort()
                codes[r, g] = pos[0] | (pos[1] << 2)
                values[r, 2 * g:2 * g + 2] = dense[r, g * group + np.array(pos)]
            else:
                p = nz[0] if nz else 1
                codes[r, g] = (2 * p) | ((2 * p + 1) << 2)
                values[r, g] = dense[r, g * group + p]
    packed = np.zeros((m, k // group // per_meta), np.int64)
    for i in range(per_meta):
        packed |= codes[:, i::per_meta] << (4 * i)
    meta = packed.astype(np.uint64).astype(np.dtype(META_NP[meta_dtype]).str.replace("i", "u")).view(META_NP[meta_dtype])
    return values, meta


def sparse_gemm(M, N, K, bm, bn, bk, dtype, accum, meta_dtype, trans_A=False, trans_B=False, a_frag=False,
                stages=2, threads=128):
    kept, group = GROUP_CONFIG[T.dtype(dtype)]
    ef = get_e_factor(dtype, meta_dtype)
    a_shape = (K * kept // group, M) if trans_A else (M, K * kept // group)
    e_shape = (K // ef, M) if trans_A else (M, K // ef)
    a_tile = (bk * kept // group, bm) if trans_A else (bm, bk * kept // group)
    e_tile = (bk // ef, bm) if trans_A else (bm, bk // ef)
    b_shape, b_tile = ((N, K), (bn, bk)) if trans_B else ((K, N), (bk, bn))

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), E: T.Tensor(e_shape, meta_dtype), B: T.Tensor(b_shape, dtype),
             C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared(a_tile, dtype)
            e_s = T.alloc_shared(e_tile, meta_dtype)
            b_s = T.alloc_shared(b_tile, dtype)
            a_f = T.alloc_fragment(a_tile, dtype)
            c = T.alloc_fragment((bm, bn), accum)
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_A:
                    T.copy(A[k * bk * kept // group, by * bm], a_s)
                    T.copy(E[k * bk // ef, by * bm], e_s)
                else:
                    T.copy(A[by * bm, k * bk * kept // group], a_s)
                    T.copy(E[by * bm, k * bk // ef], e_s)
                if trans_B:
                    T.copy(B[bx * bn, k * bk], b_s)
                else:
                    T.copy(B[k * bk, bx * bn], b_s)
                if a_frag:
                    T.copy(a_s, a_f)
                    T.gemm_sp(a_f, e_s, b_s, c, trans_A, trans_A, trans_B)
                else:
                    T.gemm_sp(a_s, e_s, b_s, c, trans_A, trans_A, trans_B)
            T.copy(c, C[by * bm, bx * bn])

    return main


CASES = [
    # M, N, K, tile, dtype, accum, meta, trans_A, trans_B, A in a fragment
    (128, 96, 128, (64, 32, 64), "float16", "float32", "int16", False, False, False),
    (128, 64, 128, (64, 64, 32), "bfloat16", "float32", "int16", False, True, False),
    (64, 64, 128, (32, 64, 64), "float16", "float32", "int32", True, False, False),
    (64, 64, 128, (64, 32, 64), "float16", "float32", "int8", False, False, True),
    (64, 64, 128, (64, 64, 64), "int8", "int32", "int32", False, True, False),
    (64, 32, 64, (32, 32, 32), "float32", "float32", "int16", False, False, False),
    (64, 32, 64, (32, 32, 32), "float32", "float32", "int32", True, True, False),
]


@pytest.mark.parametrize("M,N,K,tile,dtype,accum,meta,trans_A,trans_B,a_frag", CASES)
def test_gemm_sp_equals_the_dense_product(rng, M, N, K, tile, dtype, accum, meta, trans_A, trans_B, a_frag):
    dense = semi_sparse(rng, M, K, dtype)
    values, e = compress(dense, meta)
    b = (rng.integers(-3, 4, size=(N, K) if trans_B else (K, N)).astype(NP[dtype]) if dtype.startswith("int")
         else rng.standard_normal((N, K) if trans_B else (K, N)).astype(NP[dtype]))
    if trans_A:
        values, e = np.ascontiguousarray(values.T), np.ascontiguousarray(e.T)
    kernel = tilelang.compile(sparse_gemm(M, N, K, *tile, dtype, accum, meta, trans_A, trans_B, a_frag), target="cpu")
    c = poison((M, N), accum)
    kernel(values, e, b, c)
    ref = f64(dense) @ (f64(b).T if trans_B else f64(b))
    tol = 0 if accum == "int32" else 1e-4 * np.abs(ref).max()
    np.testing.assert_allclose(f64(c), ref, atol=tol, rtol=0)
    assert any("T.gemm_sp" in r and "decompressed" in r for r in kernel.get_remarks())


def test_metadata_factors_are_upstreams():
    assert get_e_factor(T.float16, T.int16) == 16
    assert get_e_factor(T.int8, T.int32) == 32
    assert get_e_factor(T.float32, T.int16) == 8
    assert get_e_replicate_factor(T.float16) == 2 and get_e_replicate_factor(T.int8) == 1
    with pytest.raises(ValueError, match="a_dtype must be one of"):
        get_e_factor(T.float64, T.int16)


@pytest.mark.parametrize("target", ["cuda -arch=sm_90a", "cuda -arch=sm_80"])
def test_gemm_sp_lowers_for_cuda(target):
    k = tilelang.compile(sparse_gemm(256, 256, 256, 128, 128, 64, "float16", "float32", "int16"), target=target)
    src = k.get_kernel_source()
    assert ("wgmma" in src) if "90" in target else ("mma" in src)


def test_metadata_must_follow_a_sparse():
    with pytest.raises(TileLangCompileError, match="transpose_E must equal transpose_A"):
        @T.prim_func
        def main(A: T.Tensor((64, 32), "float16"), E: T.Tensor((64, 4), "int16"), B: T.Tensor((64, 64), "float16"),
                 C: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 32), "float16")
                e = T.alloc_shared((64, 4), "int16")
                b = T.alloc_shared((64, 64), "float16")
                c = T.alloc_fragment((64, 64), "float32")
                T.gemm_sp(a, e, b, c, transpose_E=True)


def test_a_metadata_tile_of_the_wrong_shape_is_named():
    with pytest.raises(TileLangCompileError, match=r"so E \(int16: 16 values per element\) must be \(64, 4\), "
                                                   r"got e \[64, 2\]"):
        @T.prim_func
        def main(A: T.Tensor((64, 32), "float16"), C: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=128):
                a = T.alloc_shared((64, 32), "float16")
                e = T.alloc_shared((64, 2), "int16")
                b = T.alloc_shared((64, 64), "float16")
                c = T.alloc_fragment((64, 64), "float32")
                T.gemm_sp(a, e, b, c)
