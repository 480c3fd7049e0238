"""Lean scalar code on CUDA: 16-bit float a + b, a - b, a * b as one native instruction
(tl::hadd / hsub / hmul) with the float path's rounding, and floor division / modulo of
provably non-negative integers by powers of two as shifts and masks. Results are checked
against numpy on the CPU target (the same programs); the CUDA code compile-only."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


# The element-wise program below rounds each operation on its own (test_half_fma.py covers
# the contraction of a * b + c, on by default).
SEPARATE = {"tl.contract_half_fma": "false"}


def cuda_source(func, arch="sm_90a"):
    lowered, _, _ = _tl.lower_cuda(func.node, dict(SEPARATE, **{"tl.target_arch": arch}), False)
    return _tl.codegen_cuda(lowered).code


def sample(dtype, n, seed):
    """n values of dtype from random bit patterns (normals, subnormals, zeros, large
    values), NaN and infinity left out."""
    bits = np.random.default_rng(seed).integers(0, 1 << 16, n, dtype=np.uint16)
    x = bits.view(dtype)
    with np.errstate(invalid="ignore"):
        return x[np.isfinite(x.astype(np.float64))]


@pytest.mark.parametrize("dtype", [np.float16, ml_dtypes.bfloat16])
def test_float_path_rounds_like_one_rounding(dtype):
    # What the native instructions rely on: rounding the float32 result of two 16-bit
    # operands again gives the once-rounded exact result (float64 holds it exactly).
    a, b = sample(dtype, 1 << 18, 1), sample(dtype, 1 << 18, 2)
    n = min(len(a), len(b))
    a, b = a[:n], b[:n]
    a32, b32, a64, b64 = a.astype(np.float32), b.astype(np.float32), a.astype(np.float64), b.astype(np.float64)
    with np.errstate(over="ignore"):
        for f in (np.add, np.subtract, np.multiply):
            twice = f(a32, b32).astype(dtype).view(np.uint16)
            once = f(a64, b64).astype(dtype).view(np.uint16)
            np.testing.assert_array_equal(twice, once)


def elementwise(dtype, n=256):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                C[i] = A[i] * B[i] + (A[i] - B[i]) * T.cast(0.5, dtype)

    return main


# native: on the CUDA run of the suite, the .rn instructions (tl.enable_native_half_arith)
# against numpy's one rounding per step; the CPU target has the one path
@pytest.mark.parametrize("native", [False, True], ids=["float_path", "native"])
@pytest.mark.parametrize("dtype,np_dtype", [("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)])
def test_narrow_arith_cpu_matches_numpy(dtype, np_dtype, native):
    rng = np.random.default_rng(0)
    a = rng.standard_normal(256).astype(np_dtype)
    b = rng.standard_normal(256).astype(np_dtype)
    c = np.zeros(256, np_dtype)
    tilelang.compile(elementwise(dtype), pass_configs=dict(SEPARATE, **{"tl.enable_native_half_arith": native}))(a, b, c)
    # Each operation rounded to the 16-bit type, in the program's order (no fma).
    r = lambda x: np.asarray(x, np.float64).astype(np_dtype)
    prod, diff = r(a.astype(np.float64) * b), r(a.astype(np.float64) - b)
    want = r(prod.astype(np.float64) + r(diff.astype(np.float64) * 0.5))
    np.testing.assert_array_equal(c.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dtype,ptx_type", [("float16", "f16"), ("bfloat16", "bf16")])
def test_narrow_arith_cuda_is_native(dtype, ptx_type):
    src = cuda_source(elementwise(dtype))
    assert "tl::hmul(" in src and "tl::hadd(" in src and "tl::hsub(" in src, src
    if HAVE_NVCC:
        # on by default; the pass config turns the float path back on
        ptx = tilelang.compile(elementwise(dtype), target="cuda -arch=sm_90a", pass_configs=SEPARATE).get_ptx()
        for op in ("mul", "add", "sub"):
            assert f"{op}.rn.{ptx_type}" in ptx, ptx
        assert "fma" not in ptx  # the .rn forms are never contracted
        off = tilelang.compile(elementwise(dtype), target="cuda -arch=sm_90a",
                               pass_configs=dict(SEPARATE, **{"tl.enable_native_half_arith": False})).get_ptx()
        assert f"mul.rn.{ptx_type}" not in off


@needs_cuda_compiler
def test_bf16_before_sm90_uses_float_path():
    ptx = tilelang.compile(elementwise("bfloat16"), target="cuda -arch=sm_80",
                           pass_configs=dict(SEPARATE, **{"tl.enable_native_half_arith": True})).get_ptx()
    assert "mul.rn.bf16" not in ptx and "mul.f32" in ptx


def div_mod(n=64):
    @T.prim_func
    def main(A: T.Tensor((n,), "int32"), Q: T.Tensor((n,), "int32"), R: T.Tensor((n,), "int32"),
             S: T.Tensor((n,), "int32"), M: T.Tensor((n,), "int32")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            Q[tx] = (tx + bx * 64) // 8  # non-negative: a shift
            R[tx] = (tx + bx * 64) % 16  # non-negative: a mask
            S[tx] = A[tx] // 4  # sign unknown: floor division
            M[tx] = A[tx] % 4

    return main


def test_div_mod_by_power_of_two():
    a = np.arange(-32, 32, dtype=np.int32)
    q, r, s, m = (np.zeros(64, np.int32) for _ in range(4))
    tilelang.compile(div_mod())(a, q, r, s, m)
    i = np.arange(64)
    np.testing.assert_array_equal(q, i // 8)
    np.testing.assert_array_equal(r, i % 16)
    np.testing.assert_array_equal(s, a // 4)
    np.testing.assert_array_equal(m, a % 4)
    src = cuda_source(div_mod())
    assert ">> 3)" in src and "& 15)" in src, src
    assert "tl::floordiv(" in src and "tl::floormod(" in src, src
