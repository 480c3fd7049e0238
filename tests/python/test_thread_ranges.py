"""Tile work under a condition on the thread index (upstream's semantics, upstream's
mask_op tests): when the condition selects a range of threads (tx < c, tx >= c, ...), the
threads of the range do the whole T.Parallel loop or T.copy between them; any other
thread-dependent condition around such work is refused at its line (only part of the work
would run). Both targets."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison
from tilelang.errors import TileLangCompileError

M = N = 256
BM = BN = 128


def _masked(kind):
    @T.prim_func
    def masked(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, BN), T.ceildiv(M, BM), threads=256) as (bx, by):
            A_shared = T.alloc_shared((BM, BN), "float16")
            C_shared = T.alloc_shared((BM, BN), "float16")
            tx = T.get_thread_binding(0)
            if kind == "parallel":
                if tx < 128:
                    for i, k in T.Parallel(BM, BN):
                        A_shared[i, k] = A[by * BM + i, bx * BN + k]
                else:  # threads 128..255: numbered from 0 for this loop
                    for i, k in T.Parallel(BM, BN):
                        C_shared[i, k] = A[by * BM + i, bx * BN + k] * 2.0
            else:
                if tx >= 64 and tx < 96:
                    T.copy(A[by * BM, bx * BN], A_shared)
                if 200 <= tx:
                    T.fill(C_shared, 3.0)
            T.copy(A_shared, B[by * BM, bx * BN])
            T.copy(C_shared, C[by * BM, bx * BN])

    return masked


@pytest.mark.parametrize("kind", ["parallel", "copy"])
def test_the_selected_threads_do_the_whole_work(kind, rng):
    a = rng.standard_normal((M, N)).astype(np.float16)
    b, c = poison((M, N), "float16"), poison((M, N), "float16")
    compile_cpu(_masked(kind))(a, b, c)
    assert np.array_equal(b, a)
    want_c = a * np.float16(2) if kind == "parallel" else np.full((M, N), 3, np.float16)
    assert np.array_equal(c, want_c)


def test_cuda_spreads_the_loop_over_the_range():
    src = tilelang.lower(_masked("parallel"), target="cuda -arch=sm_90a").kernel_source
    # 128 x 128 elements over 128 threads, 8 at a time (16-byte groups): 16 iterations each, in
    # both branches (over all 256 threads it would be 8)
    import re

    assert len(re.findall(r"it(_\d+)? < 16;", src)) == 2 and not re.search(r"it(_\d+)? < 8;", src)
    src = tilelang.lower(_masked("copy"), target="cuda -arch=sm_90a").kernel_source
    # (a range starting on a multiple of its size: the number is tx % size, which the
    # simplifier knows is non-negative)
    assert "tx_in_range = (tx & 31)" in src, "threads 64..95 are numbered 0..31 for the copy"
    assert "tx_in_range_1 = (tx - 200)" in src, "threads 200..255 for the fill"


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a"])
def test_other_thread_conditions_around_tile_work_are_refused(target):
    @T.prim_func
    def odd_threads(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((64,), "float32")
            tx = T.get_thread_binding(0)
            if tx % 2 == 0:
                for i in T.Parallel(64):  # ERR-HERE
                    S[i] = A[i]
            if tx < 16 or tx > 40:
                T.fill(S, 1.0)
            T.copy(S, B)

    with pytest.raises(TileLangCompileError, match="not a range of threads|does not select a range") as info:
        tilelang.compile(odd_threads, target=target)
    assert "for i in T.Parallel(64)" in str(info.value)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a"])
def test_fragment_work_under_a_thread_condition_is_refused(target):
    """A register fragment is spread over all the block's threads, so a tile op on one (or a
    GEMM) under a condition on the thread index, even a range, would run only part of it."""

    @T.prim_func
    def half_gemm(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C_f)
            tx = T.get_thread_binding(0)
            if tx < 64:
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C)

    with pytest.raises(TileLangCompileError, match="thread"):
        tilelang.compile(half_gemm, target=target)


def _fragment_in_branch():
    @T.prim_func
    def branch_fragment(X: T.Tensor((96,), "float32"), Y: T.Tensor((96,), "float32"), Z: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=96) as bx:
            tx = T.get_thread_binding()
            if tx < 32:
                Z[tx] = 1.0
            else:  # threads 32..95 between them: every element of v and Y
                v = T.alloc_fragment(96, "float32")
                for j in T.Parallel(96):
                    v[j] = X[j] * 2.0
                for j in T.Parallel(96):
                    Y[j] = v[j] + 1.0

    return branch_fragment


def test_a_fragment_used_by_a_range_of_threads_holds_every_element(rng):
    """A register layout spreads a fragment over all the block's threads; under `else:` only
    threads 32..95 run, so elements held by threads 0..31 were never computed (Y[0..31] kept
    whatever was there). Such a fragment lives in shared memory, the range's threads sharing
    the work (upstream lays it out over the range's threads)."""
    x = rng.standard_normal(96).astype(np.float32)
    y, z = poison((96,), "float32"), poison((32,), "float32")
    tilelang.compile(_fragment_in_branch())(x, y, z)
    np.testing.assert_allclose(y, x.astype(np.float64) * 2 + 1, rtol=1e-6)
    assert (z == 1).all()


def test_barriers_in_a_branch_on_a_copy_of_the_thread_index_are_named():
    """`tx = T.get_thread_binding()` then `if tx < 32:`: a barrier the else branch needs (its
    threads exchange v through shared memory) is a named barrier over its 64 threads, not a
    __syncthreads that threads 0..31 never reach."""
    k = tilelang.compile(_fragment_in_branch(), target="cuda -arch=sm_90a")
    assert any("fragment v: kept in shared memory" in r for r in k.get_remarks())
    body = k.get_kernel_source()
    body = body[body.index("} else {"):]
    assert "tl::named_barrier_sync(" in body and ", 64);" in body and "__syncthreads()" not in body


RANGE_TILES = {"tl.range_register_tiles": True}


def _apply_mix(first_branch):
    """Upstream's mHC pre "apply mix" shape: o[j] = sum_s w[s] x[s, j] on the threads of one
    branch on the thread index (96 threads: 32..95 in `else:` of `tx < 32`, or 0..63 in
    `tx < 64`), with x and o fragments."""

    @T.macro
    def mix(X, w_s, O):
        xs = T.alloc_shared((4, 256), "float32")
        xl = T.alloc_fragment((4, 256), "float32")
        ol = T.alloc_fragment(256, "float32")
        T.copy(X, xs)
        T.copy(xs, xl)
        T.clear(ol)
        for s in T.serial(4):
            for j in T.Parallel(256):
                ol[j] += w_s[s] * xl[s, j]
        T.copy(ol, O)

    @T.prim_func
    def apply_mix_else(X: T.Tensor((4, 256), "float32"), W: T.Tensor((4,), "float32"),
                       O: T.Tensor((256,), "float32"), Z: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=96) as bx:
            tx = T.get_thread_binding()
            w_s = T.alloc_shared((4,), "float32")
            T.copy(W, w_s)
            if tx < 32:
                Z[tx] = 1.0
            else:
                mix(X, w_s, O)

    @T.prim_func
    def apply_mix_then(X: T.Tensor((4, 256), "float32"), W: T.Tensor((4,), "float32"),
                       O: T.Tensor((256,), "float32"), Z: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=96) as bx:
            tx = T.get_thread_binding()
            w_s = T.alloc_shared((4,), "float32")
            T.copy(W, w_s)
            if tx < 64:
                mix(X, w_s, O)
            else:
                Z[tx - 64] = 1.0

    return apply_mix_then if first_branch else apply_mix_else


# The CPU target does not run tile ops on fragments under a thread condition in
# thread-level code (it emulates a block's threads in lockstep): this one runs on CUDA
# (the GPU suite, TILELANG_TEST_CUDA=1).
@pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") != "1", reason="runs on the CUDA target only")
@pytest.mark.parametrize("first_branch", [False, True])
def test_fragments_laid_out_over_a_range_of_warps(rng, first_branch):
    x = rng.standard_normal((4, 256)).astype(np.float32)
    w = rng.standard_normal(4).astype(np.float32)
    o, z = poison((256,), "float32"), poison((32,), "float32")
    tilelang.compile(_apply_mix(first_branch), pass_configs=RANGE_TILES)(x, w, o, z)
    np.testing.assert_allclose(o, w.astype(np.float64) @ x.astype(np.float64), rtol=1e-5, atol=1e-5)
    assert (z == 1).all()


def _layout_remarks(remarks):
    return [r for r in remarks if not r.startswith("compiled by")]


def test_range_layouts_name_their_threads():
    remarks = "\n".join(tilelang.compile(_apply_mix(False), target="cuda -arch=sm_90a",
                                         pass_configs=RANGE_TILES).get_remarks())
    assert "fragment xl: registers, layout threads 32..95 strip(4x256, 64 threads, 64 per row, vec 4)" in remarks
    assert "fragment ol: registers, layout threads 32..95 vector(256, 64 threads, vec 4)" in remarks
    remarks = "\n".join(tilelang.compile(_apply_mix(True), target="cuda -arch=sm_90a",
                                         pass_configs=RANGE_TILES).get_remarks())
    assert "fragment xl: registers, layout threads 0..63 strip(4x256, 64 threads, 64 per row, vec 4)" in remarks
    # the default since it was checked on the H200 (the compiler's own line, with registers
    # read from the module, differs between a first build and a cache hit)
    default = tilelang.compile(_apply_mix(True), target="cuda -arch=sm_90a").get_remarks()
    assert _layout_remarks(remarks.split("\n")) == _layout_remarks(default)
    remarks = "\n".join(tilelang.compile(_apply_mix(False), target="cuda -arch=sm_90a",
                                         pass_configs={"tl.range_register_tiles": False}).get_remarks())
    assert "fragment xl: kept in shared memory" in remarks and "fragment ol: kept in shared memory" in remarks


def test_a_fragment_used_inside_and_outside_the_branch_stays_in_shared_memory(rng):
    @T.prim_func
    def mixed(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=96) as bx:
            tx = T.get_thread_binding()
            v = T.alloc_fragment(128, "float32")
            T.copy(X, v)  # all 96 threads
            if tx >= 32:
                for j in T.Parallel(128):
                    Y[j] = v[j] * 3.0

    k = tilelang.compile(mixed, target="cuda -arch=sm_90a", pass_configs=RANGE_TILES)
    assert any("fragment v: kept in shared memory" in r for r in k.get_remarks())
    x = rng.standard_normal(128).astype(np.float32)
    y = poison((128,), "float32")
    tilelang.compile(mixed, pass_configs=RANGE_TILES)(x, y)
    np.testing.assert_allclose(y, x.astype(np.float64) * 3, rtol=1e-6)
