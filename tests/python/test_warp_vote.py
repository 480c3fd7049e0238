"""Warp votes, block votes and bit scans (T.any_sync, T.ballot_sync, T.activemask,
T.match_any_sync, T.syncthreads_count, T.__ffs, ...) against a numpy model of the warp: on
the CPU target the block's threads run in lockstep; the GPU script runs the same tests on
CUDA, where they are the hardware's instructions."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu


def _warps(n_threads):
    return [list(range(w, min(w + 32, n_threads))) for w in range(0, n_threads, 32)]


def _bits(lanes):
    return sum(1 << (t % 32) for t in lanes)


@pytest.mark.parametrize("threads", [64, 40])
def test_warp_votes_match_a_model_of_the_warp(threads):
    # The lane mask names exactly the lanes that exist (CUDA requires every lane in it to
    # take part): the whole warp, or the first 8 lanes of the last warp when threads = 40.
    last = (1 << (threads % 32)) - 1 if threads % 32 else 0xFFFFFFFF

    @T.prim_func
    def main(V: T.Tensor((threads,), "int32"), B: T.Tensor((threads, 7), "int64")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            mask = T.if_then_else(tx < threads // 32 * 32, T.uint32(0xFFFFFFFF), T.uint32(last))
            B[tx, 0] = T.cast(T.any_sync(V[tx] == 3, mask), "int64")
            B[tx, 1] = T.cast(T.all_sync(V[tx] > -5, mask), "int64")
            B[tx, 2] = T.cast(T.ballot_sync(V[tx] > 0, mask), "int64")
            B[tx, 3] = T.cast(T.match_any_sync(V[tx] % 3, mask), "int64")
            B[tx, 4] = T.cast(T.syncthreads_count(V[tx] < 0), "int64")
            B[tx, 5] = T.cast(T.syncthreads_or(V[tx] == 4), "int64")
            B[tx, 6] = T.cast(T.__ffs(T.ballot_sync(V[tx] == 1, mask)), "int64")

    v = np.random.default_rng(threads).integers(-5, 5, threads).astype(np.int32)
    b = np.full((threads, 7), -7, np.int64)
    compile_cpu(main)(v, b)
    for lanes in _warps(threads):
        for t in lanes:
            assert (b[t, 0] != 0) == any(v[u] == 3 for u in lanes)
            assert (b[t, 1] != 0) == all(v[u] > -5 for u in lanes)
            assert b[t, 2] == _bits(u for u in lanes if v[u] > 0)
            # CUDA's mod truncates toward zero; T's % is floor mod: compare with Python's %
            assert b[t, 3] == _bits(u for u in lanes if v[u] % 3 == v[t] % 3)
            ones = [u % 32 for u in lanes if v[u] == 1]
            assert b[t, 6] == (min(ones) + 1 if ones else 0)
    assert (b[:, 4] == int((v < 0).sum())).all()
    assert (b[:, 5] != 0).all() == bool((v == 4).any()) and len(set(b[:, 5] != 0)) == 1


def test_votes_count_only_the_lanes_that_reach_them():
    @T.prim_func
    def main(B: T.Tensor((64, 2), "int64")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            B[tx, 0] = -1
            B[tx, 1] = -1
            if tx % 2 == 0:
                B[tx, 0] = T.cast(T.activemask(), "int64")
                # the even lanes of the first 16 (on CUDA the mask may name only lanes
                # that execute the vote)
                if tx < 16:
                    B[tx, 1] = T.cast(T.ballot_sync(1, 0x00005555), "int64")

    b = np.zeros((64, 2), np.int64)
    compile_cpu(main)(b)
    even = _bits(range(0, 32, 2))
    assert (b[0::2, 0] == even).all() and (b[1::2, 0] == -1).all()
    assert (b[0:16:2, 1] == 0x5555).all() and (b[16::2, 1] == -1).all()


def test_predicates_must_be_integers():
    with pytest.raises(TypeError, match="integer or boolean predicate"):
        T.any_sync(T.float32(0.5))


def test_cuda_prints_the_hardware_votes():
    @T.prim_func
    def main(B: T.Tensor((32,), "int64")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            B[tx] = T.cast(T.ballot_sync(tx == 0), "int64") + T.any_sync(tx == 1) + T.syncthreads_count(1)

    src = tilelang.lower(main, target="cuda -arch=sm_90a").kernel_source
    assert "__ballot_sync(" in src and "__any_sync(" in src and "__syncthreads_count(" in src


def test_cuda_match_all_is_cudas_own():
    from tilelang import _tl
    from tilelang.jit.cuda_backend import _search_dirs

    @T.prim_func
    def main(A: T.Tensor((32,), "int32"), B: T.Tensor((32,), "int64")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            B[tx] = T.cast(T.match_all_sync(A[tx]), "int64") + T.__ffs(T.ballot_sync(tx >= 7))

    src = tilelang.lower(main, target="cuda -arch=sm_90a").kernel_source
    assert "__match_all_sync(" in src and "__ffsll(" in src, src
    if _tl.find_cuda_compiler(_search_dirs())[0]:  # and NVRTC takes it
        assert "__match_all_sync(" in tilelang.compile(main, target="cuda -arch=sm_90a").get_kernel_source()
