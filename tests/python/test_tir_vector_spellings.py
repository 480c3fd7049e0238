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
