"""Warp specialization of a pipelined loop inside a persistent kernel's tile loop
(src/transform/cuda/warp_specialize_tiles.cc): both roles run the tile loop, stages and
mbarrier phases run on across tiles. The kernels are checked against float64 on the default
target (the CPU in CI, the GPU under TILELANG_TEST_CUDA=1) and their sm_90a lowering read
as text on the CPU machine."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def persistent_gemm(M, N, K, bm, bn, bk, blocks, stages=3, threads=128, primitive=True):
    """upstream's persistent GEMM shape: `blocks` blocks visit the (M / bm) x (N / bn) tiles,
    through T.Persistent or the tile index computed by hand under `if the tile exists`."""
    m_blocks, n_blocks = T.ceildiv(M, bm), T.ceildiv(N, bn)
    waves = T.ceildiv(m_blocks * n_blocks, blocks)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(blocks, threads=threads) as block_id:
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            C_s = T.alloc_shared((bm, bn), "float16")
            if primitive:
                for bx, by in T.Persistent([m_blocks, n_blocks], blocks, block_id):
                    T.clear(C_l)
                    for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                        T.copy(A[bx * bm, k * bk], A_s)
                        T.copy(B[k * bk, by * bn], B_s)
                        T.gemm(A_s, B_s, C_l)
                    T.copy(C_l, C_s)
                    T.copy(C_s, C[bx * bm, by * bn])
            else:
                for w in T.serial(waves):
                    tile = blocks * w + block_id
                    bx = tile // n_blocks
                    by = tile % n_blocks
                    if tile < m_blocks * n_blocks:
                        T.clear(C_l)
                        for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                            T.copy(A[bx * bm, k * bk], A_s)
                            T.copy(B[k * bk, by * bn], B_s)
                            T.gemm(A_s, B_s, C_l)
                        T.copy(C_l, C[bx * bm, by * bn])
    return main


# (the key's default, given explicitly so these tests keep testing the path if it changes)
TILE_LOOP = {"tl.ws_tile_loop": 1}


def lower(func, **configs):
    cfg = {"tl.target_arch": "sm_90a", **{k: str(v) for k, v in {**TILE_LOOP, **configs}.items()}}
    lowered, remarks, _ = _tl.lower_cuda(func.node, cfg, True)
    return _tl.codegen_cuda(lowered).code, list(remarks)


@pytest.mark.parametrize("primitive", [True, False])
@pytest.mark.parametrize("M, N, K, bm, bn, bk, blocks, stages", [
    (256, 384, 320, 64, 128, 64, 4, 3),   # 6 tiles on 4 blocks, 5 k-tiles on 3 stages: phases cross tiles
    (384, 256, 192, 128, 64, 32, 5, 2),   # 6 tiles on 5 blocks, short k-tiles (in flight, one stage more)
    (128, 128, 64, 64, 64, 64, 3, 3),     # one k-tile per tile, fewer than the stages
])
def test_persistent_gemm_matches_float64(primitive, M, N, K, bm, bn, bk, blocks, stages):
    rng = np.random.default_rng(M + N + K + blocks)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.full((M, N), np.nan, np.float16)
    k = tilelang.compile(persistent_gemm(M, N, K, bm, bn, bk, blocks, stages, primitive=primitive),
                         pass_configs=TILE_LOOP)
    k(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=0.25)


@pytest.mark.parametrize("primitive", [True, False])
def test_tile_loop_is_warp_specialized_with_counted_steps(primitive):
    code, remarks = lower(persistent_gemm(1024, 1024, 1024, 128, 256, 64, 6, threads=256, primitive=primitive))
    said = [r for r in remarks if "warp-specialized, 3 stages" in r]
    assert said and "inside the tile loop at line" in said[0], remarks
    assert "tl::tma_load_2d" in code and "cp_async" not in code
    producer = code[code.index("warpgroup_reg_dealloc"):code.index("warpgroup_reg_alloc<")]
    consumer = code[code.index("warpgroup_reg_alloc<"):]
    # each role counts the steps of its earlier tiles and indexes stages and phases by them
    for role in (producer, consumer):
        steps = re.search(r"int32_t (tl_ws_tile_steps\w*) = 0;", role).group(1)
        assert role.index(steps) < role.index("for (int32_t")
        assert f"{steps} = ({steps} + 16);" in role  # (16 k-tiles a tile)
        assert f"tl_ws_bars[tl::floormod(({steps} + k" in role
    # the consumers' epilogue is inside their tile loop, after the count moves on
    store = consumer.index("tl::tma_store") if primitive else re.search(r"\bC\[", consumer).start()
    assert consumer.index(" + 16);") < store


def test_in_flight_order_releases_the_last_stage_of_each_tile():
    # 128 x 64 x 32 fp16: short k-tiles keep one in flight; the loop leaves the last k-tile's
    # stage to a step that never comes, so each tile releases it after its last wait
    code, remarks = lower(persistent_gemm(1024, 1024, 1024, 128, 64, 32, 6))
    assert any("stay in flight" in r for r in remarks), remarks
    consumer = code[code.index("warpgroup_reg_alloc<"):]
    tail = consumer[consumer.index("tl::wgmma_wait_hold<0, ", consumer.index("for (int32_t k")):]
    assert tail.index("tl::mbarrier_arrive((&tl_ws_bars[") < tail.index(" + 32);")  # (32 k-tiles a tile)


def test_tile_loop_specialization_can_be_switched_off():
    code, remarks = lower(persistent_gemm(1024, 1024, 1024, 128, 256, 64, 6, threads=256), **{"tl.ws_tile_loop": 0})
    assert "warpgroup_reg_dealloc" not in code
    assert any("not warp-specialized (the pipelined loop is nested in other statements (tl.ws_tile_loop is off))" in r
               for r in remarks), remarks


def test_a_tile_loop_reading_what_the_kernel_writes_is_refused_with_the_reason():
    M = N = K = 512

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16"),
             order: T.Tensor((16,), "int32")):
        with T.Kernel(4, threads=128) as block_id:
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            next_tile = T.alloc_shared((1,), "int32")
            for w in T.serial(4):
                next_tile[0] = order[w * 4 + block_id]
                tile = next_tile[0]
                T.clear(C_l)
                for k in T.Pipelined(K // 64, num_stages=3):
                    T.copy(A[tile // 4 * 128, k * 64], A_s)
                    T.copy(B[k * 64, tile % 4 * 128], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[tile // 4 * 128, tile % 4 * 128])

    code, remarks = lower(main)
    assert "warpgroup_reg_dealloc" not in code
    assert any("not warp-specialized" in r and "consumer threads" in r for r in remarks), remarks


def plain_gemm(M, N, K, bm, bn, bk, stages=3, threads=128, batch=0, swizzle=0):
    """A plain (one block per tile) GEMM, batched along the grid's z when batch > 0."""
    if batch:
        @T.prim_func
        def batched(A: T.Tensor((batch, M, K), "float16"), B: T.Tensor((batch, K, N), "float16"),
                    C: T.Tensor((batch, M, N), "float16")):
            with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), batch, threads=threads) as (bx, by, bz):
                A_s = T.alloc_shared((bm, bk), "float16")
                B_s = T.alloc_shared((bk, bn), "float16")
                C_l = T.alloc_fragment((bm, bn), "float32")
                T.clear(C_l)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                    T.copy(A[bz, by * bm, k * bk], A_s)
                    T.copy(B[bz, k * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, C_l)
                T.copy(C_l, C[bz, by * bm, bx * bn])
        return batched

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            if swizzle:
                T.use_swizzle(swizzle)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])
    return main


