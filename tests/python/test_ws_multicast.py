"""TMA multicast in clusters of two blocks (tl.ws_multicast, cuda-warp-specialize), checked
without a GPU: which tile is shared along which grid axis, the slices each block loads, the
cluster-wide releases and meetings, the cluster-aware block order; what is refused and why;
and the same sources on the CPU target. On the GPU (TILELANG_TEST_CUDA=1) the float64 checks
run the clustered kernels."""
import numpy as np
import pytest

import tilelang
from test_guarded_pipeline_loads import block_sparse_gemm
from test_warp_specialize import attention, gemm, lower

ON = {"tl.ws_multicast": True}


def said(remarks):
    return [r for r in remarks if "clusters of" in r or "no multicast" in r]


def test_gemm_shares_the_larger_tile_along_the_axis_it_does_not_depend_on():
    # 128 x 256 x 64: B (64 x 256, 32 KB) does not depend on by, A (16 KB) not on bx: the
    # clusters pair blocks along y, each loading 32 of B's 64 rows for both
    src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 256, 64, stages=3, threads=256), **ON)
    code = src.code
    assert said(remarks) == ["T.Pipelined at line 35: launched in clusters of 2 blocks along y; B_s multicast "
                             "(each block loads 1/2 of it for both: 16384 bytes a stage less per block from L2)"]
    assert "__cluster_dims__(1, 2, 1) main_kernel(" in code
    # A as before; B's four 64-column panels, each in two slices of 32 rows: this block's slice
    assert code.count("tl::tma_load_2d(tl_tma_0") == 1 and code.count("tl::tma_load_multicast(tl_tma_1") == 4
    assert sorted(src.tma_specs)[1][4] == [64, 32]
    assert "(uint16_t)(3), ((bx * 256) + 64), ((k * 64) + ((int)tl::block_rank_in_cluster() * 32)))" in code
    assert "(&B_s[((((k % 3) * 16384) + ((int)tl::block_rank_in_cluster() * 2048)) + 4096)])" in code
    # each block's full barrier still expects the whole stage: its half of B comes from the other block
    assert "tl::mbarrier_arrive_expect_tx((&tl_ws_bars[(k % 3)]), 49152)" in code
    # empty barriers: one arrival per consumer warp from each of the two blocks
    assert "tl::mbarrier_init((&tl_ws_bars[3]), 16)" in code
    assert "tl::mbarrier_arrive_cluster_warp<2>((&tl_ws_bars[((k_1 % 3) + 3)]))" in code
    assert "tl::mbarrier_arrive((" not in code
    # the blocks meet after the barriers are initialized and again before either exits
    assert "__syncthreads()" not in code and code.count("tl::cluster_sync()") == 2
    assert code.rstrip().endswith("tl::cluster_sync();\n}")


def test_panels_order_whole_clusters():
    # 8192^2 outputs: the panel order (tl.raster_panel) walks clusters, and each block adds its
    # rank, so that the two blocks of a cluster stay in one column of C (the same B tile)
    src, _, _ = lower(gemm(8192, 8192, 8192), **ON)
    code = src.code
    assert "const int tl_linear = blockIdx.x + ((int)blockIdx.y / 2) * gridDim.x;" in code
    assert "const int tl_group = 8 * ((int)gridDim.y / 2);" in code
    assert "const int by = (tl_in_panel / tl_width) * 2 + (int)blockIdx.y % 2;" in code
    assert "const int bx = tl_first + tl_in_panel % tl_width;" in code


def test_equal_tiles_pair_blocks_along_x_and_fp8_too():
    _, remarks, _ = lower(gemm(2048, 2048, 2048, 128, 128, 64, stages=3, threads=128, dtype="float8_e4m3",
                               trans_b=True), **ON)
    assert said(remarks) == ["T.Pipelined at line 35: launched in clusters of 2 blocks along x; A_s multicast "
                             "(each block loads 1/2 of it for both: 4096 bytes a stage less per block from L2)"]


def test_attention_shares_k_and_v_between_query_blocks():
    src, remarks, _ = lower(attention(1, 8, 2048, 128), **ON)
    assert said(remarks) == ["T.Pipelined at line 70: launched in clusters of 2 blocks along x; K_s, V_s multicast "
                             "(each block loads 1/2 of it for both: 32768 bytes a stage less per block from L2)"]
    assert "__cluster_dims__(2, 1, 1)" in src.code
    # K and V, two 64-column panels each, in slices; Q (two panels), loaded before the loop
    # for this block alone, is not multicast
    assert src.code.count("tl::tma_load_multicast(") == 4 and src.code.count("tl::tma_load_4d(") == 2


@pytest.mark.parametrize("why, func, configs", [
    # an odd number of blocks along both axes
    ("no tile is the same for two neighbouring blocks", gemm(3 * 128, 3 * 256, 1024, 128, 256, 64, 3, 256), {}),
    # block-sparse: a block whose mask drops a k-tile would still receive the other's half
    ("the blocks may skip different k-tiles: loads under a guard", block_sparse_gemm(256, 256, 256)[0], {}),
    ("the blocks may skip different k-tiles: loads under a guard", block_sparse_gemm(256, 256, 256)[0],
     {"tl.ws_skip_masked_steps": False}),
])
def test_refusals_say_why(why, func, configs):
    src, remarks, _ = lower(func, **ON, **configs)
    assert any(why in r for r in said(remarks)), remarks
    assert "__cluster_dims__" not in src.code and "multicast" not in src.code


def test_off_by_default_and_when_asked():
    for cfg in ({}, {"tl.ws_multicast": False}):
        src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 256, 64, stages=3, threads=256), **cfg)
        assert not said(remarks) and "__cluster_dims__" not in src.code and "cluster_sync" not in src.code


@pytest.mark.parametrize("M, N, K, bm, bn, bk, threads", [(256, 512, 256, 128, 256, 64, 256),
                                                            (192, 256, 200, 64, 128, 64, 128)])
def test_multicast_gemm_matches_float64(M, N, K, bm, bn, bk, threads):
    # the CPU target ignores the key; on the GPU (TILELANG_TEST_CUDA=1) the kernel runs in clusters
    rng = np.random.default_rng(5)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    k = tilelang.compile(gemm(M, N, K, bm, bn, bk, stages=3, threads=threads), pass_configs=ON)
    k(a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=0.5)
