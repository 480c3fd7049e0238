"""T.assume: facts the program guarantees drop the range guards of global accesses they
imply (pass guard-global-access), to the end of the block that states them; a loop's own
range counts as such a fact (`for j in T.serial(N)` needs no `j < N` guard). Results are
checked on the CPU target; the guards' absence in the CUDA code is checked by compiling for
sm_90a (no GPU needed)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison, rand

SM90 = "cuda -arch=sm_90a"


def _body(kernel):
    src = kernel.get_kernel_source()
    return src[src.find("__global__"):]


def _zero_range(assume):
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), l: T.int32, r: T.int32):
        with T.Kernel(1, threads=32):
            for i in T.serial(r - l + 1):
                if assume:
                    T.assume(l + i >= 0 and l + i < N)
                A[l + i] = 0

    return main


def test_assumed_range_drops_the_guard_and_keeps_the_result(rng):
    a = rand(rng, (40,))
    want = a.copy()
    want[7:20] = 0
    got = a.copy()
    compile_cpu(_zero_range(True))(got, 7, 19)
    np.testing.assert_array_equal(got, want)
    assert "if (" not in _body(tilelang.compile(_zero_range(True), target=SM90))


def test_without_the_assumption_the_guard_stays(rng):
    # Out-of-range writes are skipped: l = 30, r = 45 on 40 elements writes 30..39 only.
    a = rand(rng, (40,))
    want = a.copy()
    want[30:] = 0
    got = a.copy()
    compile_cpu(_zero_range(False))(got, 30, 45)
    np.testing.assert_array_equal(got, want)
    assert "if (" in _body(tilelang.compile(_zero_range(False), target=SM90))


def _gather(assume):
    M = T.dynamic("M")
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=32):
            tid = T.get_thread_binding()
            for j in T.serial(N):
                i_src = T.min(j + 233, tid + 2)  # tid + 2: j + 233 is always larger
                if assume:
                    T.assume(i_src >= 0 and i_src < M)
                B[tid, j] = A[i_src, j]

    return main


def test_facts_about_a_let_cover_its_value_and_the_thread_index(rng):
    # i_src < M is tid + 2 < M, which implies tid < M (B's row) too.
    src = _body(tilelang.compile(_gather(True), target=SM90))
    assert "if (" not in src and "?" not in src, src
    a = rand(rng, (34, 5))
    b = poison((34, 5))
    compile_cpu(_gather(True))(a, b)
    np.testing.assert_array_equal(b[:32], a[2:34])


def test_a_symbolic_loop_range_is_a_fact_but_other_guards_stay():
    src = _body(tilelang.compile(_gather(False), target=SM90))
    assert src.count("j < N") == 1, src  # the loop's own test only
    assert "(tid < M)" in src or "(tx < M)" in src, src


def _scoped():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), l: T.int32):
        with T.Kernel(1, threads=1):
            if l >= 0:
                T.assume(l < N)
                A[l] = 1
            A[l] = A[l] + 1

    return main


def test_an_assumption_holds_to_the_end_of_its_block_only(rng):
    src = _body(tilelang.compile(_scoped(), target=SM90))
    # The store inside the branch is unguarded; the two accesses after it are guarded.
    branch = src[src.find("if ((l >= 0)) {"):src.find("] = 1.0f;")]
    assert branch and branch.count("if (") == 1, src
    assert "(l < N)" in src[src.find("] = 1.0f;"):], src
    a = rand(rng, (6,))
    want = a.copy()
    want[3] = 2
    got = a.copy()
    compile_cpu(_scoped())(got, 3)
    np.testing.assert_array_equal(got, want)


def _runtime_checked():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), T.float32), scale: T.int32):
        with T.Kernel(1, threads=32):
            T.assume(N % 4 == 0 and scale > 0)
            for i in T.serial(N):
                T.assume(i < N)  # names a loop index: left to the kernel, never checked on the host
                A[i] = A[i] * scale

    return main


def test_assumptions_over_parameters_are_checked_before_each_launch(rng):
    kernel = compile_cpu(_runtime_checked())
    a = rand(rng, (8,))
    got = a.copy()
    kernel(got, 3)
    np.testing.assert_array_equal(got, a * 3)
    with pytest.raises(RuntimeError, match=r"Assume: N % 4 == 0 and scale > 0 does not hold .*N = 6"):
        kernel(rand(rng, (6,)), 3)
    with pytest.raises(RuntimeError, match=r"Assume: N % 4 == 0 and scale > 0 .*scale = 0"):
        kernel(rand(rng, (8,)), 0)


def _rows_by_block(rows_expr):
    B = T.dynamic("B")
    S = T.dynamic("S")

    @T.prim_func
    def main(X: T.Tensor((B, S, 64), T.float32), Y: T.Tensor((B, S, 64), T.float32)):
        with T.Kernel(S, B, threads=64) as (bx, by):
            b_i = by
            for j in T.Parallel(64):
                Y[b_i, rows_expr(bx), j] = X[b_i, rows_expr(bx), j] * 2.0

    return main


def test_a_symbolic_grid_bounds_its_block_index(rng):
    """T.Kernel(S, B): bx < S and by < B hold, so X[by, bx, j] needs no guard (sparse MLA's
    gathers read Indices[by, bx, ...] once per copy instead of behind a branch)."""
    x = rand(rng, (3, 5, 64))
    y = poison((3, 5, 64))
    compile_cpu(_rows_by_block(lambda bx: bx))(x, y)
    np.testing.assert_array_equal(y, x * 2)
    assert "if (" not in _body(tilelang.compile(_rows_by_block(lambda bx: bx), target=SM90))
    # bx + 1 may be S: that access keeps its guard (the last block's row is skipped / reads 0)
    y = poison((3, 5, 64))
    compile_cpu(_rows_by_block(lambda bx: bx + 1))(x, y)
    np.testing.assert_array_equal(y[:, 1:], x[:, 1:] * 2)
    assert "if (" in _body(tilelang.compile(_rows_by_block(lambda bx: bx + 1), target=SM90))
