"""T.tma_copy of part of a tile: a run of whole rows (a row per warp with
`leader_scope_threads=32`, each warp's first thread issuing its own rows onto its own
barrier), and one row longer than a TMA box (several boxes side by side). Values on the CPU
target (and on CUDA with TILELANG_TEST_CUDA=1); the TMA code for sm_90a checked as text."""
import numpy as np
import pytest

import tilelang.language as T
from tilelang import _tl

from conftest import compile_cpu, f64, poison, rand


def cuda(func):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    src = _tl.codegen_cuda(lowered)
    return src.code, list(remarks), src.tma_specs


def row_per_warp(M, K, threads=256, dtype="float32"):
    """Each warp loads its own row of A into its row of the tile, on its own barrier."""
    nw = threads // 32

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((M, K), dtype)):
        with T.Kernel(T.ceildiv(M, nw), threads=threads) as pid:
            tid = T.get_thread_binding()
            w = tid // 32
            s = T.alloc_shared((nw, K), dtype)
            mbars = T.alloc_barrier([32] * nw)
            T.tma_copy(A[pid * nw + w, 0:K], s[w, 0:K], barrier=mbars[w], leader_scope_threads=32)
            T.mbarrier_arrive(mbarrier=mbars[w])
            T.mbarrier_wait_parity(mbarrier=mbars[w], parity=0)
            for j in T.serial(K // 32):
                B[pid * nw + w, j * 32 + tid % 32] = s[w, j * 32 + tid % 32] * 2

    return main


def one_long_row(M, K, threads=128, dtype="float32"):
    """The whole block loads one row of K > 256 elements (one thread issues every box)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((M, K), dtype)):
        with T.Kernel(M, threads=threads) as row:
            tid = T.get_thread_binding()
            s = T.alloc_shared((1, K), dtype)
            bar = T.alloc_barrier([threads])
            T.tma_copy(A[row, 0:K], s[0, 0:K], barrier=bar)
            T.mbarrier_arrive(mbarrier=bar)
            T.mbarrier_wait_parity(mbarrier=bar, parity=0)
            for j in T.serial(T.ceildiv(K, threads)):
                if j * threads + tid < K:
                    B[row, j * threads + tid] = s[0, j * threads + tid] + 1

    return main


def whole_tile_per_warp(M=64, K=64, threads=128):
    """Every warp loads the same whole tile onto its own barrier (upstream's per-scope
    meaning: each group's leader issues the copy it sees), then reads its own rows."""
    nw = threads // 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((M, K), "float32")):
        with T.Kernel(1, threads=threads) as _:
            tid = T.get_thread_binding()
            w = tid // 32
            s = T.alloc_shared((M, K), "float32")
            mbars = T.alloc_barrier([32] * nw)
            T.tma_copy(A, s, barrier=mbars[w], leader_scope_threads=32)
            T.mbarrier_arrive(mbarrier=mbars[w])
            T.mbarrier_wait_parity(mbarrier=mbars[w], parity=0)
            for r in T.serial(M // nw):
                B[w * (M // nw) + r, tid % 32] = s[w * (M // nw) + r, tid % 32]
                B[w * (M // nw) + r, 32 + tid % 32] = s[w * (M // nw) + r, 32 + tid % 32]

    return main


@pytest.mark.parametrize("M,K", [(32, 1024), (16, 96)])
def test_row_per_warp_values(rng, M, K):
    a = rand(rng, (M, K))
    b = poison((M, K))
    compile_cpu(row_per_warp(M, K))(a, b)
    np.testing.assert_array_equal(f64(b), f64(a) * 2)


@pytest.mark.parametrize("K", [1024, 768, 320])
def test_one_long_row_values(rng, K):
    a = rand(rng, (4, K))
    b = poison((4, K))
    compile_cpu(one_long_row(4, K))(a, b)
    np.testing.assert_array_equal(b, a + np.float32(1))  # (one float32 rounding, as the kernel)


def test_whole_tile_per_warp_values(rng):
    a = rand(rng, (64, 64))
    b = poison((64, 64))
    compile_cpu(whole_tile_per_warp())(a, b)
    np.testing.assert_array_equal(b, a)


def test_each_warp_leader_issues_its_own_row():
    code, remarks, specs = cuda(row_per_warp(32, 1024))
    assert "if (((tx & 31) == 0)) {" in code, code
    # one row of 1024 floats: four 256-element boxes side by side, all on the warp's barrier
    assert "tl::mbarrier_expect_tx((&mbars[w]), 4096);" in code, code
    for k in range(4):
        assert f"tl::tma_load_2d(tl_tma_0, (&s[((w * 1024) + {k * 256})]), (&mbars[w]), {k * 256}, " in code \
            or (k == 0 and "tl::tma_load_2d(tl_tma_0, (&s[(w * 1024)]), (&mbars[w]), 0, " in code), code
    assert [s[4] for s in specs] == [[256, 1]], specs
    assert any("issued by the first thread of each 32" in r for r in remarks), remarks


def test_whole_tile_per_warp_is_loaded_by_each_warp_leader():
    code, remarks, _ = cuda(whole_tile_per_warp())
    assert "if (((tx & 31) == 0)) {" in code and "tl::mbarrier_expect_tx((&mbars[w]), 16384);" in code, code


def test_a_long_row_is_several_boxes():
    code, _, specs = cuda(one_long_row(4, 768))
    assert code.count("tl::tma_load_2d(") == 3 and "tl::mbarrier_expect_tx((&bar[0]), 3072);" in code, code
    assert [s[4] for s in specs] == [[256, 1]], specs


def test_leader_scope_must_divide_the_block():
    with pytest.raises(Exception, match="leader_scope_threads=96 does not divide the block's 128 threads"):
        @T.prim_func
        def main(A: T.Tensor((8, 64), "float32")):
            with T.Kernel(1, threads=128) as _:
                s = T.alloc_shared((8, 64), "float32")
                bar = T.alloc_barrier([128])
                T.tma_copy(A, s, barrier=bar, leader_scope_threads=96)
                T.mbarrier_arrive(mbarrier=bar)
                T.mbarrier_wait_parity(mbarrier=bar, parity=0)

        cuda(main)


def test_rows_of_a_panel_tile_from_an_unaligned_row_are_refused():
    """A wgmma-panel tile's boxes start on 8-row atoms: rows from row 4 are not a box."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a_s = T.alloc_shared((64, 64), "float16")
            b_s = T.alloc_shared((64, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            bar = T.alloc_barrier([128])
            T.tma_copy(A[4:64, :], a_s[4:64, :], barrier=bar)
            T.copy(B, b_s)
            T.mbarrier_arrive(mbarrier=bar)
            T.mbarrier_wait_parity(mbarrier=bar, parity=0)
            T.gemm(a_s, b_s, c, clear_accum=True)
            T.copy(c, C)

    with pytest.raises(Exception, match="do not start on a 128-byte boundary of the tile"):
        cuda(main)
