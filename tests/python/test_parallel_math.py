"""Element-wise math in T.Parallel loops: the math library, T.max/T.min/T.if_then_else,
T.infinity, T.cast, integer division semantics."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import NP, compile_cpu, f64, poison, rand


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


# name -> numpy reference on float64 inputs (x: signed, p: positive, y: second input)
FUNCS = [
    ("exp", lambda x, p, y: np.exp(x)),
    ("exp2", lambda x, p, y: np.exp2(x)),
    ("log", lambda x, p, y: np.log(p)),
    ("log2", lambda x, p, y: np.log2(p)),
    ("sqrt", lambda x, p, y: np.sqrt(p)),
    ("rsqrt", lambda x, p, y: 1 / np.sqrt(p)),
    ("abs", lambda x, p, y: np.abs(x)),
    ("tanh", lambda x, p, y: np.tanh(x)),
    ("sigmoid", lambda x, p, y: _sigmoid(x)),
    ("floor", lambda x, p, y: np.floor(x)),
    ("ceil", lambda x, p, y: np.ceil(x)),
    ("pow", lambda x, p, y: p ** 1.75),
    ("max", lambda x, p, y: np.maximum(x, y)),
    ("min", lambda x, p, y: np.minimum(x, y)),
    ("leaky", lambda x, p, y: np.where(x > 0, x, 0.125 * x)),
    ("trunc4", lambda x, p, y: np.trunc(x * 4)),
    ("max_ninf", lambda x, p, y: x),
    ("inf_or_x", lambda x, p, y: np.where(x > 1, np.inf, x)),
    ("fma", lambda x, p, y: x * y + 2.0 - y / p),
]
NF = len(FUNCS)


def make_math(M, N, bm, dtype):
    @T.prim_func
    def math(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype), Out: T.Tensor((NF, M, N), dtype)):
        with T.Kernel(T.ceildiv(M, bm), threads=32) as bx:
            xs = T.alloc_fragment((bm, N), dtype)
            T.copy(X[bx * bm, 0], xs)
            for i, j in T.Parallel(bm, N):
                if bx * bm + i < M:  # a run-time condition guarding the ragged last tile
                    r = bx * bm + i
                    x = xs[i, j]
                    p = T.abs(x) + 0.5
                    y = Y[r, j]
                    Out[0, r, j] = T.exp(x)
                    Out[1, r, j] = T.exp2(x)
                    Out[2, r, j] = T.log(p)
                    Out[3, r, j] = T.log2(p)
                    Out[4, r, j] = T.sqrt(p)
                    Out[5, r, j] = T.rsqrt(p)
                    Out[6, r, j] = T.abs(x)
                    Out[7, r, j] = T.tanh(x)
                    Out[8, r, j] = T.sigmoid(x)
                    Out[9, r, j] = T.floor(x)
                    Out[10, r, j] = T.ceil(x)
                    Out[11, r, j] = T.pow(p, 1.75)
                    Out[12, r, j] = T.max(x, y)
                    Out[13, r, j] = T.min(x, y)
                    Out[14, r, j] = T.if_then_else(x > 0, x, 0.125 * x)
                    Out[15, r, j] = T.Cast(dtype, T.cast(x * 4, "int32"))  # TIR spelling: dtype first
                    Out[16, r, j] = T.max(x, -T.infinity(dtype))
                    Out[17, r, j] = T.if_then_else(x > 1, T.infinity(dtype), x)
                    Out[18, r, j] = x * y + 2.0 - y / p
    return math


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_math_functions(rng, dtype):
    M, N, bm = 11, 8, 4
    kernel = compile_cpu(make_math(M, N, bm, dtype))
    x, y = rand(rng, (M, N), dtype), rand(rng, (M, N), dtype)
    out = poison((NF, M, N), dtype)
    kernel(x, y, out)
    xf, yf = f64(x), f64(y)
    pf = f64((np.abs(xf) + 0.5).astype(NP[dtype]))
    tol = {"float32": 1e-5, "float16": 2e-3, "bfloat16": 1.6e-2, "float64": 1e-12}[dtype]
    for k, (name, ref_fn) in enumerate(FUNCS):
        ref = ref_fn(xf, pf, yf)
        np.testing.assert_allclose(f64(out[k]), ref, rtol=2 * tol, atol=2 * tol, err_msg=name)
    assert np.isinf(f64(out[17])[xf > 1]).all() and (xf > 1).any()


def test_integer_ops(rng):
    """Floor division/modulo semantics on negative values, T.ceildiv/T.min/T.max on run-time
    ints, bit operations, casts between int and float, Python builtins on run-time values."""
    M = 23

    @T.prim_func
    def ints(A: T.Tensor((M,), "int32"), F: T.Tensor((M,), "float32"), Out: T.Tensor((10, M), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.Parallel(M):
                a = A[i]
                Out[0, i] = a // 3
                Out[1, i] = a % 3
                Out[2, i] = T.ceildiv(T.abs(a) + 1, 4)
                Out[3, i] = T.min(a, 2) * T.max(a, -1)
                Out[4, i] = (a & 6) | (a << 1) ^ (a >> 1)
                Out[5, i] = T.cast(F[i], "int32")  # truncation toward zero
                Out[6, i] = T.cast(T.cast(a, "float32") * 0.5 + 0.25, "int32")
                Out[7, i] = max(a, 0, i - 10)  # Python builtins map to T.max / T.min / T.abs
                Out[8, i] = abs(a) + min(a, 1)
                Out[9, i] = T.if_then_else(a == 0, 100, T.if_then_else(a < 0, -1, 1))

    kernel = compile_cpu(ints, out_idx=-1)
    a = rand(rng, (M,), "int32", -50, 50)
    a[:3] = [0, -7, 7]
    f = (rng.standard_normal(M) * 10).astype(np.float32)
    out = kernel(a, f)
    a64 = a.astype(np.int64)
    ref = [
        a64 // 3, a64 % 3, -(-(np.abs(a64) + 1) // 4), np.minimum(a64, 2) * np.maximum(a64, -1),
        (a64 & 6) | (a64 << 1) ^ (a64 >> 1), np.trunc(f).astype(np.int64),
        np.trunc(a64 * 0.5 + 0.25).astype(np.int64), np.maximum(np.maximum(a64, 0), np.arange(M) - 10),
        np.abs(a64) + np.minimum(a64, 1), np.where(a64 == 0, 100, np.sign(a64)),
    ]
    for k, r in enumerate(ref):
        np.testing.assert_array_equal(out[k], r, err_msg=f"row {k}")


def test_bitwise_functions(rng):
    import tilelang.language as T
    from conftest import compile_cpu

    @T.prim_func
    def main(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "int32"), C: T.Tensor((6, 64), "int32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                C[0, i] = T.bitwise_and(A[i], B[i])
                C[1, i] = T.bitwise_or(A[i], B[i])
                C[2, i] = T.bitwise_xor(A[i], B[i])
                C[3, i] = T.shift_left(A[i], 3)
                C[4, i] = T.shift_right(A[i], 2)
                C[5, i] = T.bitwise_not(A[i])

    a = rng.integers(0, 1 << 20, 64).astype("int32")
    b = rng.integers(0, 1 << 20, 64).astype("int32")
    c = compile_cpu(main, out_idx=[-1])(a, b)
    import numpy as np
    np.testing.assert_array_equal(c, np.stack([a & b, a | b, a ^ b, a << 3, a >> 2, ~a]))


def test_max_min_follow_fmax_fmin_with_nan(rng):
    """T.max / T.min: a NaN operand loses to a number (np.fmax / np.fmin), on every target."""
    n = 64

    @T.prim_func
    def nan_minmax(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), MX: T.Tensor((n,), "float32"),
                   MN: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(n):
                MX[i] = T.max(X[i], Y[i])
                MN[i] = T.min(X[i], Y[i])

    k = compile_cpu(nan_minmax)
    x = rand(rng, (n,), "float32")
    y = rand(rng, (n,), "float32")
    x[::4] = np.nan
    y[1::4] = np.nan
    x[2::8] = np.nan
    y[2::8] = np.nan
    mx, mn = poison((n,), "float32"), poison((n,), "float32")
    k(x, y, mx, mn)
    np.testing.assert_array_equal(mx, np.fmax(x, y))
    np.testing.assert_array_equal(mn, np.fmin(x, y))
