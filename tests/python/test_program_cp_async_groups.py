"""A program's own cp.async groups: T.ptx_cp_async copies committed with T.ptx_commit_group and
waited for with T.ptx_wait_group. The commit and the wait are real (cp.async.commit_group,
wait_group n), and the block's other threads read the copied tiles only after a barrier that
the compiler puts between the wait and their reads (and before a copy that overwrites what
other threads still read). Results against numpy on the CPU target and, under
TILELANG_TEST_CUDA=1, on the GPU; the placement read from the CUDA source."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T

from conftest import compile_cpu, poison, rand


def gather_rows(rows=32, cols=128, dtype="float16"):
    """Out[i, :] = X[Idx[i], :]: each thread copies 16 bytes of a row; the tile is then
    written out by T.copy, whose threads read rows other threads copied."""

    @T.prim_func
    def main(X: T.Tensor((256, cols), dtype), Idx: T.Tensor((rows,), "int32"), Out: T.Tensor((rows, cols), dtype)):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((rows, cols), dtype)
            tx = T.get_thread_binding()
            per_row = cols // 8
            for r in T.serial(rows * per_row // 128):
                row = r * (128 // per_row) + tx // per_row
                col = tx % per_row * 8
                T.ptx_cp_async(T.access_ptr(S[row, col], "w"), T.access_ptr(X[Idx[row], col], "r"), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.copy(S, Out)

    return main


def two_groups_in_a_loop(steps=4, cols=64):
    """Each step copies a 32-row block of X into one of two tiles (one group a step); the
    block of the step before is read (reversed rows) while the newer group is in flight
    (T.ptx_wait_group(1)). The tile refilled each step was read two steps before by other
    threads: a barrier must come before the refill."""

    @T.prim_func
    def main(X: T.Tensor((steps * 32, cols), "float32"), Out: T.Tensor((steps * 32, cols), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((2, 32, cols), "float32")
            tx = T.get_thread_binding()
            per_row = cols // 4

            for k in T.serial(steps + 1):
                if k < steps:
                    for r in T.serial(32 * per_row // 128):
                        row = r * (128 // per_row) + tx // per_row
                        col = tx % per_row * 4
                        T.ptx_cp_async(T.access_ptr(S[k % 2, row, col], "w"),
                                       T.access_ptr(X[k * 32 + row, col], "r"), 4)
                T.ptx_commit_group()
                if k > 0:
                    T.ptx_wait_group(1)
                    for i, j in T.Parallel(32, cols):
                        Out[(k - 1) * 32 + i, j] = S[(k - 1) % 2, 31 - i, j] * 2.0

    return main


def cuda_source(func, arch="sm_80"):
    return tilelang.lower(func, target=f"cuda -arch={arch}").kernel_source


def test_gathered_rows_match_numpy(rng):
    x = rand(rng, (256, 128), "float16")
    idx = rng.integers(0, 256, 32).astype(np.int32)
    out = poison((32, 128), "float16")
    compile_cpu(gather_rows())(x, idx, out)
    np.testing.assert_array_equal(out, x[idx])


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_the_wait_is_real_and_a_barrier_follows_it(arch):
    src = cuda_source(gather_rows(), arch)
    body = src[src.index("tl::ptx_cp_async("):]
    commit, wait = body.find("tl::cp_async_commit();"), body.find("tl::cp_async_wait<0>();")
    assert 0 < commit < wait, src
    # the tile's readers (a vector copy on sm_80, a TMA store on sm_90a) after a barrier
    # that comes after the wait
    barrier = body.find("__syncthreads();", wait)
    reader = max(body.find("tl::copy<", wait), body.find("tl::tma_store_2d(", wait))
    assert wait < barrier < reader, src


def test_steps_in_flight_match_numpy(rng):
    x = rand(rng, (128, 64), "float32")
    out = poison((128, 64), "float32")
    compile_cpu(two_groups_in_a_loop())(x, out)
    want = (x.reshape(4, 32, 64)[:, ::-1, :] * 2.0).reshape(128, 64)
    np.testing.assert_array_equal(out, want)


def test_steps_in_flight_are_ordered_by_barriers():
    src = cuda_source(two_groups_in_a_loop())
    loop = src[src.index("for (int32_t k = 0;"):]
    # wait_group 1 stays as written; a barrier between it and the reads; and one in the
    # loop before the copies that refill a tile other threads read two steps before
    wait = loop.index("tl::cp_async_wait<1>();")
    read = loop.index("Out[", wait)
    assert "__syncthreads();" in loop[wait:read], loop
    copy = loop.index("tl::ptx_cp_async(")
    assert "__syncthreads();" in loop[:copy], loop
    assert len(re.findall(r"__syncthreads\(\);", loop)) >= 2, loop


def test_mbarrier_ordered_copies_get_no_barrier_of_the_compiler():
    """Without a T.ptx_wait_group the program orders its copies with an mbarrier
    (T.cp_async_barrier_noinc): the compiler adds no __syncthreads for them."""

    @T.prim_func
    def main(X: T.Tensor((128, 64), "float16"), Out: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            for r in T.serial(8):
                T.ptx_cp_async(T.access_ptr(S[r * 16 + tx // 8, tx % 8 * 8], "w"),
                               T.access_ptr(X[r * 16 + tx // 8, tx % 8 * 8], "r"), 8)
            T.cp_async_barrier_noinc(bar[0])
            T.mbarrier_wait_parity(bar[0], 0)
            for r in T.serial(8):
                for v in T.serial(8):
                    Out[r * 16 + tx // 8, tx % 8 * 8 + v] = S[r * 16 + tx // 8, tx % 8 * 8 + v]

    src = cuda_source(main, "sm_90a")
    copies = src[src.index("tl::ptx_cp_async("):]
    assert "__syncthreads();" not in copies[:copies.index("Out[")], src


def test_a_group_of_the_program_inside_a_staged_pipeline_is_refused():
    @T.prim_func
    def main(A: T.Tensor((256, 64), "float16"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[k * 64, 0], s)
                T.ptx_commit_group()
                for i, j in T.Parallel(64, 64):
                    acc[i, j] += s[i, j]
            T.copy(acc, B)

    with pytest.raises(Exception, match=r"T.ptx_commit_group inside a T.Pipelined loop") as info:
        cuda_source(main)
    assert "test_program_cp_async_groups.py" in str(info.value)
