"""Warp specialization on sm_90a (cuda-warp-specialize), checked without a GPU: which
pipelined loops get a TMA producer warpgroup and mbarriers, the generated code and launch
facts, the tensor-map specs the runtime builds at launch, the fallbacks with their reasons,
and that the same sources still run on the CPU target."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())


# the attention loop in the order written (tl.ws_softmax_overlap reorders it)
NO_OVERLAP = {"tl.ws_softmax_overlap": False}

def gemm(M, N, K, bm=128, bn=256, bk=64, stages=3, threads=256, dtype="float16", trans_b=False, tiles_in_loop=False):
    """tiles_in_loop: the shared tiles allocated inside the T.Pipelined body (as upstream's mHC
    example writes them), which the compiler hoists before the loop."""
    b_shape = (N, K) if trans_b else (K, N)
    b_tile = (bn, bk) if trans_b else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            if not tiles_in_loop:
                A_s = T.alloc_shared((bm, bk), dtype)
                B_s = T.alloc_shared(b_tile, dtype)
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if tiles_in_loop:
                    A_s = T.alloc_shared((bm, bk), dtype)
                    B_s = T.alloc_shared(b_tile, dtype)
                T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l, transpose_B=trans_b)
            T.copy(C_l, C[by * bm, bx * bn])
    return main


def attention(batch, heads, seq, dim, bm=128, bn=128, stages=2, threads=256):
    shape = (batch, seq, heads, dim)

    @T.prim_func
    def main(Q: T.Tensor(shape, "float16"), K: T.Tensor(shape, "float16"), V: T.Tensor(shape, "float16"),
             O: T.Tensor(shape, "float16")):
        with T.Kernel(T.ceildiv(seq, bm), heads, batch, threads=threads) as (bx, by, bz):
            Q_s = T.alloc_shared((bm, dim), "float16")
            K_s = T.alloc_shared((bn, dim), "float16")
            V_s = T.alloc_shared((bn, dim), "float16")
            s = T.alloc_fragment((bm, bn), "float32")
            p = T.alloc_fragment((bm, bn), "float16")
            o = T.alloc_fragment((bm, dim), "float32")
            m = T.alloc_fragment((bm,), "float32")
            m_prev = T.alloc_fragment((bm,), "float32")
            l = T.alloc_fragment((bm,), "float32")
            ssum = T.alloc_fragment((bm,), "float32")
            T.copy(Q[bz, bx * bm:(bx + 1) * bm, by, :], Q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(seq, bn), num_stages=stages):
                T.copy(K[bz, k * bn:(k + 1) * bn, by, :], K_s)
                T.clear(s)
                T.gemm(Q_s, K_s, s, transpose_B=True, policy=T.GemmWarpPolicy.FullRow)
                T.copy(V[bz, k * bn:(k + 1) * bn, by, :], V_s)
                T.copy(m, m_prev)
                T.reduce_max(s, m, dim=1, clear=False)
                for i, j in T.Parallel(bm, bn):
                    s[i, j] = T.exp(s[i, j] - m[i])
                for i, j in T.Parallel(bm, dim):
                    o[i, j] *= T.exp(m_prev[i] - m[i])
                T.reduce_sum(s, ssum, dim=1)
                for i in T.Parallel(bm):
                    l[i] = l[i] * T.exp(m_prev[i] - m[i]) + ssum[i]
                T.copy(s, p)
                T.gemm(p, V_s, o, policy=T.GemmWarpPolicy.FullRow)
            for i, j in T.Parallel(bm, dim):
                o[i, j] /= l[i]
            T.copy(o, O[bz, bx * bm:(bx + 1) * bm, by, :])
    return main


def lower(func, arch="sm_90a", **configs):
    cfg = {"tl.target_arch": arch, **{k: str(v) for k, v in configs.items()}}
    lowered, remarks, dumps = _tl.lower_cuda(func.node, cfg, True)
    return _tl.codegen_cuda(lowered), list(remarks), dict(dumps)


def test_gemm_loop_orders_for_releasing_stages():
    # tl.ws_gemm_in_flight: k-tile k's wgmmas stay in flight while k + 1's are issued, and
    # stage k is released in iteration k + 1
    src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128), **{"tl.ws_gemm_in_flight": True})
    loop = src.code[src.code.index("for (int32_t k_1"):]
    assert loop.index("gemm_ss_wgmma_issue") < loop.index("tl::wgmma_wait_hold<1, 128>((&C_l[0]))") < \
        loop.index("if ((0 < k_1))") < loop.index("tl::mbarrier_arrive((&tl_ws_bars[(((k_1 + 2) % 3) + 3)]))")
    assert any("stay in flight" in r for r in remarks)
    # tl.ws_gemm_adaptive: the same when the stage has arrived; a late stage first drains
    # the wgmmas in flight and releases the previous stage, then waits
    src, _, _ = lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128), **{"tl.ws_gemm_adaptive": True})
    loop = src.code[src.code.index("for (int32_t k_1"):]
    test = "if (tl::mbarrier_test_wait_parity((&tl_ws_bars[(k_1 % 3)]), ((k_1 / 3) & 1))) {"
    assert loop.index(test) < loop.index("tl::wgmma_wait_hold<1, 128>") < loop.index("} else {") < \
        loop.index("tl::wgmma_wait_hold<0, 128>") < loop.index("tl::mbarrier_wait_parity((&tl_ws_bars[(k_1 % 3)])")
    assert loop.count("gemm_ss_wgmma_issue") == 2


def test_short_k_tiles_stay_in_flight_with_one_stage_more():
    # a k-tile of 128 x 128 x 32 fp16 is 256 tensor-core cycles: in flight by default, with
    # 3 + 1 stages (k-tile k's stage released in iteration k + 1, after k + 1's issue)
    f = gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128)
    src, remarks, _ = lower(f)
    said = [r for r in remarks if "stay in flight" in r]
    assert said and "256 tensor-core cycles" in said[0] and "num_stages: 4" in said[0], remarks
    assert any("warp-specialized, 4 stages" in r for r in remarks), remarks
    loop = src.code[src.code.index("for (int32_t k_1"):]
    assert loop.index("gemm_ss_wgmma_issue") < loop.index("tl::wgmma_wait_hold<1, 128>((&C_l[0]))") < \
        loop.index("tl::mbarrier_arrive((&tl_ws_bars[(((k_1 + 3) & 3) + 4)]))")
    # tl.ws_gemm_in_flight=False: the waited order and the source's stages
    src, remarks, _ = lower(f, **{"tl.ws_gemm_in_flight": False})
    assert not any("stay in flight" in r for r in remarks)
    assert any("warp-specialized, 3 stages" in r for r in remarks) and "wgmma_wait_hold<1" not in src.code
    # ... True: in flight, without the extra stage
    src, remarks, _ = lower(f, **{"tl.ws_gemm_in_flight": True})
    assert any("warp-specialized, 3 stages" in r for r in remarks) and "wgmma_wait_hold<1, 128>" in src.code
    # fp8 128 x 128 x 64: 256 cycles too (twice the fp16 rate)
    _, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 128, 64, stages=3, threads=128, dtype="float8_e4m3",
                               trans_b=True))
    assert any("256 tensor-core cycles" in r for r in remarks), remarks


def test_two_k_tiles_in_flight_on_request():
    # tl.ws_gemm_in_flight_depth=2: two k-tiles' wgmmas outstanding, stage k released in step
    # k + 2, and two stages more than the source's 3
    f = gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128)
    src, remarks, _ = lower(f, **{"tl.ws_gemm_in_flight_depth": 2})
    said = [r for r in remarks if "in flight" in r]
    assert said and "the wgmmas of 2 k-tiles stay in flight" in said[0] and "2 stages more than num_stages: 5" in said[0]
    loop = src.code[src.code.index("for (int32_t k_1"):]
    assert loop.index("gemm_ss_wgmma_issue") < loop.index("tl::wgmma_wait_hold<2, 128>((&C_l[0]))") < \
        loop.index("if ((2 <= k_1))") < loop.index("tl::mbarrier_arrive((&tl_ws_bars[(((k_1 + 3) % 5) + 5)]))")
    # forced with the source's 2 stages: a depth of 2 would never release a stage in time
    with pytest.raises(Exception, match=r"tl.ws_gemm_in_flight_depth 2 needs more than 2 stages; the loop has 2"):
        lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=2, threads=128),
              **{"tl.ws_gemm_in_flight": True, "tl.ws_gemm_in_flight_depth": 2})
    with pytest.raises(Exception, match=r"tl.ws_gemm_in_flight_depth must be an integer from 1 to 4, got '9'"):
        lower(f, **{"tl.ws_gemm_in_flight_depth": 9})


def test_two_k_tiles_in_flight_match_float64():
    # right on the CPU target (where the key means nothing), and on the GPU under
    # TILELANG_TEST_CUDA=1 (5 stages, two k-tiles in flight, on Hopper)
    rng = np.random.default_rng(11)
    a = rng.standard_normal((256, 512)).astype(np.float16)
    b = rng.standard_normal((512, 256)).astype(np.float16)
    c = np.full((256, 256), np.nan, np.float16)
    k = tilelang.compile(gemm(256, 256, 512, 128, 128, 32, stages=3, threads=128),
                         pass_configs={"tl.ws_gemm_in_flight_depth": 2})
    k(a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=0.5)


def test_long_k_tiles_and_full_shared_memory_keep_the_waited_order():
    # 128 x 256 x 64 fp16 on two warpgroups: 1024 cycles a k-tile, waited as upstream does
    src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 256, 64, stages=3, threads=256))
    assert not any("in flight" in r for r in remarks), remarks
    assert any("warp-specialized, 3 stages" in r for r in remarks) and "wgmma_wait_hold<1" not in src.code
    # 128 x 128 x 64 with 6 stages (192 KB): a seventh would not fit in 227 KB, and the remark says so
    src, remarks, _ = lower(gemm(1024, 1024, 2048, 128, 128, 64, stages=6, threads=256))
    said = [r for r in remarks if "would need one stage more" in r]
    assert said and "229376 bytes" in said[0], remarks
    assert any("warp-specialized, 6 stages" in r for r in remarks)


def test_a_loop_refused_later_says_nothing_of_the_in_flight_order():
    # the copies read `base`, which only the consumer threads compute: refused after the GEMM
    # order was decided, so the remarks speak of the cp.async pipeline only
    @T.prim_func
    def main(A: T.Tensor((1024, 1024), "float16"), B: T.Tensor((1024, 1024), "float16"),
             Idx: T.Tensor((8,), "int32"), C: T.Tensor((1024, 1024), "float16")):
        with T.Kernel(8, 8, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 32), "float16")
            B_s = T.alloc_shared((32, 128), "float16")
            i_s = T.alloc_shared((1,), "int32")
            C_l = T.alloc_fragment((128, 128), "float32")
            i_s[0] = Idx[by]
            base = i_s[0]
            T.clear(C_l)
            for k in T.Pipelined(32, num_stages=3):
                T.copy(A[base * 128, k * 32], A_s)
                T.copy(B[k * 32, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    _, remarks, _ = lower(main)
    assert any("depend on values computed by the consumer threads" in r for r in remarks), remarks
    assert not any("in flight" in r for r in remarks), remarks
    assert any("3-stage cp.async pipeline" in r for r in remarks), remarks


def test_extra_stages_for_the_in_flight_gemm_loop():
    # tl.ws_extra_stages: stages on top of the source's num_stages (an experiment for
    # tl.ws_gemm_in_flight, which holds one stage a step longer): 3 + 1 stages of tiles and
    # barrier pairs, the stage index k % 4
    f = gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128)
    src, remarks, _ = lower(f, **{"tl.ws_gemm_in_flight": True, "tl.ws_extra_stages": 1})
    assert any("warp-specialized, 4 stages" in r for r in remarks), remarks
    assert "tl::mbarrier_init((&tl_ws_bars[7]), 128);" in src.code and "(&tl_ws_bars[(k_1 & 3)])" in src.code
    assert "tl_ws_bars[8]" not in src.code
    src, remarks, _ = lower(f, **{"tl.ws_extra_stages": 0, "tl.ws_gemm_in_flight": False})
    assert any("warp-specialized, 3 stages" in r for r in remarks), remarks
    with pytest.raises(Exception, match=r"tl.ws_extra_stages must be an integer from 0 to 8, got 'two'"):
        lower(f, **{"tl.ws_extra_stages": "two"})


def test_extra_stages_gemm_matches_float64():
    # the same program with the keys: right on the CPU target (where they mean nothing), and
    # on the GPU under TILELANG_TEST_CUDA=1 (4 stages in flight on Hopper)
    rng = np.random.default_rng(7)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = np.full((256, 256), np.nan, np.float16)
    k = tilelang.compile(gemm(256, 256, 256, 128, 128, 32, stages=2, threads=128),
                         pass_configs={"tl.ws_gemm_in_flight": True, "tl.ws_extra_stages": 2})
    k(a, b, c)
    np.testing.assert_allclose(c.astype(np.float64), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-2, atol=0.5)


def test_consumer_registers_can_be_asked_for():
    f = gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128)
    # one consumer warpgroup takes 256 registers by default (two: 240, see below)
    src, remarks, _ = lower(f)
    assert "tl::warpgroup_reg_alloc<256>()" in src.code and any("registers 24/256" in r for r in remarks)
    src, remarks, _ = lower(f, **{"tl.ws_consumer_registers": 232})
    assert "tl::warpgroup_reg_alloc<232>()" in src.code and any("registers 24/232" in r for r in remarks)
    # what does not fit (or is no multiple of 8) is said, and the default stays
    src, remarks, _ = lower(f, **{"tl.ws_consumer_registers": 250})
    assert "tl::warpgroup_reg_alloc<256>()" in src.code
    assert any("tl.ws_consumer_registers=250 ignored: a multiple of 8 in [24, 256]" in r for r in remarks), remarks


@pytest.mark.parametrize("threads, most", [(128, 256), (256, 240), (384, 160), (512, 112)])
def test_consumers_ask_only_for_what_the_producer_releases(threads, most):
    # setmaxnreg.inc draws only on registers setmaxnreg.dec released: the block starts with
    # 65536 / all threads each (in units of 8, at most 255), the producer gives back all but
    # 24, and the consumers may grow by that much and no more (asking for more hangs them:
    # four consumer warpgroups at 120 did on the H100)
    at_launch = min(255, 65536 // (threads + 128)) // 8 * 8
    assert (most - at_launch) * threads <= (at_launch - 24) * 128 < (most + 8 - at_launch) * threads or most == 256
    src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=threads))
    assert f"tl::warpgroup_reg_alloc<{most}>()" in src.code and any(f"registers 24/{most}" in r for r in remarks)
    src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=threads),
                            **{"tl.ws_consumer_registers": most + 8})
    assert f"tl::warpgroup_reg_alloc<{most}>()" in src.code
    assert any(f"tl.ws_consumer_registers={most + 8} ignored" in r for r in remarks) or most == 256


def test_producer_is_one_warp_with_an_elected_lane():
    # The producer's loop runs in its first warp; one elected lane arms the barrier and
    # issues, and the descriptors are prefetched where the barriers are initialized.
    src, _, _ = lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128))
    code = src.code
    producer = code[code.index("if ((threadIdx.x >= 128))"):code.index("} else {")]
    assert "if ((threadIdx.x < 128 + 32))" in producer
    assert producer.index("mbarrier_wait_parity") < producer.index("if (tl::elect_one_sync())") < \
        producer.index("mbarrier_arrive_expect_tx") < producer.index("tl::tma_load_2d")
    init = code[code.index("if ((tx == 0))"):code.index("__syncthreads()")]
    assert init.count("tl::tma_prefetch_descriptor") == 2 and "mbarrier_init" in init
    old, _, _ = lower(gemm(1024, 1024, 1024, 128, 128, 32, stages=3, threads=128),
                      **{"tl.ws_single_thread_producer": True})
    assert "if ((threadIdx.x == 128))" in old.code and "elect_one_sync" not in old.code


def test_gemm_gets_a_tma_producer_warpgroup():
    src, remarks, dumps = lower(gemm(8192, 8192, 8192, stages=4))
    code = src.code
    # 256 consumer threads from the source plus one producer warpgroup, one block per SM.
    assert list(src.block) == [384, 1, 1]
    assert "__launch_bounds__(384, 1)" in code
    assert code.count("const __grid_constant__ tl::TmaDescriptor") == 3
    # A: one 64x128 box with the 128-byte swizzle; B: four 64x64 panels; C, stored through a
    # shared tile (cuda-stage-accumulator-stores): 64x128 panels.
    assert sorted(src.tma_specs) == [(0, 6, 2, [8192, 8192], [64, 128], 3), (1, 6, 2, [8192, 8192], [64, 64], 3),
                                     (2, 6, 2, [8192, 8192], [64, 128], 3)]
    assert len(re.findall(r"tl::tma_load_2d\(tl_tma_0", code)) == 1
    assert len(re.findall(r"tl::tma_load_2d\(tl_tma_1", code)) == 4
    # Full barriers expect the stage's bytes (128*64 + 64*256 halves), phases follow k.
    assert "tl::mbarrier_arrive_expect_tx((&tl_ws_bars[(k & 3)]), 49152)" in code
    assert "tl::mbarrier_wait_parity((&tl_ws_bars[((k & 3) + 4)]), (((k >> 2) + 1) & 1))" in code
    assert "tl::mbarrier_wait_parity((&tl_ws_bars[(k_1 & 3)]), ((k_1 >> 2) & 1))" in code
    assert "tl::mbarrier_init((&tl_ws_bars[4]), 256)" in code
    assert "tl::warpgroup_reg_dealloc<24>()" in code and "tl::warpgroup_reg_alloc<240>()" in code
    # The only block-wide barrier is the one after the mbarriers are initialized.
    assert code.count("__syncthreads()") == 1
    assert "cp_async" not in code
    # TMA fills both operands, so the wgmma skips its generic-to-async proxy fence; each
    # k-tile's wgmmas complete before its stage is released, so the producer refills it early.
    assert "tl::gemm_ss_wgmma_issue<128, 256, 64, false, false, false>" in code
    # the issue-and-wait form reads wgmma's panels too: every access to its tiles goes through them
    # (and C's staged tile, over B's bytes, in the panels its TMA store reads)
    tiles = [line for line in code.splitlines() if "reinterpret_cast<tl::half*>(tl_smem" in line]
    assert len(tiles) == 3 and all(line.endswith("// wgmma panels") for line in tiles), tiles
    loop = code[code.index("for (int32_t k_1"):]
    assert loop.index("gemm_ss_wgmma_issue") < loop.index("tl::wgmma_wait_hold<0, 128>((&C_l[0]))") < \
        loop.index("tl::mbarrier_arrive((&tl_ws_bars[((k_1 & 3) + 4)]))") < loop.index("tl::stmatrix_x4(")
    assert not any("stay in flight" in r for r in remarks)
    assert any("warp-specialized, 4 stages" in r and "49152 bytes per stage" in r for r in remarks)
    # The pass is visible on its own in the IR dump.
    ir = dumps["cuda-warp-specialize"]
    assert "ws_is_producer(256)" in ir and "tma_load(" in ir and "mbarrier_arrive(" in ir


def test_attention_consumers_use_named_barriers():
    # (the loop as written: tl.ws_softmax_overlap, test_ws_softmax_overlap.py, reorders it)
    src, remarks, _ = lower(attention(2, 4, 1024, 128), **NO_OVERLAP)
    code = src.code
    assert any("warp-specialized, 2 stages" in r and "loads 1 tile(s) before the loop with TMA (Q_s)" in r
               for r in remarks), remarks
    # Q, K and V are 4-D tensors: boxes of 64 x 1 x 128 x 1, two panels each; so is O, stored
    # through a shared tile (cuda-stage-accumulator-stores).
    assert sorted(src.tma_specs) == [(i, 6, 2, [128, 4, 1024, 2], [64, 1, 128, 1], 3) for i in range(4)]
    consumer = code[code.index("} else {"):]
    assert "__syncthreads" not in consumer
    # By default K and V share one barrier pair: awaited before Q*K^T, released after P*V;
    # the producer loads Q once, before its loop, through a barrier of its own.
    producer = code[code.index("tl::warpgroup_reg_dealloc"):code.index("} else {")]
    assert producer.count("tl::mbarrier_arrive_expect_tx(") == 2 and "65536)" in producer
    assert producer.index("tl::mbarrier_arrive_expect_tx((&tl_ws_bars[4]), 32768)") < producer.index("for (int32_t k")
    # The staged tiles and Q come from TMA: no wgmma in the loop needs a proxy fence, and the
    # consumers only wait for Q's barrier before the loop (no block-wide barrier).
    assert "tl::gemm_ss_wgmma<128, 128, 128, false, true, false>" in consumer
    assert "tl::gemm_rs_wgmma<128, 128, 128, false, false>" in consumer
    assert consumer.index("tl::mbarrier_wait_parity((&tl_ws_bars[4]), 0)") < consumer.index("for (int32_t k_1")
    loop = consumer[consumer.index("for (int32_t k_1"):]
    assert "named_barrier_sync" not in loop[:loop.index("tl::mbarrier_arrive(")]


def test_consumers_stage_q_themselves_when_asked():
    src, remarks, _ = lower(attention(2, 4, 1024, 128), **{"tl.ws_consumer_prologue": True})
    consumer = src.code[src.code.index("} else {"):]
    # (K, V and the store of O)
    assert len(src.tma_specs) == 3 and not any("before the loop with TMA" in r for r in remarks)
    # The Q tile the consumers stage before the loop is fenced and synchronized once.
    assert consumer.index("tl::fence_proxy_async_shared()") < consumer.index("tl::named_barrier_sync(1, 256)") < \
        consumer.index("for (int32_t k_1")


def test_barrier_groups_release_k_early_when_asked():
    src, remarks, _ = lower(attention(2, 4, 1024, 128), **{"tl.ws_barrier_groups": True}, **NO_OVERLAP)
    consumer = src.code[src.code.index("} else {"):]
    assert src.code.count("tl::mbarrier_arrive_expect_tx(") == 3  # K, V and (before the loop) Q
    qk = consumer.index("tl::gemm_ss_wgmma")
    pv = consumer.index("tl::gemm_rs_wgmma")
    releases = [m.start() for m in re.finditer(r"tl::mbarrier_arrive\(", consumer)]
    loop = consumer.index("for (int32_t k_1")  # (before it: the wait for Q)
    waits = [m.start() + loop for m in re.finditer(r"tl::mbarrier_wait_parity\(", consumer[loop:])]
    assert len(releases) == 2 and qk < releases[0] < pv < releases[1]
    assert len(waits) == 2 and waits[0] < qk < waits[1] < pv
    assert any("2 mbarrier full/empty pair(s)" in r for r in remarks)


def test_one_stage_attention_loads_v_while_the_softmax_runs():
    # One stage: K and V get barrier pairs of their own, so the producer loads V during
    # Q*K^T and the softmax, and the next K during P*V (as upstream does at num_stages=1).
    src, remarks, _ = lower(attention(1, 32, 256, 128, stages=1, threads=128), **NO_OVERLAP)
    code = src.code
    assert list(src.block) == [256, 1, 1]
    assert any("warp-specialized, 1 stages" in r and "2 mbarrier full/empty pair(s)" in r for r in remarks)
    producer = code[code.index("tl::warpgroup_reg_dealloc"):code.index("} else {")]
    assert producer.count("tl::mbarrier_arrive_expect_tx(") == 3  # K, V and (before the loop) Q
    # each pair's parity flips every iteration: one stage, so the round is k itself
    assert "tl::mbarrier_wait_parity((&tl_ws_bars[2]), ((k + 1) & 1))" in producer
    consumer = code[code.index("} else {"):]
    qk, pv = consumer.index("tl::gemm_ss_wgmma"), consumer.index("tl::gemm_rs_wgmma")
    assert qk < consumer.index("tl::mbarrier_arrive((&tl_ws_bars[2]))") < pv
    assert consumer.index("tl::mbarrier_wait_parity((&tl_ws_bars[1]), k_1)") < pv


def test_dynamic_rows_come_from_the_launch_arguments():
    M = T.dynamic("M")
    src, remarks, _ = lower(gemm(M, 1024, 512))
    specs = {s[0]: s for s in src.tma_specs}
    # A is (M, 512): its outer dimension is launch argument 3 (after A, B, C), encoded as -(3 + 1).
    assert specs[0][3] == [512, -4]
    assert any("warp-specialized" in r for r in remarks)


@pytest.mark.parametrize("why, func, configs", [
    ("the target is sm_80", gemm(1024, 1024, 1024), {"arch": "sm_80"}),
    ("switched off", gemm(1024, 1024, 1024), {"tl.disable_warp_specialized": True}),
    ("switched off (tma)", gemm(1024, 1024, 1024), {"tl.disable_tma_lower": True}),
    ("rows not 16-byte multiples", gemm(1024, 1024, 1003), {}),
    ("one stage", gemm(1024, 1024, 1024, stages=1), {}),
    ("ldmatrix operands", gemm(1024, 1024, 1024, bm=128, bn=128, bk=16, threads=128), {}),
])
def test_fallbacks_keep_the_cp_async_pipeline_and_say_why(why, func, configs):
    arch = configs.pop("arch", "sm_90a")
    src, remarks, _ = lower(func, arch, **configs)
    assert "tma_load" not in src.code and "ws_is_producer" not in src.code
    assert list(src.block)[0] in (128, 256)
    text = "\n".join(remarks)
    if arch != "sm_90a":
        assert "warp-specialized" not in text
    elif "switched off" in why:
        assert "warp specialization is off" in text
    elif "16-byte" in why:
        assert "not warp-specialized (T.copy into A_s cannot use TMA: the tensor's rows are not a multiple of 16 bytes)" \
            in text
    elif "one stage" in why:
        assert "not warp-specialized (one stage, and every load feeds the same statements: nothing to overlap)" \
            in text
    else:
        assert re.search(r"not warp-specialized \(tile [AB]_s is an ldmatrix-swizzled operand", text), text


def test_transposed_b_loads_k_major_panels():
    src, remarks, _ = lower(gemm(2048, 2048, 2048, trans_b=True))
    assert any("warp-specialized" in r for r in remarks)
    # B is (N, K) with a (256, 64) tile: one box of 64 (K) x 256 (N rows).
    assert (1, 6, 2, [2048, 2048], [64, 256], 3) in src.tma_specs


@pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")
def test_warp_specialized_gemm_compiles_without_spills():
    k = tilelang.compile(gemm(8192, 8192, 8192, stages=4), target="cuda -arch=sm_90a")
    usage = k._cuda.resource_usage
    if usage.get("registers") is not None:
        assert usage["spill_stores_bytes"] == 0 and usage["spill_loads_bytes"] == 0
        # setmaxnreg moves registers within the block's allocation: 384 threads x 168.
        assert usage["registers"] == 168


def test_tiles_allocated_in_the_loop_body_still_specialize():
    # hoisted before the loop, they must not hide the loop from warp specialization
    src, remarks, _ = lower(gemm(1024, 1024, 1024, 128, 128, 64, threads=128, tiles_in_loop=True))
    assert "tl::tma_load_2d" in src.code and "cp_async" not in src.code
    # (3 stages and one more: the k-tiles stay in flight, test_short_k_tiles_stay_in_flight)
    assert any("warp-specialized, 4 stages" in r for r in remarks), remarks


@pytest.mark.parametrize("M, N, K", [(256, 512, 128), (200, 300, 72)])
@pytest.mark.parametrize("tiles_in_loop", [False, True])
def test_same_source_runs_on_the_cpu(M, N, K, tiles_in_loop):
    k = tilelang.compile(gemm(M, N, K, bm=64, bn=64, bk=64, threads=128, tiles_in_loop=tiles_in_loop), out_idx=[2],
                         target="cpu")
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = k(a, b)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c.astype(np.float64), ref, rtol=2e-2, atol=2e-1)


def test_fewer_k_tiles_than_stages_still_specialize():
    # K = 40: one k-tile (zero-filled past 40 by TMA) against 4 stages; both roles run the
    # same trip count, so the phases stay consistent.
    src, remarks, _ = lower(gemm(256, 512, 40, stages=4))
    assert any("warp-specialized, 4 stages" in r for r in remarks)
    # The single iteration is unrolled away: one set of loads, one wait, one release.
    assert src.code.count("tl::tma_load_2d(") == 5
    assert src.code.count("tl::mbarrier_arrive_expect_tx(") == 1
    assert "tl::wgmma_wait_hold<0, 128>" in src.code


@pytest.mark.parametrize("M, N, K", [(256, 512, 40), (130, 200, 72)])
def test_short_and_ragged_sources_run_on_the_cpu(M, N, K):
    k = tilelang.compile(gemm(M, N, K, bm=64, bn=64, bk=64, threads=128, stages=4), out_idx=[2], target="cpu")
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(k(a, b).astype(np.float64), ref, rtol=2e-2, atol=2e-1)


def test_environment_pass_configs_sit_beneath_the_kernels_own(monkeypatch):
    # TILELANG_PASS_CONFIGS: defaults for programs one cannot edit (A/B runs of upstream's examples)
    monkeypatch.setenv("TILELANG_PASS_CONFIGS", "tl.disable_warp_specialized=1, tl.ws_barrier_groups=0")
    k = tilelang.compile(gemm(1024, 1024, 1024), target="cuda -arch=sm_90a")
    assert any("warp specialization is off" in r for r in k.get_remarks())
    # the kernel's own pass_configs win
    k = tilelang.compile(gemm(1024, 1024, 1024), target="cuda -arch=sm_90a",
                         pass_configs={"tl.disable_warp_specialized": False})
    assert any("warp-specialized" in r and "not" not in r.split("warp-specialized")[0] for r in k.get_remarks())
    monkeypatch.setenv("TILELANG_PASS_CONFIGS", "tl.disable_warp_specialized")
    with pytest.raises(ValueError, match="expected key=value items"):
        tilelang.compile(gemm(1024, 1024, 1024), target="cuda -arch=sm_90a")
