"""The element atomics upstream programs use beyond add/max/min on regions: the old value
(return_prev=True), bitwise atomics, atomic loads and stores, memory orders, the vector
forms on whole buffers and slices, and the clear errors for what is not supported. CPU
target; the GPU script runs them on CUDA too (TILELANG_TEST_CUDA=1)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, marker_line, poison
from tilelang.errors import TileLangCompileError


def test_return_prev_gives_an_exclusive_prefix_sum():
    N = 9

    # B starts at 1.5, set by the caller: written inside the kernel by every CUDA thread, it
    # could land after thread 0's first update (stores to global memory are not ordered).
    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((1,), "float32"), P: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(N):
                P[i] = T.atomic_add(B[0], A[i], return_prev=True, memory_order="relaxed")

    a = np.random.default_rng(1).standard_normal(N).astype(np.float32)
    b, p = np.full((1,), 1.5, np.float32), poison((N,))
    compile_cpu(main)(a, b, p)
    prefix = np.concatenate([[0.0], np.cumsum(f64(a))[:-1]]) + 1.5
    assert_close(p, prefix)
    assert_close(b, [1.5 + f64(a).sum()])


@pytest.mark.parametrize("op", ["max", "min"])
def test_max_min_return_prev(op):
    N = 12

    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), B: T.Tensor((1,), "int32"), P: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(N):
                P[i] = (T.atomic_max if op == "max" else T.atomic_min)(B[0], A[i], return_prev=True)

    a = np.random.default_rng(2).integers(-50, 50, N).astype(np.int32)
    b, p = np.zeros((1,), np.int32), poison((N,), "int32")
    compile_cpu(main)(a, b, p)
    acc = np.maximum.accumulate if op == "max" else np.minimum.accumulate
    running = acc(np.concatenate([[0], a]))
    np.testing.assert_array_equal(p, running[:-1])
    np.testing.assert_array_equal(b, running[-1:])


@pytest.mark.parametrize("op", ["or", "and", "xor"])
def test_bitwise_atomics_over_a_parallel_loop(op):
    N = 64

    @T.prim_func
    def main(A: T.Tensor((N,), "int32"), B: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=64):
            for i in T.Parallel(N):
                getattr(T, f"atomic_{op}")(B[0], A[i])

    a = np.random.default_rng(3).integers(0, 1 << 20, N).astype(np.int32)
    init = {"or": 0, "and": -1, "xor": 5}[op]
    b = np.full((1,), init, np.int32)
    compile_cpu(main)(a, b)
    fold = {"or": np.bitwise_or, "and": np.bitwise_and, "xor": np.bitwise_xor}[op].reduce
    assert int(b[0]) == int(fold(np.concatenate([[init], a]).astype(np.int32)))


def test_atomic_load_and_store():
    @T.prim_func
    def main(A: T.Tensor((2,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=32):
            x = T.atomic_load(A[1], memory_order="acquire")
            T.atomic_store(B[0], x * 2.0 + 1.0, memory_order="release")
            T.atomic_store(B[1], T.atomic_load(A[0]))

    a = np.array([-3.25, 2.5], np.float32)
    b = poison((2,))
    compile_cpu(main)(a, b)
    assert_close(b, [6.0, -3.25])


@pytest.mark.parametrize("form", ["buffer", "slice"])
def test_vector_atomic_add_on_buffers_and_slices(form):
    @T.prim_func
    def main(V: T.Tensor((4,), "float32"), D: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            if form == "buffer":
                T.atomic_addx4(D, V)
            else:
                T.atomic_addx2(D[1:3], V[0:2])

    v = np.random.default_rng(4).standard_normal(4).astype(np.float32)
    d = np.ones(4, np.float32)
    compile_cpu(main)(v, d)
    want = np.ones(4) + (f64(v) if form == "buffer" else np.array([0, v[0], v[1], 0], np.float64))
    assert_close(d, want)


def test_an_out_of_range_element_atomic_does_nothing():
    """The element's index is checked as any element access of a global tensor is: past the
    end nothing is updated and the old value reads as zero."""
    N = 6

    @T.prim_func
    def main(K: T.Tensor((N,), "int32"), B: T.Tensor((4,), "float32"), P: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.serial(N):
                P[i] = T.atomic_add(B[K[i]], 1.0, return_prev=True)

    k = np.array([0, 3, 4, 1, 9, 0], np.int32)
    b, p = np.zeros(4, np.float32), poison((N,))
    compile_cpu(main)(k, b, p)
    assert_close(b, [2, 1, 0, 1])
    assert_close(p, [0, 0, 0, 0, 0, 1])


def test_tma_reductions_are_atomic_adds_with_a_remark():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            T.atomic_add(B, A, use_tma=True)

    kernel = compile_cpu(main)
    a, b = np.arange(4, dtype=np.float32), np.ones(4, np.float32)
    kernel(a, b)
    assert_close(b, [1, 2, 3, 4])
    assert any("use_tma=True): done with atomic instructions" in r for r in kernel.get_remarks())


def test_bad_memory_order_and_non_integer_bitwise_are_clear_errors():
    with pytest.raises(TileLangCompileError, match="memory_order must be one of"):
        @T.prim_func
        def a(B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                T.atomic_add(B[0], 1.0, memory_order="sometimes")

    with pytest.raises(TileLangCompileError, match="integer destination"):
        @T.prim_func
        def b(B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                T.atomic_or(B[0], 1)


def test_cuda_narrows_a_once_per_block_atomic_to_one_thread():
    """Outside T.Parallel an update happens once (as on the CPU): one thread of the block
    performs it and stores the old value."""

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((1,), "float32"), P: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=64):
            for i in T.serial(4):
                P[i] = T.atomic_add(B[0], A[i], return_prev=True)

    src = tilelang.lower(main, target="cuda -arch=sm_90a").kernel_source
    assert "tl::atomic_add((&B[0]), A[i])" in src
    body = src[src.index("for (int32_t i = 0; i < 4"):]
    assert body.index("(tx == 0)") < body.index("tl::atomic_add")


@pytest.mark.parametrize("fn, order", [("atomic_load", "release"), ("atomic_load", "acq_rel"),
                                       ("atomic_store", "acquire"), ("atomic_store", "consume"),
                                       ("atomic_store", "acq_rel"), ("atomic_load", "sometimes")])
def test_loads_cannot_release_and_stores_cannot_acquire(fn, order):
    with pytest.raises(ValueError, match=f"T.{fn} does not support memory_order"):
        @T.prim_func
        def main(A: T.Tensor((2,), "float32")):
            with T.Kernel(1, threads=32):
                if fn == "atomic_load":
                    A[0] = T.atomic_load(A[1], memory_order=order)
                else:
                    T.atomic_store(A[0], 1.0, memory_order=order)


@pytest.mark.parametrize("width, form", [(2, "slice"), (4, "slice"), (2, "element"), (2, "ramp"), (2, "let")])
def test_vector_atomic_add_returns_each_lanes_old_value(width, form):
    # each lane is its own atomic add: blocks 0..3 add into the same lanes, so the old
    # values each block sees are distinct partial sums and their set is known
    @T.prim_func
    def main(Dst: T.Tensor((width,), "float32"), Val: T.Tensor((4, width), "float32"),
             Prev: T.Tensor((4, width), "float32")):
        with T.Kernel(4, threads=1) as bx:
            if form == "slice":
                Prev[bx, 0:width] = (T.atomic_addx2 if width == 2 else T.atomic_addx4)(
                    Dst[0:width], Val[bx, 0:width], return_prev=True)
            elif form == "element":
                Prev[bx, 0:2] = T.atomic_addx2(Dst[0], Val[bx, 0], return_prev=True)
            elif form == "ramp":
                Prev[bx, 0:2] = T.atomic_addx2(Dst[T.Ramp(0, 1, 2)], Val[bx, T.Ramp(0, 1, 2)], return_prev=True)
            else:
                d = Dst[0:2]
                Prev[bx, 0:2] = T.atomic_addx2(d, Val[bx, 0:2], return_prev=True)

    val = (np.arange(4 * width, dtype=np.float32).reshape(4, width) + 1) * 10
    dst = np.arange(width, dtype=np.float32) + 1
    prev = poison((4, width))
    compile_cpu(main)(dst, val, prev)
    assert_close(dst, 1 + np.arange(width) + val.sum(0))
    # per lane, in the order the blocks' adds happened (by old value, the values being
    # positive): each block saw the start plus the adds of the blocks before it
    for lane in range(width):
        order = np.argsort(prev[:, lane])
        running = 1.0 + lane
        for b in order:
            assert prev[b, lane] == running
            running += val[b, lane]
        assert dst[lane] == running


def test_vector_atomic_return_prev_needs_a_slice_of_its_width():
    with pytest.raises(ValueError, match="slice has 3 elements, it needs 2"):
        @T.prim_func
        def main(Dst: T.Tensor((4,), "float32"), Val: T.Tensor((4,), "float32"), Prev: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                Prev[0:2] = T.atomic_addx2(Dst[0:3], Val[0:2], return_prev=True)


def test_vector_atomic_add_into_a_row_chosen_per_thread():
    # thread-level code: thread t adds its 4 values into row idx[t] (rows repeat)
    @T.prim_func
    def main(Idx: T.Tensor((8,), "int32"), Val: T.Tensor((8, 4), "float32"), Dst: T.Tensor((3, 4), "float32")):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            T.atomic_addx4(Dst[Idx[t], 0:4], Val[t, 0:4])

    idx = np.array([0, 2, 1, 0, 2, 2, 1, 0], np.int32)
    val = np.arange(32, dtype=np.float32).reshape(8, 4)
    dst = np.ones((3, 4), np.float32)
    compile_cpu(main)(idx, val, dst)
    want = np.ones((3, 4))
    for t in range(8):
        want[idx[t]] += val[t]
    assert_close(dst, want)
