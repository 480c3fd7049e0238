"""`X[i, a:b] = Y[j, c:d]` and `X[i, a:b] = v` inside a kernel: as upstream, a vector store by
each thread that runs it (python/tilelang/frontend/parser.py, store_slice), here one
store per element; values checked against numpy, outputs poisoned first."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu


def slices():
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32"), s: T.float32):
        with T.Kernel(1, threads=32):
            B[0, 4:8] = A[0, 0:4]      # another buffer's slice
            B[1, 0:3] = s * 2.0        # a scalar, every element
            B[2, :] = A[2, :]          # the whole last dimension
            A[3, 1:5] = A[3, 0:4]      # overlapping ranges of one buffer: read whole, then written
            B[3, :] = A[3, :]
            for i in T.serial(2):
                B[4 + i, i * 4:i * 4 + 4] = A[4 + i, 8:12]  # run-time starts, a static count

    return main


def test_slice_assignments_match_numpy():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = np.full((8, 16), np.nan, np.float32)
    want_a, want_b = a.copy(), b.copy()
    want_b[0, 4:8] = a[0, 0:4]
    want_b[1, 0:3] = 3.0
    want_b[2, :] = a[2, :]
    want_a[3, 1:5] = a[3, 0:4].copy()
    want_b[3, :] = want_a[3, :]
    for i in range(2):
        want_b[4 + i, i * 4:i * 4 + 4] = a[4 + i, 8:12]
    compile_cpu(slices())(a, b, 1.5)
    np.testing.assert_array_equal(a, want_a)
    np.testing.assert_array_equal(b, want_b)


def test_a_named_slice_or_a_mismatched_one_is_refused_at_the_line():
    # (a @T.prim_func is parsed where it is defined: the errors come from the decorator)
    with pytest.raises(tilelang.TileLangCompileError, match="write the source slice itself") as e:
        @T.prim_func
        def named(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                b = A[0:4]
                B[4:8] = b
    assert "B[4:8] = b" in str(e.value)

    with pytest.raises(tilelang.TileLangCompileError, match="slice has 3 elements, it needs 4"):
        @T.prim_func
        def mismatched(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32):
                B[4:8] = A[0:3]

    with pytest.raises(tilelang.TileLangCompileError, match="use T.fill, T.copy or a T.Parallel loop"):
        @T.prim_func
        def two_dims(A: T.Tensor((4, 4), "float32"), B: T.Tensor((4, 4), "float32")):
            with T.Kernel(1, threads=32):
                B[0:2, 0:2] = A[0:2, 0:2]