PERSISTENT = {"tl.auto_persistent": 1, "tl.sm_count": 3, **TILE_LOOP}


@pytest.mark.parametrize("M, N, K, bm, bn, bk, batch, swizzle", [
    (320, 448, 192, 64, 64, 64, 0, 0),    # 5 x 7 blocks on 3: ragged last wave
    (200, 330, 100, 64, 64, 32, 0, 2),    # ragged edges, panels of 2 columns
    (128, 192, 64, 64, 64, 64, 3, 0),     # a batch along z
])
def test_auto_persistent_gemm_matches_float64(M, N, K, bm, bn, bk, batch, swizzle):
    # on the CPU target the key means nothing; on the GPU (TILELANG_TEST_CUDA=1) 3 blocks
    # walk every block of the grid
    rng = np.random.default_rng(M * N + K)
    lead = (batch,) if batch else ()
    a = rng.standard_normal(lead + (M, K)).astype(np.float16)
    b = rng.standard_normal(lead + (K, N)).astype(np.float16)
    c = np.full(lead + (M, N), np.nan, np.float16)
    k = tilelang.compile(plain_gemm(M, N, K, bm, bn, bk, batch=batch, swizzle=swizzle), pass_configs=PERSISTENT)
    k(a, b, c)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=1e-2, atol=0.25)


def test_auto_persistent_launch_walks_the_grid_in_its_block_order():
    code, remarks = lower(plain_gemm(1024, 2048, 512, 128, 128, 64, swizzle=4), **PERSISTENT)
    assert any(r.startswith("persistent launch (tl.auto_persistent): 3 blocks walk the grid's blocks in panels of 4")
               for r in remarks), remarks
    assert "const int32_t block_id = blockIdx.x;" in code and "tl_linear" not in code  # (no panels in codegen)
    consumer = code[code.index("warpgroup_reg_alloc<"):]
    # 16 x 8 = 128 blocks on 3: 43 waves; a tile's place in its panel of 4 columns of 8 rows
    assert "tile_wave_1 < 43" in consumer and "< 128)) {" in consumer
    assert "tile_first_1 = ((tile_index_1 >> 5) * 4);" in consumer, consumer[:1500]
    # the producer's copy of the tile loop has variables of its own
    producer = code[code.index("warpgroup_reg_dealloc"):code.index("warpgroup_reg_alloc<")]
    assert "tile_wave < 43" in producer and "tile_wave_1" not in producer


@pytest.mark.parametrize("configs, why", [
    ({"tl.auto_persistent": 1}, "the GPU's SM count is not known"),
    ({"tl.auto_persistent": 1, "tl.sm_count": 132}, "the grid's 128 blocks fit in one wave on 132 SMs"),
])
def test_auto_persistent_says_why_a_launch_stays_as_written(configs, why):
    code, remarks = lower(plain_gemm(1024, 2048, 512, 128, 128, 64), **configs)
    assert "tile_wave" not in code and "warpgroup_reg_dealloc" in code
    assert any(r.startswith("tl.auto_persistent not applied: " + why) for r in remarks), remarks
