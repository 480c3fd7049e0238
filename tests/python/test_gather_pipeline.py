"""Element copies into shared tiles in a T.Pipelined loop (`S[i, d] = X[Idx[k * BI + i], d]`,
the sparse attention kernels' gathered rows) prefetched as 16-byte cp.async groups
(cuda-pipeline, gather_copy.h; "tl.enable_gather_pipeline", on by default), or, outside a
pipeline (num_stages=0), copied as such groups in place: rows an index names
outside the tensor are zero-filled, as the guarded element copy gives. Results against numpy
on whichever target the suite runs (the CPU target runs the loop in order; the CUDA run of
the suite exercises the prefetch); the CUDA choices from the generated code (compile-only)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, poison

ON = {"tl.enable_gather_pipeline": True}


def gather_sum(rows=300, D=128, topk=256, BI=32, stages=2, dtype="float16", tail=False):
    """Out[i, d] = sum over k of X[Idx[k * BI + i], d] (zero for an index outside X); with
    `tail`, a second tile gathers the columns from D on of the same rows (MLA's K tail)."""

    @T.prim_func
    def main(X: T.Tensor((rows, D + (64 if tail else 0)), dtype), Idx: T.Tensor((topk,), "int32"),
             Out: T.Tensor((BI, D), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((BI, D), dtype)
            acc = T.alloc_fragment((BI, D), "float32")
            if tail:
                St = T.alloc_shared((BI, 64), dtype)
            T.clear(acc)
            for k in T.Pipelined(topk // BI, num_stages=stages):
                for i, d in T.Parallel(BI, D):
                    S[i, d] = X[Idx[k * BI + i], d]
                if tail:
                    for i, d in T.Parallel(BI, 64):
                        St[i, d] = X[Idx[k * BI + i], D + d]
                for i, d in T.Parallel(BI, D):
                    acc[i, d] += S[i, d]
                if tail:
                    for i, d in T.Parallel(BI, 64):
                        acc[i, d] += St[i, d]
            T.copy(acc, Out)

    return main


def reference(x, idx, BI, D, tail):
    valid = (idx >= 0) & (idx < x.shape[0])
    rows = np.where(valid[:, None], x[np.clip(idx, 0, x.shape[0] - 1)].astype(np.float64), 0.0)
    out = rows[:, :D].reshape(-1, BI, D).sum(axis=0)
    if tail:
        out[:, :64] += rows[:, D:D + 64].reshape(-1, BI, 64).sum(axis=0)
    return out


@pytest.mark.parametrize("stages, tail", [(2, False), (3, False), (2, True), (0, True)])
def test_gathered_rows_match_numpy(rng, stages, tail):
    rows, D, topk, BI = 300, 128, 256, 32
    x = rng.standard_normal((rows, D + (64 if tail else 0))).astype(np.float16)
    idx = rng.integers(0, rows, topk).astype(np.int32)
    idx[::7] = rows  # past the end (the sparse kernels' padding): zero rows
    out = poison((BI, D))
    compile_cpu(gather_sum(rows, D, topk, BI, stages, tail=tail), pass_configs=ON)(x, idx, out)
    assert_close(out, reference(x, idx, BI, D, tail))


def test_the_copies_become_cp_async_groups_unless_turned_off():
    k = tilelang.lower(gather_sum(tail=True), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.remarks)
    assert "2-stage cp.async pipeline over 0 copies and 2 element copies" in remarks, remarks
    # two stages in flight: both loaded before the loop, each refilled at the end of the step that
    # read it (two tiles: 2 x 2 + 2 calls), waited for one step ahead
    assert "each stage refilled at the end of the step that read it (2 loads in flight)" in remarks, remarks
    assert k.kernel_source.count("tl::cp_async_zfill_16(") == 6, k.kernel_source
    assert "tl::cp_async_wait<1>();" in k.kernel_source
    # without early refills, one stage ahead: the next loads issued after the wait
    one = tilelang.lower(gather_sum(tail=True), target="cuda -arch=sm_90a",
                         pass_configs={"tl.pipeline_early_refill": False})
    assert one.kernel_source.count("tl::cp_async_zfill_16(") == 4 and "tl::cp_async_wait<0>();" in one.kernel_source
    off = tilelang.lower(gather_sum(), target="cuda -arch=sm_90a", pass_configs={"tl.enable_gather_pipeline": False})
    remarks = "\n".join(off.remarks)
    assert "could be prefetched, but tl.enable_gather_pipeline is off" in remarks and "runs in order" in remarks


def test_copies_the_loop_depends_on_are_not_prefetched():
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float16"), Out: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((16, 64), "float16")
            R = T.alloc_shared((16, 64), "float16")
            for k in T.Pipelined(4, num_stages=2):
                for i, d in T.Parallel(16, 64):
                    R[i, d] = S[i, d]  # reads the tile before the copy into it
                for i, d in T.Parallel(16, 64):
                    S[i, d] = X[k * 16 + i, d]
            T.copy(R, Out)

    # (the element copy itself: raise-parallel-copies would make the nest a tile copy, which
    # the pipeline then leaves in place for the same reason)
    k = tilelang.lower(main, target="cuda -arch=sm_90a", pass_configs={**ON, "tl.raise_parallel_copies": False})
    remarks = "\n".join(k.remarks)
    assert "the element copy into S at line" in remarks and "read or copied into earlier" in remarks, remarks
    # not prefetched: copied in place in each step (16-byte groups, waited for at once), no prologue
    src = k.kernel_source
    loop = src.index("for (int32_t k = 0;")
    assert "cp_async" not in src[:loop] and src.count("tl::cp_async_zfill_16(") == 1, src
    assert src.index("tl::cp_async_wait<0>();") > src.index("tl::cp_async_zfill_16(")


def test_a_gather_outside_a_pipeline_moves_16_bytes_at_a_time():
    """num_stages=0 (upstream's sparse MLA backward): no prefetch, but each 16-byte group of a
    gathered row is one cp.async, waited for before the tile is read (it was 2-byte stores)."""
    k = tilelang.lower(gather_sum(tail=True, stages=0), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.remarks)
    assert "element copy into S at line" in remarks and "16-byte cp.async groups of gathered rows, waited for in place" \
        in remarks, remarks
    src = k.kernel_source
    assert src.count("tl::cp_async_zfill_16(") == 2 and src.count("tl::cp_async_wait<0>();") >= 2, src
    body = src[src.index("tl::cp_async_zfill_16("):]
    assert body.index("tl::cp_async_wait<0>();") < body.index("__syncthreads();"), "landed, then the barrier"


def test_no_cp_async_before_sm_80():
    """cp.async is sm_80's: for sm_75 the gather stays element stores."""
    src = tilelang.lower(gather_sum(stages=0), target="cuda -arch=sm_75").kernel_source
    assert "cp_async" not in src, src
