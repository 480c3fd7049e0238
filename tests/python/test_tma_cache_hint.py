"""tl.tma_cache_hint: the L2 cache policy every TMA load of a kernel carries (none by
default; evict_normal is what upstream's loads carry). The generated code is checked without
a GPU; with TILELANG_TEST_CUDA=1 the hinted kernel also runs on the GPU against numpy (the
same source runs on the CPU target, where the key means nothing)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import rand

SM90 = "cuda -arch=sm_90a"


def gemm(M=256, N=256, K=256, bm=128, bn=128, bk=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            a = T.alloc_shared((bm, bk), "float16")
            b = T.alloc_shared((bn, bk), "float16")
            c = T.alloc_fragment((bm, bn), "float32")
            T.clear(c)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], a)
                T.copy(B[bx * bn, k * bk], b)
                T.gemm(a, b, c, transpose_B=True)
            T.copy(c, C[by * bm, bx * bn])
    return main


@pytest.mark.parametrize("hint, template", [("evict_normal", "kEvictNormal"), ("evict_first", "kEvictFirst"),
                                            ("evict_last", "kEvictLast")])
def test_sm90_tma_loads_carry_the_hint(hint, template):
    src = tilelang.compile(gemm(), target=SM90, pass_configs={"tl.tma_cache_hint": hint}).get_kernel_source()
    loads = [line for line in src.splitlines() if "tl::tma_load_2d" in line]
    assert len(loads) == 2 and all(f"tl::tma_load_2d<tl::L2Hint::{template}>(" in line for line in loads), loads


@pytest.mark.parametrize("configs", [{}, {"tl.tma_cache_hint": "none"}])
def test_sm90_tma_loads_without_a_hint_by_default(configs):
    src = tilelang.compile(gemm(), target=SM90, pass_configs=configs).get_kernel_source()
    assert src.count("tl::tma_load_2d(") == 2 and "L2Hint" not in src


def test_tma_cache_hint_refuses_an_unknown_policy():
    with pytest.raises(Exception, match=r"tl.tma_cache_hint must be one of none, evict_normal, evict_first, "
                                        r"evict_last, got 'evict_sometimes'"):
        tilelang.compile(gemm(), target=SM90, pass_configs={"tl.tma_cache_hint": "evict_sometimes"})


def test_hinted_gemm_matches_float64():
    # on the CPU target the key is accepted and changes nothing; on CUDA (TILELANG_TEST_CUDA=1)
    # the loads carry the hint
    rng = np.random.default_rng(11)
    a, b = rand(rng, (256, 256), "float16"), rand(rng, (256, 256), "float16")
    c = np.full((256, 256), np.nan, np.float32)
    tilelang.compile(gemm(), pass_configs={"tl.tma_cache_hint": "evict_last"})(a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-3, atol=1e-2)
