"""TIR's vector spellings that upstream's programs use as indices and values: T.Ramp (a
contiguous slice) and T.Broadcast (a scalar filling the region it is assigned to)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison
from tilelang.errors import TileLangCompileError


@pytest.mark.parametrize("dtype,value", [("int8", -37), ("uint8", 213), ("float32", 2.5)])
def test_broadcast_fills_the_region_it_is_assigned_to(dtype, value):
    lanes = 32

    @T.prim_func
    def main(Src: T.Tensor((2,), dtype), Out: T.Tensor((2, lanes), dtype)):
        with T.Kernel(1, threads=1):
            packed = T.alloc_local((lanes,), dtype)
            packed[0:lanes] = T.Broadcast(Src[1], lanes)
            for i in T.serial(lanes):
                Out[0, i] = packed[i]
            Out[1, T.Ramp(0, 1, lanes)] = T.Broadcast(T.cast(value, dtype), lanes)

    src = np.array([0, value], dtype=dtype)
    out = poison((2, lanes), dtype)
    compile_cpu(main)(src, out)
    np.testing.assert_array_equal(out, np.full((2, lanes), value, dtype=dtype))


def test_broadcast_needs_a_lane_count():
    with pytest.raises(TileLangCompileError, match="T.Broadcast: lanes must be a positive int, got 0"):
        @T.prim_func
        def main(Out: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                Out[0:4] = T.Broadcast(T.float32(1), 0)


def test_ramp_lanes_count_from_the_end_when_negative_at_run_time():
    # t - 2 + k is negative for some t only: each such lane reads / writes from the end
    n = 64

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((4, 4), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(1, threads=1):
            for t in T.serial(4):
                B[t, T.Ramp(0, 1, 4)] = A[T.Ramp(t - 2, 1, 4)]
            for t in T.serial(4):
                C[T.Ramp(t - 2, 1, 4)] = B[t, T.Ramp(0, 1, 4)]

    rng = np.random.default_rng(7)
    a = rng.standard_normal(n).astype(np.float32)
    b, c = poison((4, 4)), np.full(n, -1, np.float32)
    compile_cpu(main)(a, b, c)
    want_b = np.array([[a[(t - 2 + k) % n] for k in range(4)] for t in range(4)], np.float32)
    np.testing.assert_array_equal(b, want_b)
    want_c = np.full(n, -1, np.float32)
    for t in range(4):
        for k in range(4):
            want_c[(t - 2 + k) % n] = want_b[t, k]
    np.testing.assert_array_equal(c, want_c)
