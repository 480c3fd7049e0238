"""Conversions two elements at a time (cuda-pair-conversions, tl::cast_copy's pair helper):
a register tile converted element by element, and a converting copy between tensors, call the
device library's pair conversions on CUDA (checked from the generated code, no GPU: the helper
named after the CUDA intrinsic of the same meaning, as upstream's tests look for it); where a
walk does not qualify, the element casts stay. The same kernels give the exact rounded values
(numpy / ml_dtypes) on whichever target the suite runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from conftest import NP, poison


def tile_cast(M, N, src, dst, scale=False):
    """B = A (or A / 2 with scale) converted, through register tiles."""

    @T.prim_func
    def main(A: T.Tensor((M, N), src), B: T.Tensor((M, N), dst)):
        with T.Kernel(1, threads=128):
            a = T.alloc_fragment((M, N), src)
            b = T.alloc_fragment((M, N), dst)
            T.copy(A, a)
            for i, j in T.Parallel(M, N):
                b[i, j] = a[i, j] * 0.5 if scale else a[i, j]
            T.copy(b, B)

    return main


def copy_cast(M, src, dst):
    """B = A converted by one T.copy between two global tensors."""

    @T.prim_func
    def main(A: T.Tensor((M,), src), B: T.Tensor((M,), dst)):
        with T.Kernel(1, threads=128):
            T.copy(A, B)

    return main


def reversed_cast(M, N, src, dst):
    """b[i, j] = a[i, N - 1 - j]: a register's partner in the pair is not the next column."""

    @T.prim_func
    def main(A: T.Tensor((M, N), src), B: T.Tensor((M, N), dst)):
        with T.Kernel(1, threads=128):
            a = T.alloc_shared((M, N), src)
            b = T.alloc_fragment((M, N), dst)
            T.copy(A, a)
            for i, j in T.Parallel(M, N):
                b[i, j] = a[i, N - 1 - j]
            T.copy(b, B)

    return main


