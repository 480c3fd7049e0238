"""T.sblock (upstream's lexical block) with T.reads / T.writes, and T.annotate_safe_value
scoped to it: a safe value set inside a block ends with the block, the outer one (or the
default zero) applies again after it (upstream's copy test with nested blocks)."""
import numpy as np

import tilelang.language as T
from conftest import compile_cpu, poison


def nested_blocks():
    M = N = 60
    BM = BN = 64

    @T.prim_func
    def main(A: T.Tensor((M, N), "int32"), Inner: T.Tensor((BM, BN), "int32"), Outer: T.Tensor((BM, BN), "int32"),
             After: T.Tensor((BM, BN), "int32")):
        with T.Kernel(1, threads=128):
            inner = T.alloc_shared((BM, BN), "int32")
            outer = T.alloc_shared((BM, BN), "int32")
            after = T.alloc_shared((BM, BN), "int32")
            with T.sblock("outer"):
                T.reads()
                T.writes()
                T.annotate_safe_value({A: -1})
                with T.sblock("inner"):
                    T.reads()
                    T.writes()
                    T.annotate_safe_value({A: -99})
                    T.copy(A[0:BM, 0:BN], inner)
                T.copy(A[0:BM, 0:BN], outer)
            T.copy(A[0:BM, 0:BN], after)
            T.copy(inner, Inner)
            T.copy(outer, Outer)
            T.copy(after, After)

    return main


def test_safe_values_end_with_their_block():
    a = np.arange(60 * 60, dtype=np.int32).reshape(60, 60)
    outs = [poison((64, 64), "int32") for _ in range(3)]
    compile_cpu(nested_blocks())(a, *outs)
    for got, pad in zip(outs, (-99, -1, 0)):
        np.testing.assert_array_equal(got[:60, :60], a)
        assert (got[60:, :] == pad).all() and (got[:, 60:] == pad).all(), (pad, got[60:, :4])
