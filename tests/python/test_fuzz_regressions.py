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
