"""`tl.stmatrix_stores` (off by default: see fragment_tile_ops.cc): an mma accumulator copied
whole into a 16-bit shared tile is stored with stmatrix.x4 on sm_90 (8 elements per lane per
instruction), each lane giving the row start MmaAccumulatorLayout::StmatrixRowStart says
(checked against the layout for every lane in tests/cpp/fragment_layout_test.cc). Results
checked against numpy in float64 with the key on (on the CPU target, which ignores it, and on
CUDA in the suite's CUDA run); the choice read from the sm_90a / sm_80 source."""
import pytest

import tilelang.language as T
from tilelang import _tl

from conftest import assert_close, compile_cpu, f64, poison, rand

ON = {"tl.stmatrix_stores": True}


def gemm_via_shared(M=64, N=64, K=64, threads=128, dtype="float16"):
    """C = A @ B, the accumulator stored to a shared tile, then copied out."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((K, N), dtype)
            C_s = T.alloc_shared((M, N), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.gemm(A_s, B_s, acc)
            T.copy(acc, C_s)
            T.copy(C_s, C)

    return main


def source(func, arch="sm_90a", on=None, **configs):
    """The CUDA source and remarks of `func` for `arch` with `configs`, the key as it is by
    default (on=None), or set on or off."""
    config = {"tl.target_arch": arch, **configs}
    if on is not None:
        config["tl.stmatrix_stores"] = "1" if on else "0"
    lowered, remarks, _ = _tl.lower_cuda(func.node, config, False)
    return _tl.codegen_cuda(lowered).code, remarks


def test_accumulator_to_shared_takes_stmatrix_on_sm90():
    src, remarks = source(gemm_via_shared())
    calls = [ln.strip() for ln in src.splitlines() if "tl::stmatrix_x4(" in ln]
    assert len(calls) == 1 and "(&acc[(g * 8)])" in calls[0], calls
    assert any("stmatrix.x4" in r for r in remarks)
    assert "cast_copy" not in src.split("tl::stmatrix_x4")[1].split("tl::copy")[0]


@pytest.mark.parametrize("arch,on", [("sm_90a", False), ("sm_80", True), ("sm_80", None)])
def test_off_with_the_key_and_before_sm90(arch, on):
    src, _ = source(gemm_via_shared(), arch=arch, on=on)
    assert "tl::stmatrix_x4" not in src and "tl::cast_copy" in src


def test_eight_columns_per_warp_keep_element_stores():
    # 4 warps along N of a 64-column accumulator: each warp holds one 16x8 tile per row block,
    # no pair of tiles for a stmatrix.x4
    @T.prim_func
    def main(A: T.Tensor((16, 32), "float16"), B: T.Tensor((32, 32), "float16"), C: T.Tensor((16, 32), "float16")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((16, 32), "float16")
            B_s = T.alloc_shared((32, 32), "float16")
            C_s = T.alloc_shared((16, 32), "float16")
            acc = T.alloc_fragment((16, 32), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(acc)
            T.gemm(A_s, B_s, acc)
            T.copy(acc, C_s)
            T.copy(C_s, C)

    src, _ = source(main)
    assert "tl::stmatrix_x4" not in src


@pytest.mark.parametrize("M,N,threads,dtype", [(64, 64, 128, "float16"), (128, 128, 256, "bfloat16"),
                                               (64, 256, 256, "float16")])
def test_products_through_stmatrix_match_float64(rng, M, N, threads, dtype):
    a, b = rand(rng, (M, 64), dtype), rand(rng, (64, N), dtype)
    c = poison((M, N), dtype)
    compile_cpu(gemm_via_shared(M, N, 64, threads, dtype), pass_configs=ON)(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype)


def second_warpgroup_gemm(M=64, N=64, K=64, dtype="float16"):
    """The block's second warpgroup multiplies (its accumulator held by threads 128..255 only)
    and stores the product through a shared tile."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared((K, N), dtype)
            C_s = T.alloc_shared((M, N), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            tx = T.get_thread_binding()
            if tx >= 128:
                T.clear(acc)
                T.gemm(A_s, B_s, acc)
                T.copy(acc, C_s)
            T.copy(C_s, C)

    return main


def test_range_held_accumulator_stores_from_its_own_warps(rng):
    src, remarks = source(second_warpgroup_gemm())
    assert src.count("tl::stmatrix_x4(") == 1
    assert any("threads 128..255" in r and "stmatrix.x4" in r for r in remarks), remarks
    a, b = rand(rng, (64, 64), "float16"), rand(rng, (64, 64), "float16")
    c = poison((64, 64), "float16")
    compile_cpu(second_warpgroup_gemm(), pass_configs=ON)(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")


NO_TMA_STORE = {"tl.stmatrix_stores": True, "tl.auto_tma_store": False}


def test_a_staging_tile_keeps_its_xor_swizzle_under_stmatrix():
    # stored by the threads (no TMA store): the staging tile is XOR-swizzled in 16-byte
    # chunks, which keeps each lane's 16-byte stmatrix row together, so the tile takes both
    src, remarks = source(gemm_via_shared(128, 128, 64, 128), **{"tl.auto_tma_store": "0"})
    assert src.count("tl::stmatrix_x4(") == 1, src
    assert "C_s = reinterpret_cast<tl::half*>(tl_smem" in src and "XOR-swizzled staging tile" in src, src
    assert any("C_s XOR-swizzled (staging tiles" in r for r in remarks), remarks


@pytest.mark.parametrize("M,N,threads", [(128, 128, 128), (64, 256, 256)])
def test_products_through_stmatrix_into_a_staging_tile_match_float64(rng, M, N, threads):
    a, b = rand(rng, (M, 64), "float16"), rand(rng, (64, N), "float16")
    c = poison((M, N), "float16")
    compile_cpu(gemm_via_shared(M, N, 64, threads), pass_configs=NO_TMA_STORE)(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")
