"""T.meta_class and T.inline (upstream's helpers for stateful kernel-building objects, e.g.
tile schedulers): methods that store into state are inlined into the kernel, the others stay
plain Python. Checked by running the kernels against numpy."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison


@T.meta_class
class Strider:
    """A running position, advanced inside the kernel; `position` only builds an expression."""

    def __init__(self, start, step):
        self.pos = T.alloc_var("int32", start)
        self.step = step

    def advance(self, times):
        self.pos[0] = self.pos[0] + times * self.step

    def position(self):
        return self.pos[0]


class Accumulator:
    def __init__(self):
        self.acc = T.alloc_var("float32", 0.0)

    @T.inline
    def push(self, x):
        self.acc[0] += x * x


def test_meta_class_methods_that_store_are_inlined():
    assert isinstance(Strider.__dict__["advance"], T.Macro)
    assert not isinstance(Strider.__dict__["position"], T.Macro)
    assert Strider._is_meta_class


@pytest.mark.parametrize("start,step", [(0, 1), (5, 3), (-7, 2)])
def test_state_lives_in_kernel_variables(start, step):
    n = 8

    @T.prim_func
    def kernel(A: T.Tensor((n,), "float32"), Pos: T.Tensor((n,), "int32"), Sum: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1):
            s = Strider(start, step)
            acc = Accumulator()
            for i in T.serial(n):
                Pos[i] = s.position()
                s.advance(i)
                acc.push(A[i])
            Sum[0] = acc.acc[0]

    k = tilelang.compile(kernel, target="cpu")
    A = np.random.default_rng().standard_normal(n).astype(np.float32)
    Pos, Sum = poison((n,), "int32"), poison((1,), "float32")
    k(A, Pos, Sum)
    expect, p = [], start
    for i in range(n):
        expect.append(p)
        p += i * step
    np.testing.assert_array_equal(Pos, np.array(expect, np.int32))
    np.testing.assert_allclose(Sum[0], (A.astype(np.float64) ** 2).sum(), rtol=1e-5)


def test_inline_method_outside_a_kernel_says_so():
    acc = Accumulator.__new__(Accumulator)
    with pytest.raises(Exception, match="inside a kernel"):
        acc.push(1.0)
