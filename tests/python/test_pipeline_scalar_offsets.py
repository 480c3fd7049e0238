"""A pipelined copy whose window starts at a thread's own scalar that the loop never writes
(`start = T.alloc_var(...)` computed before the loop, as upstream's fp8 lighting indexer
finds its key range) is prefetched like any other, by a cp.async pipeline: every thread has
computed the scalar. Not by a producer warpgroup, whose threads do not run the statements
before the loop (their copy of the scalar would keep its initial value: the loop's bounds
too). Results against numpy on whichever target the suite runs; the CUDA choices from the
generated code (compile-only)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, poison


def window_sums(rows=1024, D=64, BN=64, Q=8, stages=2, write_in_loop=False):
    """Out[q, d] = sum of X[r, d] over the rows r in [Lo[q], Hi[q]) rounded out to whole
    BN-row tiles from the smallest Lo (rows past the tensor read as zero)."""

    @T.prim_func
    def main(X: T.Tensor((rows, D), "float16"), Lo: T.Tensor((Q,), "int32"), Hi: T.Tensor((Q,), "int32"),
             Out: T.Tensor((1, D), "float32")):
        with T.Kernel(1, threads=128):
            tile = T.alloc_shared((BN, D), "float16")
            acc = T.alloc_fragment((BN, D), "float32")
            total = T.alloc_fragment((D,), "float32")
            start = T.alloc_var("int32")
            stop = T.alloc_var("int32")
            start = 2147483647
            stop = -2147483648
            for q in T.serial(Q):
                start = T.min(start, Lo[q])
                stop = T.max(stop, Hi[q])
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(stop - start, BN), num_stages=stages):
                T.copy(X[start + k * BN, 0], tile)
                for i, d in T.Parallel(BN, D):
                    acc[i, d] += tile[i, d]
                if write_in_loop:
                    start = start + 0
            T.reduce_sum(acc, total, dim=0)
            for d in T.Parallel(D):
                Out[0, d] = total[d]

    return main


def reference(x, lo, hi, BN):
    start, stop = lo.min(), hi.max()
    n = -(-(stop - start) // BN) * BN
    rows = x[start:start + n].astype(np.float64)
    return rows.sum(axis=0, keepdims=True)


@pytest.mark.parametrize("stages", [2, 3])
def test_windows_from_scalars_match_numpy(rng, stages):
    x = rng.standard_normal((1024, 64)).astype(np.float16)
    lo = rng.integers(100, 300, 8).astype(np.int32)
    hi = lo + rng.integers(200, 700, 8).astype(np.int32)  # up to 1000: the last tile passes row 1023
    out = poison((1, 64))
    compile_cpu(window_sums(stages=stages))(x, lo, hi, out)
    assert_close(out, reference(x, lo, hi, 64), rtol=1e-3)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_scalar_offsets_are_prefetched_by_every_thread(arch):
    remarks = "\n".join(tilelang.lower(window_sums(), target=f"cuda -arch={arch}").remarks)
    assert "2-stage cp.async pipeline over 1 copies" in remarks, remarks
    if arch == "sm_90a":
        assert ("not warp-specialized (the loop's bounds or copies read start, a per-thread variable that only the "
                "consumer threads would compute)") in remarks, remarks


def test_a_scalar_the_loop_writes_is_not_read_ahead():
    remarks = "\n".join(tilelang.lower(window_sums(write_in_loop=True), target="cuda -arch=sm_90a").remarks)
    assert "runs in order (its body has no copy from global to shared memory that can be prefetched)" in remarks, \
        remarks


def test_tensors_with_computed_dimensions_are_not_tma_boxes():
    """A tensor dimension that is an expression of sizes (`n * 32`) cannot be encoded on the
    host: the copy takes another path and says why (it was an internal error)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((n * 32, 64), "float16"), Out: T.Tensor((n * 32, 64), "float16")):
        with T.Kernel(n, threads=128) as bx:
            tile = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((32, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(X[bx * 32, 0], tile)
                for i, d in T.Parallel(32, 64):
                    acc[i, d] += tile[i, d]
            T.copy(acc, Out[bx * 32, 0])

    remarks = "\n".join(tilelang.lower(main, target="cuda -arch=sm_90a").remarks)
    assert "cannot use TMA: the tensor's dimension n * 32 is an expression of sizes" in remarks, remarks
    assert "2-stage cp.async pipeline over 1 copies" in remarks, remarks
