"""Silent wrong results found by the differential fuzzer (tools/fuzz), each as the minimal
program it found, compared with numpy. `python -m tools.fuzz --replay SEED` reprints the
original program."""
import numpy as np

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison


def test_break_in_single_iteration_loop():
    """fuzz seed 143: a `break` inside a loop of one iteration broke out of the enclosing
    loop once the simplifier replaced the one-step loop by its body, so later rows were
    never written."""

    @T.prim_func
    def main(X: T.Tensor((2, 1), "float32"), O: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=3) as bx:
            acc = T.alloc_var("float32")
            for i in T.serial(2):
                acc = 0.0
                for j in T.serial(1):
                    acc = acc + X[i, j]
                    if acc > 0.2:
                        break
                O[i] = acc

    kernel = compile_cpu(main)
    x = np.array([[1.0], [2.0]], dtype=np.float32)
    o = poison((2,))
    kernel(x, o)
    assert_close(o, f64(x[:, 0]))


def test_unit_slice_extent_written_as_an_expression():
    """fuzz seeds 1106, 1128, 1136 (44 of the first 2000 programs): a slice whose extent is
    1 only after simplification, `R[by * 1:(by + 1) * 1]` (a block size of 1), kept its
    unit dimension, so a valid copy between it and a 1-D tile was rejected as a shape
    mismatch."""
    bm, M, N = 1, 5, 7

    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), R: T.Tensor((3, M), "float32"), O: T.Tensor((M, N), "float32")):
        with T.Kernel(M // bm, threads=32) as by:
            x = T.alloc_fragment((bm, N), "float32")
            r = T.alloc_fragment((bm,), "float32")
            T.copy(X[by * bm:(by + 1) * bm, 0:N], x)
            T.reduce_sum(x, r, dim=1)
            T.copy(r, R[1, by * bm:(by + 1) * bm])
            T.copy(x, O[by * bm:by * bm + bm, 0:N])

    kernel = compile_cpu(main)
    x = np.random.default_rng(0).standard_normal((M, N)).astype(np.float32)
    r, o = poison((3, M)), poison((M, N))
    kernel(x, r, o)
    assert_close(r[1], f64(x).sum(axis=1))
    assert np.isnan(r[0]).all() and np.isnan(r[2]).all()
    assert_close(o, f64(x))


def test_bitwise_operators_on_buffer_elements():
    """fuzz seeds 10169, 10975 (intops): `x[i, j] ^ 5`, `x[i, j] >> 1`, `x[i, j] << 2`,
    `~x[i, j]` and the reflected forms (`5 ^ x[i, j]`, `1 << x[i, j]`) were rejected
    with a Python TypeError: a buffer element lacked those operators."""

    @T.prim_func
    def main(X: T.Tensor((4, 8), "int32"), O: T.Tensor((8, 4, 8), "int32")):
        with T.Kernel(1, threads=8) as bx:
            x = T.alloc_fragment((4, 8), "int32")
            T.copy(X, x)
            for i, j in T.Parallel(4, 8):
                O[0, i, j] = x[i, j] ^ 5
                O[1, i, j] = x[i, j] >> 1
                O[2, i, j] = (x[i, j] & 255) << 2
                O[3, i, j] = ~x[i, j]
                O[4, i, j] = 5 ^ x[i, j]
                O[5, i, j] = 1 << (x[i, j] & 7)
                O[6, i, j] = 6 | x[i, j]
                O[7, i, j] = (i + j) ^ x[i, j]

    kernel = compile_cpu(main)
    x = np.random.default_rng(1).integers(-40, 40, size=(4, 8)).astype(np.int32)
    o = np.zeros((8, 4, 8), np.int32)
    kernel(x, o)
    ij = np.arange(4)[:, None] + np.arange(8)[None, :]
    ref = [x ^ 5, x >> 1, (x & 255) << 2, ~x, 5 ^ x, 1 << (x & 7), 6 | x, ij ^ x]
    np.testing.assert_array_equal(o, np.stack(ref))
