"""Thread-level code: T.get_thread_binding, per-thread locals, T.warp_reduce_*, T.shfl_*.

On CUDA these are the hardware's; on the CPU a block runs its threads in lockstep (each
thread-dependent statement is a loop over the threads). Results are checked against
numpy on the CPU, and on the GPU under TILELANG_TEST_CUDA=1; the CUDA source is also
checked here without a GPU."""
import os
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, marker_line, poison, rand
from tilelang.jit.cuda_backend import _search_dirs
from tilelang import _tl

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")


def warp_stats(n, threads=128):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), Bits: T.Tensor((n,), "int32"),
             S: T.Tensor((4, n // 32), "float32"), Bo: T.Tensor((2, n // 32), "int32")):
        with T.Kernel(n // threads, threads=threads) as bx:
            tx = T.get_thread_binding()
            v = A[bx * threads + tx]
            s = T.warp_reduce_sum(v)
            m = T.warp_reduce_max(v)
            lo = T.warp_reduce_min(v)
            o = T.warp_reduce_bitor(Bits[bx * threads + tx])
            a = T.warp_reduce_bitand(Bits[bx * threads + tx])
            if tx % 32 == 0:
                w = bx * (threads // 32) + tx // 32
                S[0, w] = s
                S[1, w] = m
                S[2, w] = lo
                S[3, w] = s - m
                Bo[0, w] = o
                Bo[1, w] = a

    return main


def test_warp_reductions(rng):
    n = 256
    kernel = compile_cpu(warp_stats(n))
    a = rand(rng, (n,))
    bits = rng.integers(0, 1 << 12, n).astype(np.int32)
    s, bo = poison((4, n // 32)), np.zeros((2, n // 32), np.int32)
    kernel(a, bits, s, bo)
    w = a.astype(np.float64).reshape(-1, 32)
    np.testing.assert_allclose(s[0], w.sum(1), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(s[1], a.reshape(-1, 32).max(1))
    np.testing.assert_array_equal(s[2], a.reshape(-1, 32).min(1))
    np.testing.assert_allclose(s[3], w.sum(1) - w.max(1), rtol=1e-5, atol=1e-5)
    b = bits.reshape(-1, 32)
    np.testing.assert_array_equal(bo[0], np.bitwise_or.reduce(b, axis=1))
    np.testing.assert_array_equal(bo[1], np.bitwise_and.reduce(b, axis=1))


def test_shuffles_and_per_thread_locals(rng):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((5, 64), "float32")):
        with T.Kernel(1, threads=64) as bx:
            tx = T.get_thread_binding()
            acc = T.alloc_local((2,), "float32")
            acc[0] = A[tx]
            acc[1] = acc[0] * 2
            B[0, tx] = T.shfl_xor(acc[0], 1)
            B[1, tx] = T.shfl_down(acc[0], 2)
            B[2, tx] = T.shfl_up(acc[1], 3)
            B[3, tx] = T.shfl_sync(acc[0], 5)
            B[4, tx] = T.shfl_xor(acc[0], 4, 8)  # groups of 8 lanes

    a = rand(rng, (64,))
    b = compile_cpu(main, out_idx=[-1])(a)
    lanes = np.arange(64)
    lane = lanes % 32
    np.testing.assert_array_equal(b[0], a[lanes ^ 1])
    np.testing.assert_array_equal(b[1], np.where(lane + 2 < 32, a[np.minimum(lanes + 2, 63)], a))
    np.testing.assert_array_equal(b[2], np.where(lane >= 3, 2 * a[np.maximum(lanes - 3, 0)], 2 * a))
    np.testing.assert_array_equal(b[3], a[lanes - lane + 5])
    np.testing.assert_array_equal(b[4], a[lanes ^ 4])


def test_thread_dependent_branches_loops_and_a_2d_block(rng):
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=(16, 8)) as bx:
            x = T.get_thread_binding(0)
            y = T.get_thread_binding(1)
            total = T.alloc_var("float32")
            total = 0
            for k in T.serial(4):
                if (x + k) % 2 == 0:
                    total += A[y, x] * k
                else:
                    total -= 1
            B[y, x] = total

    a = rand(rng, (8, 16))
    b = compile_cpu(main, out_idx=[-1])(a)
    x = np.arange(16)[None, :]
    ref = sum(np.where((x + k) % 2 == 0, a * k, -1.0) for k in range(4))
    np.testing.assert_allclose(b, ref, rtol=1e-6)


def test_thread_dependent_loop_bounds_run_per_thread(rng):
    # each thread sums its own prefix: on the CPU the loop runs once per thread, with that
    # thread's bounds (nothing in it involves another thread)
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            acc = T.alloc_var("float32")
            acc = 0.0
            for k in T.unroll(tx % 32):
                if k % 3 != 2:
                    acc += A[k + tx // 64]
            for k in T.serial(tx // 32, tx // 16):
                acc += A[k] * 2
            B[tx] = acc

    a = rand(rng, (64,))
    b = np.full(128, np.nan, np.float32)
    compile_cpu(main)(a, b)
    want = [sum(a[k + t // 64] for k in range(t % 32) if k % 3 != 2) + 2 * a[t // 32:t // 16].sum() for t in range(128)]
    np.testing.assert_allclose(b, want, rtol=1e-5)


def test_thread_dependent_loop_bounds_around_a_collective_are_a_clear_error_on_the_cpu():
    if os.environ.get("TILELANG_TEST_CUDA") == "1":
        pytest.skip("checks the CPU target's error")

    @T.prim_func
    def main(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            for k in T.serial(tx):  # ERR-HERE
                A[tx] = T.shfl_xor(A[tx], 1)

    with pytest.raises(tilelang.TileLangCompileError, match="loop whose bounds depend on the thread, with a barrier") \
            as info:
        tilelang.compile(main, target="cpu")
    this_test = test_thread_dependent_loop_bounds_around_a_collective_are_a_clear_error_on_the_cpu
    assert info.value.line == marker_line(this_test)


@needs_compiler
def test_cuda_source_uses_the_hardware():
    k = tilelang.compile(warp_stats(256), target="cuda -arch=sm_90a")
    src = k.get_kernel_source()
    for fn in ("warp_reduce_sum<32>", "warp_reduce_max<32>", "warp_reduce_bitor<32>", "warp_reduce_bitand<32>"):
        assert "tl::" + fn in src, src
    assert "threadIdx.x" in src and "thread_binding" not in src, src


@needs_compiler
def test_shuffles_bit_scans_and_isfinite_print_as_cuda_builtins():
    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), H: T.Tensor((32,), "float16"), B: T.Tensor((4, 32), "int32"),
             C: T.Tensor((2, 32), "float32")):
        with T.Kernel(1, threads=32) as bx:
            tx = T.get_thread_binding()
            C[0, tx] = T.shfl_sync(A[tx], 3)
            C[1, tx] = T.shfl_xor(H[tx], 1)
            B[0, tx] = T.__ffs(T.ballot_sync(tx >= 7)) - 1
            B[1, tx] = T.__ffs(tx)
            B[2, tx] = T.isfinite(A[tx])

    src = tilelang.compile(main, target="cuda -arch=sm_80").get_kernel_source()
    assert re.search(r"__shfl_sync\(0xffffffffu, A\[tx\w*\], 3, 32\)", src), src
    assert re.search(r"tl::shfl_xor\(H\[tx\w*\], 1, 32\)", src), src  # 16-bit values widen in tl::'s
    assert "__ffsll((long long)(" in src and re.search(r"__ffs\(\(int\)\(tx\w*\)\)", src), src
    assert re.search(r"tl::isfinite\(A\[tx\w*\]\)", src), src


@needs_compiler
def test_thread_binding_of_a_2d_block_on_cuda():
    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=(16, 8)) as bx:
            x = T.get_thread_binding(0)
            y = T.get_thread_binding(1)
            A[y, x] = T.cast(y * 100 + x, "float32")

    src = tilelang.compile(main, target="cuda -arch=sm_80").get_kernel_source()
    assert "tx & 15" in src and "tx >> 4" in src, src


def test_bitwise_warp_reduction_takes_integers():
    with pytest.raises(tilelang.TileLangCompileError, match="T.warp_reduce_bitand takes an integer value, got float32"):
        @T.prim_func
        def main(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as bx:
                A[0] = T.warp_reduce_bitand(A[1])


def test_shared_memory_tree_reduction_with_barriers(rng):
    """The classic block reduction: per-thread stores into shared memory, halving strides
    under a thread-dependent condition, barriers between steps."""
    @T.prim_func
    def main(A: T.Tensor((4, 128), "float32"), S: T.Tensor((4,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((128,), "float32")
            s[tx] = A[bx, tx]
            T.sync_threads()
            for stride in [64, 32, 16, 8, 4, 2, 1]:  # unrolled at compile time
                if tx < stride:
                    s[tx] = s[tx] + s[tx + stride]
                T.sync_threads()
            if tx == 0:
                S[bx] = s[0]

    a = rand(rng, (4, 128))
    out = compile_cpu(main, out_idx=[-1])(a)
    np.testing.assert_allclose(out, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


def per_thread_copy():
    @T.prim_func
    def main(A: T.Tensor((128, 8), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            loc = T.alloc_local((8,), "float32")
            T.copy(A[tx, 0:8], loc)  # each thread its own row, into its own registers
            acc = T.alloc_var("float32")
            acc = 0
            for k in T.serial(8):
                acc += loc[k]
            B[tx] = acc

    return main


def test_copy_into_per_thread_storage(rng):
    a = rand(rng, (128, 8))
    b = compile_cpu(per_thread_copy(), out_idx=[-1])(a)
    np.testing.assert_allclose(b, a.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-5)


@needs_compiler
def test_copy_into_per_thread_storage_is_not_spread_over_threads_on_cuda():
    src = tilelang.compile(per_thread_copy(), target="cuda -arch=sm_90a").get_kernel_source()
    body = src[src.index("loc[8]"):]
    assert "for (int32_t i0 = 0; i0 < 8; ++i0)" in body and "if ((tx < 8))" not in body, body


def thread_atomics():
    @T.prim_func
    def main(C: T.Tensor((2,), "int32")):
        with T.Kernel(3, threads=64) as bx:
            tx = T.get_thread_binding()
            if tx < 4:
                T.atomic_add(C[0], 1)  # each of the 4 threads that take the branch
            T.atomic_add(C[1], 1)  # not thread-dependent: once per block

    return main


def test_atomics_in_thread_level_code():
    c = np.zeros(2, np.int32)
    compile_cpu(thread_atomics())(c)
    np.testing.assert_array_equal(c, [3 * 4, 3])


@needs_compiler
def test_atomics_in_thread_level_code_on_cuda():
    src = tilelang.compile(thread_atomics(), target="cuda -arch=sm_80").get_kernel_source()
    branch = src[src.index("if ((tx < 4))"):]  # (the barrier pass reads `tx_1 = tx` as tx itself)
    first = branch[:branch.index("}")]
    assert "tl::atomic_add" in first and "tx_1 == 0" not in first and "tx == 0" not in first, src
    assert "if ((tx == 0))" in src, src  # the block-level one


def _warp_handoff():
    @T.prim_func
    def main(A: T.Tensor((64,), "int32"), B: T.Tensor((64,), "int32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "int32")
            S[tx] = A[tx] * 3
            T.sync_warp()  # lane l reads what lane l ^ 1 of its own warp wrote
            B[tx] = S[tx ^ 1]

    return main


def test_sync_warp_hands_values_between_lanes(rng):
    a = rand(rng, (64,), "int32")
    b = poison((64,), "int32")
    compile_cpu(_warp_handoff())(a, b)
    np.testing.assert_array_equal(b, (a * 3)[np.arange(64) ^ 1])
    src = tilelang.compile(_warp_handoff(), target="cuda -arch=sm_90a").get_kernel_source()
    # where the program asked for it, before the read of the neighbour's value (the
    # __syncthreads the barrier pass adds for the shared tile stays: it is not the block's)
    sync, read = src.find("__syncwarp();"), src.find("= S[(")
    assert 0 <= sync < read, src
