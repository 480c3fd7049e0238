"""T.__exp .. T.__tan are CUDA's hardware approximations (__expf, ...) and a few math calls
print with upstream TileLang's spellings (fabs, RoundTiesAwayFromZero, htan), which tools and
upstream's tests look for in generated source. Values are checked against numpy in float64 on
whichever target the suite runs: the approximations within their documented error, the rest
exactly."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison

FAST = {  # name -> (numpy reference, input range, absolute tolerance of CUDA's approximation)
    "__exp": (np.exp, (-4.0, 4.0), None),
    "__exp10": (lambda x: 10.0 ** x, (-2.0, 2.0), None),
    "__log": (np.log, (0.1, 8.0), 2e-6),
    "__log2": (np.log2, (0.1, 8.0), 2e-6),
    "__log10": (np.log10, (0.1, 8.0), 2e-6),
    "__sin": (np.sin, (-3.1, 3.1), 2e-6),
    "__cos": (np.cos, (-3.1, 3.1), 2e-6),
    "__tan": (np.tan, (-1.2, 1.2), None),
}


def unary(func, dtype="float32", n=256):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(n):
                B[i] = func(A[i])

    return main


@pytest.mark.parametrize("name", sorted(FAST))
def test_fast_math_values(name, rng):
    ref, (lo, hi), atol = FAST[name]
    a = rng.uniform(lo, hi, 256).astype(np.float32)
    b = poison((256,))
    tilelang.compile(unary(getattr(T, name)))(a, b)
    want = ref(a.astype(np.float64))
    # __expf, __exp10f and __tanf have a relative error of a few ulp times the argument's size
    # (CUDA programming guide, intrinsic functions); the others an absolute error bound.
    if atol is None:
        np.testing.assert_allclose(b, want, rtol=2e-5 * max(abs(lo), abs(hi)))
    else:
        np.testing.assert_allclose(b, want, rtol=0, atol=atol * max(1.0, float(np.max(np.abs(want)))))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fast_math_on_sixteen_bit_floats(dtype, rng):
    import ml_dtypes  # noqa: F401  (numpy's bfloat16)
    np_t = np.float16 if dtype == "float16" else np.dtype("bfloat16")
    a = rng.uniform(-1.0, 1.0, 256).astype(np.float32).astype(np_t)
    for name, ref in (("__exp", np.exp), ("__tan", np.tan), ("__sin", np.sin)):
        b = poison((256,), dtype)
        tilelang.compile(unary(getattr(T, name), dtype))(a, b)
        np.testing.assert_allclose(b.astype(np.float64), ref(a.astype(np.float64)), rtol=1e-2, atol=1e-2)


def test_upstream_spellings_values(rng):
    """fabs, ties-away rounding and 16-bit tan compute what they did before their new names."""
    a = (rng.integers(-40, 40, 256) / 4.0).astype(np.float32)  # quarters: ties at x.5
    b = poison((256,))
    tilelang.compile(unary(lambda x: T.round(x, "ties-away-from-zero")))(a, b)
    np.testing.assert_array_equal(b, np.sign(a) * np.floor(np.abs(a) + 0.5))
    tilelang.compile(unary(T.round))(a, b)
    np.testing.assert_array_equal(b, np.round(a))  # numpy rounds ties to even
    tilelang.compile(unary(T.abs))(a, b)
    np.testing.assert_array_equal(b, np.abs(a))
    h = rng.uniform(-1.2, 1.2, 256).astype(np.float16)
    hb = poison((256,), "float16")
    tilelang.compile(unary(T.tan, "float16"))(h, hb)
    np.testing.assert_allclose(hb.astype(np.float64), np.tan(h.astype(np.float64)), rtol=2e-3, atol=1e-3)


@pytest.mark.parametrize("func, dtype, spelling", [
    (T.__exp, "float32", "tl::__exp("),
    (T.__exp10, "float32", "tl::__exp10("),
    (T.__log, "float32", "tl::__log("),
    (T.__tan, "float32", "tl::__tan("),
    (T.__tan, "float16", "tl::htan("),
    (T.tan, "bfloat16", "tl::htan("),
    (T.abs, "float32", "tl::fabs("),
    (T.abs, "int32", "tl::abs("),
    (lambda x: T.round(x, "ties-away-from-zero"), "float32", "tl::RoundTiesAwayFromZero("),
    (T.round, "float32", "tl::nearbyint("),
    (T.exp, "float32", "tl::exp("),
])
def test_cuda_spellings(func, dtype, spelling):
    src = tilelang.lower(unary(func, dtype), target="cuda -arch=sm_90a").kernel_source
    assert spelling in src
