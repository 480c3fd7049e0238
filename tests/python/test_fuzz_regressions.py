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
