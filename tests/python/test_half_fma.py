"""16-bit `a * b + c` is contracted into one fma rounded once (contract-half-fma), as nvcc
contracts float and as upstream's generated code does for half: CUDA's fma.rn.f16 / .bf16,
the CPU's exact emulation (round to odd in float). Every result is compared bit for bit with
the exactly computed value (Python fractions) rounded once, on whichever target the suite
runs; tl.contract_half_fma=false keeps the two roundings."""
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison

N = 4096
TYPES = [("float16", np.float16), ("bfloat16", ml_dtypes.bfloat16)]


def muladd(dtype, n=N):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype),
             D: T.Tensor((n,), dtype)):
        with T.Kernel(n // 128, threads=128) as bx:
            for i in T.Parallel(128):
                D[bx * 128 + i] = A[bx * 128 + i] * B[bx * 128 + i] + C[bx * 128 + i]

    return main


def operands(np_t, seed):
    """Random bit patterns (normals, subnormals, zeros; no NaN or infinity), with c often
    near -a * b so that sums cancel and ties and tiny remainders occur."""
    rng = np.random.default_rng(seed)
    def draw():
        x = rng.integers(0, 1 << 16, 4 * N, dtype=np.uint16).view(np_t)
        with np.errstate(invalid="ignore", over="ignore"):
            x = x[np.isfinite(x.astype(np.float64)) & (np.abs(x.astype(np.float64)) < 256)]
        return x[:N]
    a, b, c = draw(), draw(), draw()
    near = rng.random(N) < 0.5
    with np.errstate(over="ignore"):
        c[near] = (-(a.astype(np.float64) * b.astype(np.float64))[near]).astype(np_t)
    return a, b, c


def once_rounded(a, b, c, np_t):
    """a * b + c exactly (fractions), rounded once to np_t (ties to even)."""
    out = np.empty(len(a), np_t)
    for k, (x, y, z) in enumerate(zip(a.astype(np.float64), b.astype(np.float64), c.astype(np.float64))):
        exact = Fraction(x) * Fraction(y) + Fraction(z)
        lo = np_t(float(exact))  # float64 then np_t: two roundings; repaired below
        cands = [lo, np.nextafter(lo, np_t(np.inf)), np.nextafter(lo, np_t(-np.inf))]
        best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact),
                                         int(np.asarray(v).view(np.uint16)) & 1))
        out[k] = best
    return out


@pytest.mark.parametrize("dtype,np_t", TYPES)
def test_contracted_fma_is_rounded_once(dtype, np_t):
    a, b, c = operands(np_t, 1)
    d = poison((N,), dtype)
    tilelang.compile(muladd(dtype))(a, b, c, d)
    want = once_rounded(a, b, c, np_t)
    np.testing.assert_array_equal(d.view(np.uint16), want.view(np.uint16))


@pytest.mark.parametrize("dtype,np_t", TYPES)
def test_contraction_off_rounds_twice(dtype, np_t):
    a, b, c = operands(np_t, 2)
    d = poison((N,), dtype)
    tilelang.compile(muladd(dtype), pass_configs={"tl.contract_half_fma": False})(a, b, c, d)
    with np.errstate(over="ignore"):
        prod = (a.astype(np.float64) * b).astype(np_t)
        want = (prod.astype(np.float64) + c).astype(np_t)
    np.testing.assert_array_equal(d.view(np.uint16), want.view(np.uint16))


def test_source_spellings():
    src = tilelang.lower(muladd("float16"), target="cuda -arch=sm_90a").kernel_source
    assert "tl::hfma(A[" in src and "tl::hmul(" not in src
    off = tilelang.lower(muladd("float16"), target="cuda -arch=sm_90a",
                         pass_configs={"tl.contract_half_fma": False}).kernel_source
    assert "tl::hfma(" not in off and "tl::hmul(" in off
    f32 = tilelang.lower(muladd("float32"), target="cuda -arch=sm_90a").kernel_source
    assert "tl::hfma(" not in f32  # float is nvcc's to contract
