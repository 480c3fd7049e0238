"""T.ieee_add .. T.ieee_fdiv: float arithmetic in an explicit IEEE rounding mode (rn, rz, ru,
rd), upstream's names. Every result is compared with the exact value (Python fractions, or
decimals for square roots) rounded in that mode, on whichever target the suite runs."""
import decimal
from fractions import Fraction

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison

MODES = ["rn", "rz", "ru", "rd"]
OPS = {  # name -> (arity, exact value)
    "ieee_add": (2, lambda a, b: a + b),
    "ieee_sub": (2, lambda a, b: a - b),
    "ieee_mul": (2, lambda a, b: a * b),
    "ieee_fdiv": (2, lambda a, b: a / b),
    "ieee_fmaf": (3, lambda a, b, c: a * b + c),
    "ieee_frcp": (1, lambda a: 1 / a),
    "ieee_fsqrt": (1, None),
}


def kernel(name, dtype, mode, n=256):
    arity = OPS[name][0] if name in OPS else 1
    op = getattr(T, name)
    extra = () if name == "ieee_frsqrt" else (mode,)

    @T.prim_func
    def main(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype), C: T.Tensor((n,), dtype),
             Out: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(n):
                if arity == 1:
                    Out[i] = op(A[i], *extra)
                elif arity == 2:
                    Out[i] = op(A[i], B[i], *extra)
                else:
                    Out[i] = op(A[i], B[i], C[i], *extra)

    return main


def _neighbours(exact, np_t):
    """The largest value of np_t at most `exact` and the smallest at least it."""
    c = np_t(float(exact))
    while Fraction(float(c)) > exact:
        c = np.nextafter(c, np_t(-np.inf))
    lo = c
    hi = lo if Fraction(float(lo)) == exact else np.nextafter(lo, np_t(np.inf))
    return lo, hi


def rounded(exact, np_t, mode):
    lo, hi = _neighbours(exact, np_t)
    if lo == hi:
        return lo
    if mode == "rd":
        return lo
    if mode == "ru":
        return hi
    if mode == "rz":
        return lo if exact > 0 else hi
    d_lo, d_hi = exact - Fraction(float(lo)), Fraction(float(hi)) - exact
    if d_lo != d_hi:
        return lo if d_lo < d_hi else hi
    return lo if int(np.frombuffer(np_t(lo).tobytes(), dtype=np.uint16 if np_t == np.float16 else
                                   np.uint32 if np_t == np.float32 else np.uint64)[0]) % 2 == 0 else hi


def exact_sqrt(x):
    """sqrt(x) as a fraction, to 80 digits (enough to place it between two doubles)."""
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        return Fraction(decimal.Decimal(x.numerator).sqrt() / decimal.Decimal(x.denominator).sqrt())


def reference(name, np_t, mode, args):
    out = np.empty_like(args[0])
    for k in range(len(out)):
        vals = [Fraction(float(a[k])) for a in args]
        if name == "ieee_fsqrt":
            exact = exact_sqrt(vals[0])
        elif name == "ieee_frsqrt":
            exact = 1 / exact_sqrt(vals[0])
        else:
            exact = OPS[name][1](*vals)
        out[k] = rounded(exact, np_t, mode)
    return out


def inputs(rng, np_t, name, n=256):
    a, b, c = (rng.standard_normal(n).astype(np_t) for _ in range(3))
    if name in ("ieee_frcp", "ieee_fsqrt", "ieee_frsqrt"):
        a = np.abs(a) + np_t(0.1)
    if name == "ieee_fdiv":
        b = np.abs(b) + np_t(0.1)
    return a, b, c


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("dtype, mode", [("float32", m) for m in MODES] + [("float64", "rz"), ("float64", "ru"),
                                                                         ("float16", "rn")])
