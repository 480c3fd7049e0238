"""The rest of upstream's element-wise math (T.tan, T.sinh .. T.atanh, T.exp10, T.expm1,
T.nearbyint, T.atan2, T.hypot, T.copysign, T.fmod, T.nextafter, T.fma, T.fabs) and integer
helpers (T.popcount, T.clz, T.truncdiv, T.truncmod, T.likely) on both targets, against numpy
in float64 (the CUDA run of the suite checks the device library's versions)."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import compile_cpu, poison, refusal

N = 256

UNARY = {
    "tan": (np.tan, -1.2, 1.2), "sinh": (np.sinh, -3, 3), "cosh": (np.cosh, -3, 3),
    "asin": (np.arcsin, -0.99, 0.99), "acos": (np.arccos, -0.99, 0.99), "atan": (np.arctan, -5, 5),
    "asinh": (np.arcsinh, -5, 5), "acosh": (np.arccosh, 1.01, 6), "atanh": (np.arctanh, -0.99, 0.99),
    "exp10": (lambda x: 10.0 ** x, -3, 3), "expm1": (np.expm1, -2, 2), "nearbyint": (np.rint, -9, 9),
    "fabs": (np.abs, -5, 5),
}


def _unary(name):
    fn = getattr(T, name)

    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Y: T.Tensor((N,), "float32")):
        with T.Kernel(N // 128, threads=128) as bx:
            for i in T.Parallel(128):
                Y[bx * 128 + i] = fn(X[bx * 128 + i])

    return main


@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_math_matches_numpy(rng, name):
    ref, lo, hi = UNARY[name]
    x = rng.uniform(lo, hi, N).astype(np.float32)
    if name == "nearbyint":
        x[:8] = [0.5, 1.5, 2.5, -0.5, -1.5, 3.5, -2.5, 4.5]  # ties go to even
    y = poison((N,))
    compile_cpu(_unary(name))(x, y)
    np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=2e-6, atol=2e-6)


@T.prim_func
def _binary(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32"),
            O: T.Tensor((6, N), "float32")):
    with T.Kernel(N // 128, threads=128) as bx:
        for i in T.Parallel(128):
            j = bx * 128 + i
            O[0, j] = T.atan2(A[j], B[j])
            O[1, j] = T.hypot(A[j], B[j])
            O[2, j] = T.copysign(A[j], B[j])
            O[3, j] = T.fmod(A[j], B[j])
            O[4, j] = T.nextafter(A[j], B[j])
            O[5, j] = T.fma(A[j], B[j], C[j])


def test_binary_math_matches_numpy(rng):
    a = rng.uniform(-4, 4, N).astype(np.float32)
    b = rng.uniform(-4, 4, N).astype(np.float32)
    b[np.abs(b) < 0.1] = 0.5
    c = rng.uniform(-4, 4, N).astype(np.float32)
    o = poison((6, N))
    compile_cpu(_binary)(a, b, c, o)
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
    np.testing.assert_allclose(o[0], np.arctan2(a64, b64), rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(o[1], np.hypot(a64, b64), rtol=2e-6, atol=2e-6)
    assert np.array_equal(o[2], np.copysign(a, b))
    np.testing.assert_allclose(o[3], np.fmod(a64, b64), rtol=1e-6, atol=1e-6)
    assert np.array_equal(o[4], np.nextafter(a, b))
    np.testing.assert_allclose(o[5], a64 * b64 + c64, rtol=1e-6, atol=1e-6)


@T.prim_func
def _integers(X: T.Tensor((N,), "int32"), D: T.Tensor((N,), "int32"), O: T.Tensor((4, N), "int32")):
    with T.Kernel(N // 128, threads=128) as bx:
        for i in T.Parallel(128):
            j = bx * 128 + i
            O[0, j] = T.popcount(X[j])
            O[1, j] = T.clz(X[j])
            O[2, j] = T.truncdiv(X[j], D[j])
            O[3, j] = T.if_then_else(T.likely(D[j] != 0), T.truncmod(X[j], D[j]), 0)


def test_integer_helpers_match_c(rng):
    x = rng.integers(-2**31, 2**31 - 1, N).astype(np.int32)
    x[:3] = [0, -1, 1]
    d = rng.integers(-50, 50, N).astype(np.int32)
    d[d == 0] = 7
    o = np.full((4, N), -12345, np.int32)
    compile_cpu(_integers)(x, d, o)
    u = x.view(np.uint32)
    assert np.array_equal(o[0], [bin(int(v)).count("1") for v in u])
    assert np.array_equal(o[1], [32 - int(v).bit_length() for v in u])
    q = np.trunc(x.astype(np.float64) / d).astype(np.int64)
    assert np.array_equal(o[2], q) and np.array_equal(o[3], x - q * d)


def test_bit_counts_take_integers(tmp_path):
    refusal(tmp_path,
            "import tilelang.language as T\n\n@T.prim_func\n"
            "def k(X: T.Tensor((4,), 'float32'), Y: T.Tensor((4,), 'int32')):\n"
            "    with T.Kernel(1, threads=4) as bx:\n"
            "        Y[0] = T.popcount(X[0])\n", "counts the set bits of an integer, got float32")
