"""T.cast(x, dtype, round="rs", rbits=r): float32 values rounded up or down at random to
float16, bfloat16, float8_e4m3fn, float8_e5m2 and float4_e2m1fn. Checked bit for bit
against a float64 model of the rule in templates/tl/stochastic_round.h (the upper neighbour
when r / 2^32 < the distance to the lower one in ulps; saturating), for unbiasedness over
random bits, and for upstream's restrictions: sat=False refused, CUDA only on sm_100a."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, marker_line
from tilelang.errors import TileLangCompileError
from tilelang.utils.tensor import unpack_4bit

M = 2048
# name -> (numpy type, mantissa bits, smallest normal exponent, largest finite value)
FORMATS = {
    "float16": (np.float16, 10, -14, 65504.0),
    "bfloat16": (ml_dtypes.bfloat16, 7, -126, float(ml_dtypes.finfo(ml_dtypes.bfloat16).max)),
    "float8_e4m3fn": (ml_dtypes.float8_e4m3fn, 3, -6, 448.0),
    "float8_e5m2": (ml_dtypes.float8_e5m2, 2, -14, 57344.0),
    "float4_e2m1fn": (ml_dtypes.float4_e2m1fn, 1, 0, 6.0),
}


def rs_kernel(dt, rbits_dtype="uint32"):
    @T.prim_func
    def main(A: T.Tensor((M,), "float32"), R: T.Tensor((M,), rbits_dtype), B: T.Tensor((M,), dt)):
        with T.Kernel(M // 128, threads=128) as bx:
            for i in T.Parallel(128):
                B[bx * 128 + i] = T.cast(A[bx * 128 + i], dt, round="rs", rbits=R[bx * 128 + i])

    return main


def model(x, r, dt):
    """The rule in float64: the exact neighbours lo, lo + ulp of |x|, the upper one when
    r < frac * 2^32; beyond the largest finite value (infinities too) that value."""
    _, m, emin, vmax = FORMATS[dt]
    x = x.astype(np.float32)  # (float32 in, float64 arithmetic: exact)
    mag = np.abs(x).astype(np.float64)
    e = ((x.view(np.uint32) >> 23) & 0xFF).astype(np.int64) - 127  # -127: float32 subnormals, zero
    step = np.maximum(e, emin) - m
    with np.errstate(invalid="ignore"):  # (infinities: replaced by the largest value below)
        q = mag / np.exp2(step)
        k = np.floor(q)
        up = r.astype(np.float64) < (q - k) * 2.0**32
    res = np.where(mag >= vmax, vmax, (k + up) * np.exp2(step))
    npdt = FORMATS[dt][0]
    with np.errstate(invalid="ignore"):  # NaN as a plain cast converts it (float4 has no NaN)
        nan_as = x.astype(npdt).astype(np.float64)
    return np.where(np.isnan(x), nan_as, np.copysign(res, x))  # the sign stays, on zeros too


def sweep(rng, dt):
    """Random magnitudes over the format's range, its subnormals, exact values, ties, the
    largest finite value and beyond, both zeros, infinities and NaN."""
    npdt, m, emin, vmax = FORMATS[dt]
    n = M - 16
    logs = rng.uniform(emin - m - 2, np.log2(vmax) + 0.3, n)
    x = (np.exp2(logs) * rng.choice([-1.0, 1.0], n)).astype(np.float32)
    x[:64] = np.arange(64).astype(np.float32) * np.float32(2.0 ** (emin - m))  # subnormal steps
    x[64:128] = x[64:128].astype(npdt).astype(np.float32)  # representable: no rounding at all
    special = [0.0, -0.0, vmax, -vmax, vmax * 1.5, np.inf, -np.inf, np.nan, 1e-30, -1e-30,
               2.0 ** (emin - m - 1), 1.0, 1.0 + 2.0 ** -(m + 1), -3.0, 1e-45, 5e-40]
    return np.concatenate([x, np.array(special, np.float32)])


def run(dt, x, r):
    npdt = FORMATS[dt][0]
    if dt == "float4_e2m1fn":  # packed two per byte
        out = np.full(M // 2, 0x77, np.uint8)
        compile_cpu(rs_kernel(dt))(x, r, out)
        return unpack_4bit(out, "float4_e2m1fn").astype(np.float64)
    out = np.zeros(M, npdt)
    compile_cpu(rs_kernel(dt))(x, r, out)
    return out.astype(np.float64)


@pytest.mark.cpu_target  # CUDA refuses it below sm_100a (test below)
@pytest.mark.parametrize("dt", list(FORMATS))
def test_matches_the_rule_bit_for_bit(rng, dt):
    x = sweep(rng, dt)
    r = rng.integers(0, 2**32, M, dtype=np.uint64).astype(np.uint32)
    r[:8] = [0, 1, 2**31, 2**32 - 1, 0, 2**32 - 1, 2**31 - 1, 2**31 + 1]
    got = run(dt, x, r)
    want = model(x, r, dt)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    bad = np.flatnonzero(ok & ((got != want) | (np.signbit(got) != np.signbit(want))))
    assert bad.size == 0, [(x[i], r[i], got[i], want[i]) for i in bad[:5]]
    # every finite result is one of the two neighbours (or x itself when representable)
    npdt = FORMATS[dt][0]
    fin = np.isfinite(x) & (np.abs(x) < FORMATS[dt][3])
    assert (np.abs(got[fin] - x[fin]) <= np.abs(x[fin].astype(npdt).astype(np.float64) - x[fin]) * 2 + 1e-300
            + np.exp2(np.maximum(np.floor(np.log2(np.abs(x[fin]) + 1e-300)), FORMATS[dt][2]) - FORMATS[dt][1])).all()
    assert np.array_equal(got[64:128], x[64:128].astype(np.float64))  # representable values stay


@pytest.mark.cpu_target
@pytest.mark.parametrize("dt", ["float16", "float8_e4m3fn"])
def test_unbiased_over_random_bits(dt):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(M).astype(np.float32)
    k = compile_cpu(rs_kernel(dt, "int32"))  # int32 random bits are taken as their uint32 bits
    npdt = FORMATS[dt][0]
    n, acc = 200, np.zeros(M)
    for _ in range(n):
        r = rng.integers(-2**31, 2**31, M, dtype=np.int64).astype(np.int32)
        out = np.zeros(M, npdt)
        k(x, r, out)
        acc += out.astype(np.float64)
    bias = np.abs(acc / n - x).mean()
    nearest = np.abs(x.astype(npdt).astype(np.float64) - x).mean()
    # the mean of n roundings is within a few standard errors of x: well below one rounding
    assert bias < nearest / 3, (bias, nearest)


def _sat_false():
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float16")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128):
                B[i] = T.cast(A[i], "float16", round="rs", sat=False, rbits=T.uint32(7))  # ERR-HERE

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_100a"])
def test_sat_false_is_refused_when_lowering(target):
    func = _sat_false()  # (upstream refuses it when lowering, not when the kernel is defined)
    with pytest.raises(TileLangCompileError, match="sat=false is not supported") as e:
        tilelang.lower(func, target=target)
    assert e.value.line == marker_line(_sat_false)


@pytest.mark.parametrize("dt,name", [("float16", "FP16"), ("bfloat16", "BF16"), ("float8_e5m2", "FP8"),
                                     ("float4_e2m1fn", "FP4")])
@pytest.mark.parametrize("arch", ["sm_90a", "sm_100", "sm_80"])
def test_cuda_needs_sm100a_as_upstream(dt, name, arch):
    with pytest.raises(RuntimeError, match=f"Stochastic rounding f32-to-{name} requires sm_100a") as e:
        tilelang.lower(rs_kernel(dt), target=f"cuda -arch={arch}")
    assert f"compiled for {arch}" in str(e.value)


def test_sm100a_source_rounds_in_software_and_says_so():
    k = tilelang.lower(rs_kernel("float8_e4m3fn"), target="cuda -arch=sm_100a")
    assert "tl::__tl_cvt_f32x1_to_e4m3x1_rs_sat(" in k.kernel_source  # upstream's helper name
    assert any("not cvt.rs" in r for r in k.remarks), k.remarks


def test_argument_errors():
    def build(src_dt="float32", dt="float16", rbits="R[i]"):
        @T.prim_func
        def main(A: T.Tensor((128,), src_dt), R: T.Tensor((128,), "uint32"), B: T.Tensor((128,), dt)):
            with T.Kernel(1, threads=128):
                for i in T.Parallel(128):
                    B[i] = T.cast(A[i], dt, round="rs", rbits=eval(rbits, {"R": R, "i": i, "T": T}))

        return main

    with pytest.raises(TileLangCompileError, match="converts float32 values, got float16"):
        build(src_dt="float16")
    with pytest.raises(TileLangCompileError, match="converts to one of .* got int8"):
        build(dt="int8")
    with pytest.raises(TileLangCompileError, match="rbits must be a 32-bit integer, got int8"):
        build(rbits="T.int8(3)")
    with pytest.raises(ValueError, match="rbits is required"):
        T.cast(1.0, "float16", round="rs")
