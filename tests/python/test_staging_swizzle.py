"""Staging tiles in the XOR-rows swizzle (tl.enable_staging_swizzle, shared_plan.h StagingTiles):
a shared tile no GEMM reads, reached only by element accesses and copy helpers of at most 16
bytes, is swizzled so that an epilogue's warp storing 8 rows at one column hits 8 bank groups.
Every access goes through codegen's offsets, so results are those of the plain layout: checked
against numpy on whichever target the suite runs (on the CUDA run, with and without the
swizzle), and the choice itself from the generated code (compile-only, sm_90a)."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison


def gemm_through_staging(M=128, N=128, K=64, transposed_out=False):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16"),
             Ct: T.Tensor((N, M), "float16")):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((M, K), "float16")
            b_s = T.alloc_shared((K, N), "float16")
            c_s = T.alloc_shared((M, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc)
            T.copy(acc, c_s)  # register fragment -> staging tile (column pairs per thread)
            T.copy(c_s, C)  # staging tile -> global (16-byte rows)
            for i, j in T.Parallel(M, N):  # element reads down the columns
                Ct[j, i] = c_s[i, j]

    return main


@pytest.mark.parametrize("swizzle", [False, True], ids=["plain", "xor_rows"])
def test_results_do_not_depend_on_the_staging_layout(swizzle):
    rng = np.random.default_rng(int(swizzle))
    a = rng.standard_normal((128, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    c, ct = poison((128, 128), "float16"), poison((128, 128), "float16")
    compile_cpu(gemm_through_staging(), pass_configs={"tl.enable_staging_swizzle": swizzle})(a, b, c, ct)
    want = f64(a) @ f64(b)
    assert_close(c, want, dtype="float16")
    assert_close(ct, want.T, dtype="float16")


def _hopper(func, swizzle=None):
    from tilelang import _tl
    # threads' stores: a tile stored whole by TMA (the default on sm_90) takes wgmma's panels
    configs = {"tl.target_arch": "sm_90a", "tl.auto_tma_store": "0"}
    if swizzle is not None:  # None: the default
        configs["tl.enable_staging_swizzle"] = "1" if swizzle else "0"
    lowered, remarks, _ = _tl.lower_cuda(func.node, configs, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def test_staging_tile_is_swizzled_when_enabled():
    code, remarks = _hopper(gemm_through_staging(), True)
    assert "c_s = reinterpret_cast<tl::half*>(tl_smem" in code and "XOR-swizzled staging tile" in code, code
    assert any("c_s XOR-swizzled (staging tiles" in r for r in remarks), remarks
    # the GEMM's operands keep their own (wgmma panel) layouts and are not staging tiles
    assert not any("a_s" in r and "staging" in r for r in remarks)
    code, remarks = _hopper(gemm_through_staging(), False)
    assert "XOR-swizzled staging tile" not in code


def test_staging_swizzle_is_on_by_default():
    code, remarks = _hopper(gemm_through_staging())
    assert "XOR-swizzled staging tile" in code and any("c_s XOR-swizzled (staging tiles" in r for r in remarks)


def test_one_byte_tiles_stay_plain():
    """Byte tiles (dequantization's packed weights) keep the plain layout: a warp's consecutive
    bytes share banks without conflict, and the element loops would pay the XOR."""

    @T.prim_func
    def main(A: T.Tensor((64, 128), "int8"), B: T.Tensor((64, 128), "int8")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 128), "int8")
            T.copy(A, s)
            for i, j in T.Parallel(64, 128):
                B[i, j] = s[i, j] + 1

    code, remarks = _hopper(main, True)
    assert "XOR-swizzled" not in code and not any("staging" in r for r in remarks), remarks


def test_tiles_whose_rows_do_not_swizzle_stay_plain():
    """Rows of 48 bytes are not a power of two: no XOR-rows layout for them."""

    @T.prim_func
    def main(A: T.Tensor((64, 24), "float16"), B: T.Tensor((64, 24), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 24), "float16")
            T.copy(A, s)
            T.copy(s, B)

    code, remarks = _hopper(main, True)
    assert "XOR-swizzled" not in code and not any("staging" in r for r in remarks), remarks
