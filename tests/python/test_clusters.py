"""Thread-block clusters written by the user: T.ClusterKernel / T.Kernel(cluster_dims=...),
T.block_rank_in_cluster and the cluster barrier. The CUDA source and the refusals are checked
without a GPU; a cluster launch without cluster intrinsics runs on the CPU unchanged; the
rank kernel runs on the GPU under TILELANG_TEST_CUDA=1."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import cpu_target_only, marker_line
from tilelang.errors import TileLangCompileError

HOPPER = "cuda -arch=sm_90a"


def gemm(M, N, K, bm=64, bn=64, bk=32, cluster_dims=(2, 1, 1)):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.ClusterKernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128, cluster_dims=cluster_dims) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])
    return main


def ranks(cluster=4):
    @T.prim_func
    def main(A: T.Tensor((128,), "int32")):
        with T.ClusterKernel(128, cluster_dims=(cluster, 1, 1)) as bx:
            T.cluster_arrive()  # ERR-HERE
            T.cluster_wait()
            r = T.block_rank_in_cluster()
            if T.get_thread_binding() == 0:
                A[bx] = r
            T.cluster_sync()
    return main


def test_cluster_launch_declares_the_cluster_shape():
    src = tilelang.compile(gemm(256, 256, 256), target=HOPPER).get_kernel_source()
    assert "__cluster_dims__(2, 1, 1) main_kernel(" in src
    src = tilelang.compile(ranks(), target=HOPPER).get_kernel_source()
    assert "__cluster_dims__(4, 1, 1)" in src
    body = src[src.index("tl::cluster_arrive();"):]
    assert body.index("tl::cluster_wait();") < body.index("tl::block_rank_in_cluster()") < \
        body.index("tl::cluster_sync();")


def test_kernel_takes_cluster_dims_as_an_int_too():
    @T.prim_func
    def main(A: T.Tensor((64,), "float32")):
        with T.Kernel(8, threads=64, cluster_dims=2) as bx:
            for i in T.Parallel(8):
                A[bx * 8 + i] = bx
    assert "__cluster_dims__(2, 1, 1)" in tilelang.compile(main, target=HOPPER).get_kernel_source()


@cpu_target_only
def test_a_cluster_launch_runs_on_the_cpu():
    # the grouping only places blocks on the GPU: without cluster intrinsics the CPU runs it as is
    rng = np.random.default_rng(3)
    a = rng.standard_normal((128, 96)).astype(np.float16)
    b = rng.standard_normal((96, 256)).astype(np.float16)
    c = np.full((128, 256), np.nan, np.float16)
    tilelang.compile(gemm(128, 256, 96), target="cpu")(a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=0.2)


@cpu_target_only
def test_cluster_intrinsics_are_refused_on_the_cpu_at_their_line():
    with pytest.raises(TileLangCompileError, match="T.cluster_arrive is not supported on the CPU target") as e:
        tilelang.compile(ranks(), target="cpu")
    assert e.value.line == marker_line(ranks)


def test_clusters_need_sm90():
    with pytest.raises(TileLangCompileError, match="thread-block clusters need sm_90 or newer; this kernel is "
                                                   "compiled for sm_80"):
        tilelang.compile(gemm(256, 256, 256), target="cuda -arch=sm_80")


@pytest.mark.parametrize("dims, message", [
    ((3, 1, 1), r"the grid's extent 4 along x is not a multiple of the cluster's 3"),
    ((1, 1, 2), r"the grid's extent 1 along z is not a multiple of the cluster's 2"),
    ((4, 4, 1), r"at most 8 blocks per cluster \(the portable cluster size\), got 16"),
    ((0, 1, 1), r"cluster_dims must be a positive int or a list of 1 to 3 positive ints, got \(0, 1, 1\)"),
    ("2", r"cluster_dims must be a positive int or a list of 1 to 3 positive ints, got '2'"),
])
def test_bad_cluster_dims_are_named(dims, message):
    with pytest.raises(TileLangCompileError, match=message):
        gemm(256, 256, 256, cluster_dims=dims)


@pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") != "1", reason="runs on the GPU (TILELANG_TEST_CUDA=1)")
def test_block_ranks_on_the_gpu():
    a = np.full((128,), -1, np.int32)
    tilelang.compile(ranks(4))(a)
    np.testing.assert_array_equal(a, np.arange(128) % 4)


def arrive_on_block_zero():
    # upstream's cluster-barrier shape: every block's threads arrive on block 0's barrier
    @T.prim_func
    def main(A: T.Tensor((128,), "int32")):
        with T.ClusterKernel(128, threads=128, cluster_dims=(4, 1, 1)) as bx:
            mbar = T.alloc_cluster_barrier([512])
            T.cluster_sync()
            T.mbarrier_arrive(mbar[0], 0)
            if T.block_rank_in_cluster() == 0:
                T.mbarrier_wait_parity(mbar[0], 0)
            if T.get_thread_binding() == 0:
                A[bx] = 1
            T.cluster_sync()
    return main


def test_arrivals_on_another_blocks_barrier():
    src = tilelang.compile(arrive_on_block_zero(), target=HOPPER).get_kernel_source()
    assert "tl::mbarrier_arrive_remote((&mbar[0]), (uint32_t)(0))" in src
    assert src.index("tl::mbarrier_init_fence()") < src.index("tl::cluster_sync()") < \
        src.index("tl::mbarrier_arrive_remote(")


@pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") != "1", reason="runs on the GPU (TILELANG_TEST_CUDA=1)")
def test_arrivals_on_another_blocks_barrier_on_the_gpu():
    # (a hang, not a wrong value, is what a lost arrival would give: the process times out)
    a = np.zeros((128,), np.int32)
    tilelang.compile(arrive_on_block_zero())(a)
    np.testing.assert_array_equal(a, np.ones(128, np.int32))


def test_a_dynamic_grid_is_left_to_the_launch():
    # a grid extent known only at the call cannot be checked here: the driver refuses a launch
    # whose grid does not divide into clusters (its error names the grid)
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((N,), "float32")):
        with T.ClusterKernel(T.ceildiv(N, 64), threads=64, cluster_dims=2) as bx:
            for i in T.Parallel(64):
                if bx * 64 + i < N:
                    A[bx * 64 + i] = bx
    assert "__cluster_dims__(2, 1, 1)" in tilelang.compile(main, target=HOPPER).get_kernel_source()
