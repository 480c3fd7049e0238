"""Packed two-lane math (T.add2, T.sub2, T.mul2, T.fma2, T.max2, T.min2, T.abs2) and
T.extract_lane, over two-element slices (upstream's `A[T.Ramp(2 * t, 1, 2)]` form), each
compared with numpy in float64 on fresh inputs, into poisoned outputs."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import compile_cpu, poison, refusal

M = 32
REFS = {
    "add2": lambda a, b, c: a + b,
    "sub2": lambda a, b, c: a - b,
    "mul2": lambda a, b, c: a * b,
    "fma2": lambda a, b, c: a * b + c,
    "max2": lambda a, b, c: np.maximum(a, b),
    "min2": lambda a, b, c: np.minimum(a, b),
    "abs2": lambda a, b, c: np.abs(a),
}
ARITY = {"fma2": 3, "abs2": 1}


def x2_kernel(name, dtype):
    op = getattr(T, name)
    arity = ARITY.get(name, 2)

    @T.prim_func
    def main(A: T.Tensor((M * 2,), dtype), B: T.Tensor((M * 2,), dtype), C: T.Tensor((M * 2,), dtype),
             D: T.Tensor((M * 2,), dtype)):
        with T.Kernel(1, threads=M):
            t = T.get_thread_binding()
            idx = T.Ramp(t * 2, 1, 2)
            D[idx] = op(*[A[idx], B[idx], C[idx]][:arity])

    return main


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("name", sorted(REFS))
def test_x2_lanes_match_numpy(name, dtype):
    rng = np.random.default_rng()
    A, B, C = (rng.standard_normal(M * 2).astype(dtype) for _ in range(3))
    D = poison((M * 2,), dtype)
    compile_cpu(x2_kernel(name, dtype))(A, B, C, D)
    ref = REFS[name](*(x.astype(np.float64) for x in (A, B, C)))
    tol = 1e-6 if dtype == "float32" else 4e-3
    np.testing.assert_allclose(D.astype(np.float64), ref, rtol=tol, atol=tol)


def test_x2_results_nest_and_lanes_extract():
    @T.prim_func
    def main(A: T.Tensor((M * 2,), "float32"), B: T.Tensor((M * 2,), "float32"), Hi: T.Tensor((M,), "float32"),
             Lo: T.Tensor((M,), "float32")):
        with T.Kernel(1, threads=M):
            t = T.get_thread_binding()
            idx = T.Ramp(t * 2, 1, 2)
            s = T.add2(T.mul2(A[idx], B[idx]), A[idx])
            Lo[t] = T.extract_lane(s, 0)
            Hi[t] = T.extract_lane(B[idx], 1)

    rng = np.random.default_rng()
    A, B = (rng.standard_normal(M * 2).astype(np.float32) for _ in range(2))
    Hi, Lo = poison((M,), "float32"), poison((M,), "float32")
    compile_cpu(main)(A, B, Hi, Lo)
    a, b = A.astype(np.float64), B.astype(np.float64)
    np.testing.assert_allclose(Lo, (a * b + a)[0::2], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(Hi, B[1::2])


@pytest.mark.parametrize("body,message", [
    ("Out[0] = T.add2(A[0], A[1])", "two-lane values"),
    ("Out[0] = T.extract_lane(A[0:2], 2)", "out of bounds"),
    ("Out[0] = T.extract_lane(A[0], 0)", "vector expression"),
])
def test_misuse_is_an_error_at_the_line(tmp_path, body, message):
    src = f"""
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((4,), "float32"), Out: T.Tensor((1,), "float32")):
    with T.Kernel(1, threads=1):
        {body}
"""
    err = refusal(tmp_path, src, message)
    assert err.line == 7