def cuda_source(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


PAIRS = [
    ("float32", "float16", "__float22half2_rn"),
    ("float32", "bfloat16", "__float22bfloat162_rn"),
    ("float16", "float32", "__half22float2"),
    ("bfloat16", "float32", "__bfloat1622float2"),
    ("float32", "float8_e4m3fn", "__nv_cvt_float2_to_fp8x2"),
    ("float32", "float8_e5m2", "__nv_cvt_float2_to_fp8x2"),
    ("float16", "float8_e4m3fn", "__tl_cvt_half2_to_fp8x2"),
    ("float8_e4m3fn", "float32", "__tl_cvt_fp8x2_to_float2"),
    ("float8_e5m2", "float32", "__tl_cvt_fp8x2_to_float2"),
    ("float8_e4m3fn", "float16", "__tl_cvt_fp8x2_to_half2"),
]


@pytest.mark.parametrize("src, dst, helper", PAIRS)
def test_register_tile_casts_convert_in_pairs(src, dst, helper):
    code, remarks = cuda_source(tile_cast(16, 64, src, dst, scale=src == "float32"))
    assert helper + ("<" if "fp8" in helper else "(") in code, code


@pytest.mark.parametrize("src, dst, helper", PAIRS)
def test_converting_copies_between_tensors_convert_in_pairs(src, dst, helper):
    code, _ = cuda_source(copy_cast(512, src, dst))
    assert "tl::cast_copy<" in code and helper in code, code


@pytest.mark.parametrize("src, dst, helper", [
    ("float32", "float8_e8m0fnu", "__tl_cvt_float2_to_e8m0x2"),
    ("float64", "float8_e8m0fnu", "__tl_cvt_double2_to_e8m0x2"),
    ("bfloat16", "float8_e8m0fnu", "__tl_cvt_bfloat162_to_e8m0x2"),
    ("float8_e8m0fnu", "bfloat16", "__tl_cvt_e8m0x2_to_bfloat162"),
])
def test_exponent_conversions_go_through_pair_helpers_too(src, dst, helper):
    # no packed instruction before sm_100: the helper converts element by element
    for func in (copy_cast(512, src, dst), tile_cast(16, 64, src, dst)):
        code, _ = cuda_source(func)
        assert helper in code, code


def test_fp8_register_walk_pairs_consecutive_registers():
    code, remarks = cuda_source(tile_cast(16, 64, "float32", "float8_e4m3fn"))
    # 8 registers per thread: 4 pair conversions, each of registers 2m and 2m + 1
    assert "tl::__nv_cvt_float2_to_fp8x2<tl::float8_e4m3>((&b[(l * 2)]), a[(l * 2)], a[((l * 2) + 1)])" in code, code
    assert any("two registers per conversion" in r for r in remarks)


def test_reversed_reads_still_pair_consecutive_registers():
    # the pairs are consecutive registers of b; what each reads does not matter
    code, _ = cuda_source(reversed_cast(16, 64, "float32", "float16"))
    assert "tl::__float22half2_rn(" in code, code


def test_types_without_a_pair_helper_stay_element_casts():
    code, remarks = cuda_source(tile_cast(16, 64, "int32", "float32"))
    assert not any("two registers per conversion" in r for r in remarks)
    assert "static_cast<float>" in code, code


def test_the_helpers_are_called_on_sm80_too():
    # the helpers exist on every arch (8-bit floats fall back to element conversions before sm_89)
    code, _ = cuda_source(tile_cast(16, 64, "float32", "float8_e4m3fn"), arch="sm_80")
    assert "__nv_cvt_float2_to_fp8x2" in code


SATURATION = {"float8_e4m3fn": 448.0, "float8_e5m2": 57344.0}


def _rounded(a, dst):
    """Round to nearest even; the 8-bit floats saturate at their largest finite value."""
    wide = a.astype(np.float64)
    if dst in SATURATION:
        wide = np.clip(wide, -SATURATION[dst], SATURATION[dst])
    with np.errstate(over="ignore"):
        return wide.astype(np.float32).astype(NP[dst])  # exact to float32 first: one rounding


def _bits(x):
    return x.view({1: np.uint8, 2: np.uint16, 4: np.uint32}[x.dtype.itemsize])


@pytest.mark.parametrize("src, dst, helper", PAIRS)
def test_pair_conversions_round_like_element_casts(src, dst, helper, rng):
    # values across the range, past the 8-bit formats' saturation, signed zeros, halfway cases
    edge = [448.0, 500.0, -1e6, 0.0, -0.0, 0.0625, 1.0625, 3.5]
    with np.errstate(over="ignore"):  # -1e6 is -inf in half: it saturates too
        a = np.concatenate([rng.standard_normal(1024 - len(edge)) * 40, edge]).astype(np.float32).astype(NP[src])
    for func, shape in ((tile_cast(16, 64, src, dst), (16, 64)), (copy_cast(1024, src, dst), (1024,))):
        out = poison(shape, dst)
        tilelang.compile(func)(a.reshape(shape), out)
        got, want = out.reshape(-1), _rounded(a, dst)
        # a NaN stays a NaN (its sign and payload are the hardware's: 500 and -1e6 are NaN in
        # ml_dtypes' e4m3); every other value bit for bit
        nan = np.isnan(want.astype(np.float32))
        assert np.isnan(got[nan].astype(np.float32)).all()
        np.testing.assert_array_equal(_bits(got[~nan]), _bits(want[~nan]))


def local_cast(count):
    """Four floats halved into the first registers of a `count`-element float16 array."""

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float16")):
        with T.Kernel(1, threads=1):
            r = T.alloc_local((count,), "float16")
            for i in T.unroll(4):
                r[i] = A[i] * 0.5
            for i in T.serial(4):
                B[i] = r[i]

    return main


@pytest.mark.parametrize("count, paired", [(6, True), (5, False)])
def test_16_bit_pairs_only_into_arrays_of_an_even_count(count, paired):
    # a 16-bit pair is stored as one 32-bit value: an array of an odd count is declared
    # 2-byte aligned only, so its walk keeps the element casts
    code, _ = cuda_source(local_cast(count))
    assert ("tl::__float22half2_rn(" in code) == paired, code
    a = np.array([1.0, -3.0, 0.3333, 65504.0], np.float32)
    b = poison((4,), "float16")
    tilelang.compile(local_cast(count))(a, b)
    np.testing.assert_array_equal(b, (a * 0.5).astype(np.float16))
