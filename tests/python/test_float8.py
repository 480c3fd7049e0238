"""8-bit floats (float8_e4m3fn, float8_e5m2; float8_e4m3 is upstream's other name for E4M3)
as tensor, tile and value types: conversions bit for bit, arithmetic (computed in float),
T.gemm with float32 accumulation, reductions, and the errors for what is refused. The
conversions saturate like CUDA's cvt.rn.satfinite (see templates/tl/float8.h), so the
reference is ml_dtypes' rounding of the value clipped to the largest finite one."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu

FORMATS = {"float8_e4m3fn": (ml_dtypes.float8_e4m3fn, 448.0), "float8_e5m2": (ml_dtypes.float8_e5m2, 57344.0)}


def _table(np_t):
    """Every finite value of the format, sorted, and the values between and around them
    (midpoints are the round-to-nearest-even ties)."""
    vals = np.arange(256, dtype=np.uint8).view(np_t).astype(np.float64)
    fin = np.unique(vals[np.isfinite(vals)])
    mids = (fin[1:] + fin[:-1]) / 2
    return fin, np.concatenate([fin, mids, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])


def _cast_kernel(n, dt):
    @T.prim_func
    def cast(A: T.Tensor((n,), "float32"), D: T.Tensor((n,), "float64"), B: T.Tensor((n,), dt),
             B64: T.Tensor((n,), dt), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    B[bx * 128 + i] = T.cast(A[bx * 128 + i], dt)
                    B64[bx * 128 + i] = T.cast(D[bx * 128 + i], dt)
                    C[bx * 128 + i] = T.cast(B[bx * 128 + i], "float32")

    return cast


# hw: on the CUDA run, through sm_89+'s cvt instructions (tl.enable_float8_hw_convert);
# the same answers are expected bit for bit (the CPU target has one path)
HW = [False, True]


@pytest.mark.parametrize("hw", HW, ids=["integer", "hw_convert"])
@pytest.mark.parametrize("dt", sorted(FORMATS))
def test_conversions_bit_for_bit(dt, hw, rng):
    np_t, mx = FORMATS[dt]
    fin, edges = _table(np_t)
    wide = rng.standard_normal(6000) * np.exp2(rng.integers(-28, 20, 6000))
    special = np.array([0.0, -0.0, np.inf, -np.inf, 1e30, -1e30, 1e-40, -1e-40, mx * 1.03, -mx * 1.06])
    x = np.concatenate([edges, wide, special])
    n = x.size
    a, d = x.astype(np.float32), x.astype(np.float64)
    b, b64, c = np.zeros(n, np_t), np.zeros(n, np_t), np.full(n, np.nan, np.float32)
    compile_cpu(_cast_kernel(n, dt), pass_configs={"tl.enable_float8_hw_convert": hw})(a, d, b, b64, c)
    want = np.clip(a.astype(np.float64), -mx, mx).astype(np_t)  # exact from float32
    assert (b.view(np.uint8) == want.view(np.uint8)).all()
    assert (c == b.astype(np.float32)).all(), "widening to float32 is exact"
    got64 = b64.astype(np.float64)
    ref64 = np.clip(d, -mx, mx)
    # each result is a neighbour of the exact value, no farther than the other neighbour
    err = np.abs(got64 - ref64)
    i = np.clip(np.searchsorted(fin, ref64), 1, len(fin) - 1)
    assert (err <= np.minimum(np.abs(fin[i] - ref64), np.abs(ref64 - fin[i - 1])) + 0).all()
    # and equal to float32's answer whenever the double is a float32 value
    same = d == d.astype(np.float32)
    assert (b64.view(np.uint8)[same] == b.view(np.uint8)[same]).all()


@pytest.mark.parametrize("hw", HW, ids=["integer", "hw_convert"])
def test_nan_stays_nan_and_infinity_saturates(hw):
    n = 4
    x = np.array([np.nan, -np.nan, np.inf, -np.inf], np.float32)
    for dt, (np_t, mx) in FORMATS.items():
        b, b64, c = np.zeros(n, np_t), np.zeros(n, np_t), np.zeros(n, np.float32)
        compile_cpu(_cast_kernel(n, dt), pass_configs={"tl.enable_float8_hw_convert": hw})(
            x, x.astype(np.float64), b, b64, c)
        assert np.isnan(c[:2]).all()
        assert list(c[2:]) == [mx, -mx], dt


@pytest.mark.parametrize("dt", ["float8_e4m3fn", "float8_e4m3", "float8_e5m2"])
def test_max_min_clamp_and_arithmetic(dt, rng):
    np_t, mx = FORMATS["float8_e5m2" if dt == "float8_e5m2" else "float8_e4m3fn"]
    n = 512

    @T.prim_func
    def ops(A: T.Tensor((n,), dt), B: T.Tensor((n,), dt), Mx: T.Tensor((n,), dt), Mn: T.Tensor((n,), dt),
            Cl: T.Tensor((n,), dt), Ar: T.Tensor((n,), dt), Ab: T.Tensor((n,), "float16")):
        with T.Kernel(n // 128, threads=128) as bx:
            for i in T.Parallel(128):
                j = bx * 128 + i
                Mx[j] = T.max(A[j], B[j])
                Mn[j] = T.min(A[j], B[j])
                Cl[j] = T.clamp(A[j], T.cast(-1.0, dt), T.cast(1.0, dt))
                Ar[j] = A[j] * B[j] + 1.0
                Ab[j] = T.cast(T.abs(A[j]), "float16")

    a = rng.integers(-4, 5, n).astype(np_t)
    b = (rng.standard_normal(n) * 3).astype(np_t)
    outs = [np.zeros(n, np_t) for _ in range(4)] + [np.zeros(n, np.float16)]
    compile_cpu(ops)(a, b, *outs)
    af, bf = a.astype(np.float32), b.astype(np.float32)
    sat = lambda v: np.clip(v.astype(np.float64), -mx, mx).astype(np_t).astype(np.float32)  # noqa: E731
    assert (outs[0].astype(np.float32) == np.maximum(af, bf)).all()
    assert (outs[1].astype(np.float32) == np.minimum(af, bf)).all()
    assert (outs[2].astype(np.float32) == np.clip(af, -1, 1)).all()
    assert (outs[3].astype(np.float32) == sat(af * bf + np.float32(1))).all(), "computed in float, rounded once"
    assert (outs[4] == np.abs(af).astype(np.float16)).all()


@pytest.mark.parametrize("dt", sorted(FORMATS))
def test_gemm_with_float32_accumulation(dt, rng):
    np_t, _ = FORMATS[dt]
    M, N, K = 64, 48, 96

    @T.prim_func
    def gemm(A: T.Tensor((M, K), dt), B: T.Tensor((N, K), dt), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as bx:
            As = T.alloc_shared((M, K), dt)
            Bs = T.alloc_shared((N, K), dt)
            Cf = T.alloc_fragment((M, N), "float32")
            T.clear(Cf)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, transpose_B=True)
            T.copy(Cf, C)

    a = rng.standard_normal((M, K)).astype(np_t)
    b = rng.standard_normal((N, K)).astype(np_t)
    c = np.full((M, N), np.nan, np.float32)
    compile_cpu(gemm)(a, b, c)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64).T)


def test_tiles_copies_and_row_reduction(rng):
    dt, (np_t, _) = "float8_e4m3fn", FORMATS["float8_e4m3fn"]
    M, N = 16, 64

    @T.prim_func
    def rows(A: T.Tensor((M, N), dt), Copy: T.Tensor((M, N), dt), R: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((M, N), dt)
            f = T.alloc_fragment((M, N), dt)
            r = T.alloc_fragment((M,), "float32")
            T.copy(A, s)
            T.copy(s, f)
            T.reduce_max(f, r, dim=1)
            T.copy(f, Copy)
            T.copy(r, R)

    a = (rng.standard_normal((M, N)) * 8).astype(np_t)
    cp, r = np.zeros((M, N), np_t), np.full(M, np.nan, np.float32)
    compile_cpu(rows)(a, cp, r)
    assert (cp.view(np.uint8) == a.view(np.uint8)).all()
    assert (r == a.astype(np.float32).max(axis=1)).all()


def test_dtype_objects_and_names():
    assert str(T.float8_e4m3fn) == "float8_e4m3fn" and str(T.float8_e5m2) == "float8_e5m2"
    assert T.float8_e4m3fn.as_numpy() == np.dtype(ml_dtypes.float8_e4m3fn)
    assert T.float8_e4m3.as_numpy() == np.dtype(ml_dtypes.float8_e4m3fn), "upstream's name for E4M3 fn"


def test_hw_convert_compiles_for_hopper():
    # the switch is a compile definition: the same source, the cvt path under TL_FLOAT8_HW_CVT
    for hw in (False, True):
        k = tilelang.compile(_cast_kernel(256, "float8_e4m3fn"), target="cuda -arch=sm_90a",
                             pass_configs={"tl.enable_float8_hw_convert": hw})
        ptx = k.get_ptx()
        assert ("cvt.rn.satfinite.e4m3x2.f32" in ptx) == hw and ("cvt.rn.f16x2.e4m3x2" in ptx) == hw
        assert not any("float8_hw" in r for r in k.get_remarks()), k.get_remarks()


def test_atomic_on_float8_is_a_clear_error():
    with pytest.raises(tilelang.TileLangCompileError, match="atomics on 8-bit floats are not supported") as info:

        @T.prim_func
        def bad(A: T.Tensor((8,), "float8_e4m3fn")):
            with T.Kernel(1, threads=8) as bx:
                for i in T.Parallel(8):
                    T.atomic_add(A[0], A[i])

    assert "T.atomic_add(A[0], A[i])" in str(info.value), "points at the user's line"


def test_cuda_narrow_float_scalar_parameters_arrive_as_float():
    """A float16 (or 8-bit) scalar parameter is passed by the launch as a 4-byte float; the
    kernel takes it as float and rounds it once (reading it as 2 bytes gave garbage)."""

    @T.prim_func
    def scale(X: T.Tensor((64,), "float16"), a: T.float16, q: T.float8_e4m3fn):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                X[i] = X[i] * a + T.cast(q, "float16")

    src = tilelang.lower(scale, target="cuda -arch=sm_90a").kernel_source
    assert "float a_arg, float q_arg" in src
    assert "const tl::half a = tl::half(a_arg);" in src and "const tl::float8_e4m3 q = tl::float8_e4m3(q_arg);" in src
    x = np.ones(64, np.float16)
    compile_cpu(scale)(x, 1.5, 0.25)
    assert (x == np.float16(1.75)).all()


def _fp8_gemm(dtype, M=256, N=256, K=256, bk=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            a_s = T.alloc_shared((128, bk), dtype)
            b_s = T.alloc_shared((128, bk), dtype)
            acc = T.alloc_fragment((128, 128), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=3):
                T.copy(A[by * 128, k * bk], a_s)
                T.copy(B[bx * 128, k * bk], b_s)
                T.gemm(a_s, b_s, acc, transpose_B=True)
            T.copy(acc, C[by * 128, bx * 128])
    return main


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_gemm_takes_wgmma_unless_turned_off(dtype):
    """float8 GEMMs on Hopper's k32 wgmma (K-major A and B, the 64-byte swizzle for K = 64
    float8 rows) by default; tl.enable_wgmma_fp8=False gives the multiply-add loops, with
    the remark saying why."""
    off = tilelang.compile(_fp8_gemm(dtype), target="cuda -arch=sm_90a", pass_configs={"tl.enable_wgmma_fp8": False})
    assert any("float8 wgmma is turned off" in r for r in off.get_remarks()), off.get_remarks()
    on = tilelang.compile(_fp8_gemm(dtype), target="cuda -arch=sm_90a")
    remarks = "\n".join(on.get_remarks())
    assert "k32 (float8) from shared memory" in remarks and "warp-specialized" in remarks, remarks
    assert [spec[-1] for spec in on._cuda.src.tma_specs] == [2, 2]  # SWIZZLE_64B: 64-byte rows
    # ... and transposed operands are refused with a reason
    @T.prim_func
    def nt(A: T.Tensor((64, 64), dtype), B: T.Tensor((64, 128), dtype), C: T.Tensor((64, 128), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 64), dtype)
            b_s = T.alloc_shared((64, 128), dtype)
            acc = T.alloc_fragment((64, 128), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.gemm(a_s, b_s, acc, clear_accum=True)
            T.copy(acc, C)

    k = tilelang.compile(nt, target="cuda -arch=sm_90a")
    assert any("float8 wgmma reads K-major tiles only" in r for r in k.get_remarks()), k.get_remarks()


@pytest.mark.parametrize("dtype", ["float8_e4m3fn", "float8_e5m2"])
def test_fp8_gemm_matches_float64(dtype):
    """On the CPU target, multiply-add loops; the GPU suite (TILELANG_TEST_CUDA=1) runs it on
    Hopper's float8 wgmma."""
    rng = np.random.default_rng(8)
    np_dt = ml_dtypes.float8_e4m3fn if dtype == "float8_e4m3fn" else ml_dtypes.float8_e5m2
    a = (rng.integers(-8, 9, size=(256, 256)) / 4).astype(np_dt)
    b = (rng.integers(-8, 9, size=(256, 256)) / 4).astype(np_dt)
    c = np.full((256, 256), np.nan, np.float32)
    tilelang.compile(_fp8_gemm(dtype))(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-6)


def test_infinity_of_each_format():
    """T.infinity: E5M2 has infinities (upstream's test reads inf back); E4M3 has none, so
    its largest finite value, 448. (A float infinity *converted* saturates, see above.)"""
    for dt, want in (("float8_e5m2", np.inf), ("float8_e4m3fn", 448.0)):
        @T.prim_func
        def fill(A: T.Tensor((32,), dt)):
            with T.Kernel(1, threads=32):
                T.fill(A, T.infinity(dt))

        a = np.zeros(32, FORMATS[dt][0])
        compile_cpu(fill)(a)
        assert (a.astype(np.float32) == want).all(), (dt, a[:2])
