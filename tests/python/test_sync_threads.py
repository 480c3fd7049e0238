"""T.sync_threads(barrier_id, arrive_count): a hardware barrier for some of the block's warps
(bar.sync id, count), or for all of them with an id and no count; without arguments,
__syncthreads. A partial barrier inside a branch on whole warps must not become a block-wide
one (that would wait for threads that never arrive)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison

SM90 = "cuda -arch=sm_90a"


def half_block_exchange():
    """Threads 0..127 write a shared row, meet at barrier 1 (128 threads), then read the
    row reversed; threads 128..255 only copy their input."""

    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as _:
            row = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding()
            if tx < 128:
                row[tx] = X[tx] * 2.0
                T.sync_threads(1, 128)
                Y[tx] = row[127 - tx]
            else:
                Y[tx] = X[tx]

    return main


def test_a_partial_barrier_is_a_named_barrier():
    src = tilelang.compile(half_block_exchange(), target=SM90).get_kernel_source()
    body = src[src.index("__global__"):]
    # a barrier of the branch's 128 threads (the barrier pass may renumber it: it numbers
    # the barriers of thread ranges itself), never a block-wide one
    assert re.search(r"tl::named_barrier_sync\(\d+, 128\)", body), body
    assert "__syncthreads()" not in body[body.index("if ("):], body


def test_partial_barrier_results(rng):
    x = rng.standard_normal(256).astype(np.float32)
    y = poison((256,))
    tilelang.compile(half_block_exchange())(x, y)
    np.testing.assert_array_equal(y[:128], (x[:128] * 2)[::-1])
    np.testing.assert_array_equal(y[128:], x[128:])


def test_barrier_id_without_a_count_waits_for_the_whole_block():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            T.sync_threads(2)
            T.sync_threads()

    src = tilelang.compile(main, target=SM90).get_kernel_source()
    assert "tl::named_barrier_sync_all(2)" in src and "__syncthreads()" in src, src


def test_arrive_count_must_be_whole_warps():
    with pytest.raises(Exception, match="arrive_count must be a positive multiple of 32"):
        @T.prim_func
        def main(X: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as _:
                T.sync_threads(1, 100)


def test_launch_thread_names_the_thread_index(rng):
    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256) as _:
            tx = T.launch_thread("threadIdx.x", 256)
            Y[tx] = X[255 - tx]

    x = rng.standard_normal(256).astype(np.float32)
    y = poison((256,))
    tilelang.compile(main)(x, y)
    np.testing.assert_array_equal(y, x[::-1])
    with pytest.raises(Exception, match="the kernel launches 256 threads"):
        @T.prim_func
        def bad(X: T.Tensor((256,), "float32")):
            with T.Kernel(1, threads=256) as _:
                tx = T.launch_thread("threadIdx.x", 128)
                X[tx] = 0.0