def test_rounding_modes_match_the_exact_result(name, dtype, mode):
    np_t = {"float16": np.float16, "float32": np.float32, "float64": np.float64}[dtype]
    rng = np.random.default_rng(abs(hash((name, dtype, mode))) % 2**32)
    a, b, c = inputs(rng, np_t, name)
    out = poison((256,), dtype)
    tilelang.compile(kernel(name, dtype, mode))(a, b, c, out)
    arity = OPS[name][0]
    want = reference(name, np_t, mode, [a, b, c][:arity])
    np.testing.assert_array_equal(out, want)


def test_modes_differ_where_the_result_is_inexact():
    # 1/3 is inexact: rd and ru give neighbouring floats, rz the lower (positive), rn one of them
    np_t = np.float32
    a = np.full(256, 1, np_t)
    b = np.full(256, 3, np_t)
    got = {}
    for mode in MODES:
        out = poison((256,), "float32")
        tilelang.compile(kernel("ieee_fdiv", "float32", mode))(a, b, b, out)
        got[mode] = out[0]
    assert got["rd"] < got["ru"] and np.nextafter(got["rd"], np_t(1)) == got["ru"]
    assert got["rz"] == got["rd"] and got["rn"] in (got["rd"], got["ru"])


def test_frsqrt_matches_the_exact_result():
    rng = np.random.default_rng(7)
    a = np.abs(rng.standard_normal(256).astype(np.float32)) + np.float32(0.1)
    out = poison((256,), "float32")
    tilelang.compile(kernel("ieee_frsqrt", "float32", "rn"))(a, a, a, out)
    np.testing.assert_array_equal(out, reference("ieee_frsqrt", np.float32, "rn", [a]))


def test_bad_rounding_modes_and_types_are_refused():
    with pytest.raises(ValueError, match="Invalid rounding mode"):
        T.ieee_add(1.0, 2.0, "invalid_mode")
    with pytest.raises(ValueError, match="Invalid rounding mode"):
        T.ieee_fsqrt(4.0, "bad_mode")
    with pytest.raises(Exception, match="Only rounding mode 'rn' is available for half precision"):
        kernel("ieee_add", "float16", "rz")
    with pytest.raises(Exception, match="frsqrt is not supported for float64"):
        kernel("ieee_frsqrt", "float64", "rn")


def _unary(fn, dtype="float32", n=256):
    @T.prim_func
    def main(A: T.Tensor((n,), dtype), Out: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(n):
                Out[i] = fn(A[i])

    return main


@pytest.mark.parametrize("mode, want", [(None, np.round), ("ties-to-even", np.round),
                                        ("ties-away-from-zero", lambda x: np.sign(x) * np.floor(np.abs(x) + 0.5))])
def test_round_ties_as_upstream(mode, want):
    # halves (x.5 for every x) and random values: ties go to even by default, as upstream's
    # T.round (nearbyint), or away from zero on request
    x = np.concatenate([np.arange(-64, 64, dtype=np.float32) + np.float32(0.5),
                        np.random.default_rng(3).standard_normal(128).astype(np.float32) * 8])
    out = poison((256,))
    fn = (lambda v: T.round(v)) if mode is None else (lambda v: T.round(v, mode))
    tilelang.compile(_unary(fn))(x, out)
    np.testing.assert_array_equal(out, want(x).astype(np.float32))


def test_round_refuses_other_modes():
    with pytest.raises(ValueError, match="Unsupported T.round rounding_mode"):
        T.round(1.5, "up")


def test_fast_rcp_is_close_to_the_reciprocal():
    x = np.random.default_rng(5).random(256).astype(np.float32) + np.float32(0.25)
    out = poison((256,))
    tilelang.compile(_unary(T.fast_rcp))(x, out)
    np.testing.assert_allclose(out, 1 / x.astype(np.float64), rtol=2e-6)
    src = tilelang.compile(_unary(T.fast_rcp), target="cuda -arch=sm_90a").get_kernel_source()
    assert "tl::fast_rcp(" in src
