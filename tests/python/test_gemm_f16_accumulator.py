"""T.gemm of float16 tiles into a float16 accumulator. On CUDA the tensor cores take it
(mma.sync m16n8k16 with .f16 accumulation, tl::mma_tile's half branch), on by default since
an H200 run checked it; with the pass config tl.mma_f16_accumulators=0 the same accumulator
layout is filled by per-thread multiply-add loops, and the remark says which. On Hopper
wgmma takes it (.f16.f16.f16, half the accumulator registers: templates/tl/cuda/
wgmma_f16_acc.h) unless tl.wgmma_f16_accumulators=0 sends it to mma.sync.
Values against float64 on the target the suite runs (the CPU target sums each call's K
products in float and rounds once; the tensor cores round every 16: both within float16's
tolerance for these sizes)."""
import numpy as np
import pytest

import tilelang
import test_gemm
from conftest import assert_close, f64, poison

ON = {"tl.mma_f16_accumulators": True}
OFF = {"tl.mma_f16_accumulators": False, "tl.wgmma_f16_accumulators": False}
NO_WGMMA = {"tl.wgmma_f16_accumulators": False}


def f16_gemm(trans_a=False, trans_b=False):
    """C (128 x 128) = A B in 64 x 64 x 32 tiles, float16 in, float16 accumulated (test_gemm's
    kernel, as a @T.prim_func to compile for any target)."""
    return test_gemm.gemm_kernel.func(128, 128, 64, 64, 64, 32, "float16", "float16", trans_a, trans_b, 2, 128)


def gemm_remark(kernel):
    found = [r for r in kernel.get_remarks() if r.startswith("T.gemm")]
    assert len(found) == 1, kernel.get_remarks()
    return found[0]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_turned_off_the_loops_take_it_and_say_why(arch):
    kernel = tilelang.compile(f16_gemm(), target=f"cuda -arch={arch}", pass_configs=OFF)
    remark = gemm_remark(kernel)
    assert "multiply-add loops, no tensor cores (a float16 accumulator for float16 operands" in remark, remark
    assert "tl.mma_f16_accumulators=0" in remark, remark


def test_on_by_default_mma_sync_before_hopper():
    remark = gemm_remark(tilelang.compile(f16_gemm(), target="cuda -arch=sm_80"))
    assert "ldmatrix + mma.sync m16n8k16" in remark and "no tensor cores" not in remark, remark


@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_on_hopper_wgmma_accumulates_in_float16(trans_a, trans_b):
    kernel = tilelang.compile(f16_gemm(trans_a=trans_a, trans_b=trans_b), target="cuda -arch=sm_90a")
    remark = gemm_remark(kernel)
    assert "wgmma m64n64k16 from shared memory" in remark, remark
    src = kernel.get_kernel_source()
    # the accumulator stays float16: the wgmma templates take it as tl::half (two per register)
    assert "alignas(16) tl::half C_f[" in src and "tl::gemm_ss_wgmma" in src, src
    assert "tl::gemm_ss<" not in src


def test_on_hopper_the_key_sends_it_to_mma_sync():
    remark = gemm_remark(tilelang.compile(f16_gemm(), target="cuda -arch=sm_90a", pass_configs=NO_WGMMA))
    assert "ldmatrix + mma.sync m16n8k16" in remark, remark
    assert "tl.wgmma_f16_accumulators=0" in remark, remark


def test_on_hopper_a_warpgroup_n_not_a_multiple_of_16_takes_mma_sync():
    # B as N x K (K-major) lets wgmma take N = 24 in float32; a float16 accumulator's
    # instructions come in widths of 16 columns only
    main = test_gemm.gemm_kernel.func(64, 48, 64, 64, 24, 64, "float16", "float16", False, True, 2, 128)
    remark = gemm_remark(tilelang.compile(main, target="cuda -arch=sm_90a"))
    assert "ldmatrix + mma.sync m16n8k16" in remark, remark
    assert "N a multiple of 16 (here 24)" in remark, remark


@pytest.mark.parametrize("arch,configs", [("sm_80", ON), ("sm_90a", dict(ON, **NO_WGMMA))])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_with_the_key_the_tensor_cores_take_it(arch, configs, trans_a, trans_b):
    kernel = tilelang.compile(f16_gemm(trans_a=trans_a, trans_b=trans_b), target=f"cuda -arch={arch}",
                              pass_configs=configs)
    remark = gemm_remark(kernel)
    assert "ldmatrix + mma.sync m16n8k16" in remark and "no tensor cores" not in remark, remark
    if arch == "sm_90a":
        assert "not wgmma" in remark, remark
    assert "tl::gemm_ss<" in kernel.get_kernel_source()


def test_bfloat16_into_bfloat16_stays_in_the_loops():
    # mma.sync has no bfloat16 accumulator: the key does not apply
    main = test_gemm.gemm_kernel.func(64, 64, 32, 64, 64, 32, "bfloat16", "bfloat16", False, False, 2, 128)
    remark = gemm_remark(tilelang.compile(main, target="cuda -arch=sm_80", pass_configs=ON))
    assert "no tensor cores (a bfloat16 accumulator for bfloat16 operands)" in remark, remark


@pytest.mark.parametrize("configs", [{"tl.mma_f16_accumulators": False}, {}, NO_WGMMA],
                         ids=["loops", "default", "mma_sync"])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, True)])
def test_values_match_float64(configs, trans_a, trans_b):
    # on an H200 "default" is wgmma with float16 accumulators, "mma_sync" mma.sync's, and
    # "loops" the multiply-add loops wgmma does not take either (its key is left on)
    rng = np.random.default_rng(7 + 2 * trans_a + trans_b)
    a = (rng.standard_normal((64, 128) if trans_a else (128, 64)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((128, 64) if trans_b else (64, 128)) * 0.5).astype(np.float16)
    c = poison((128, 128), "float16")
    tilelang.compile(f16_gemm(trans_a=trans_a, trans_b=trans_b), pass_configs=configs)(a, b, c)
    ref = (f64(a).T if trans_a else f64(a)) @ (f64(b).T if trans_b else f64(b))
    # the tensor cores round the float16 sum after every 16 products (4 times for K = 64),
    # each by up to half a unit in the last place of the partial sum: 5e-3 of the largest
    tensor_cores = configs.get("tl.mma_f16_accumulators", True)
    assert_close(c, ref, dtype="float16", rtol=5e-3 if tensor_cores else None)


@pytest.mark.parametrize("bm,bn,bk,threads", [(128, 256, 64, 256), (256, 128, 32, 256), (64, 128, 64, 128)])
def test_warp_specialized_tiles_match_float64(bm, bn, bk, threads):
    """Hopper's warp-specialized main loop (TMA producer, wgmma consumers) with float16
    accumulators: two warpgroups along M or N, and several 64-row blocks per warpgroup;
    a K of 512 rounds each partial sum 32 times."""
    M, N, K = 256, 512, 512
    rng = np.random.default_rng(bm + bn + bk)
    a = (rng.standard_normal((M, K)) * 0.25).astype(np.float16)
    b = (rng.standard_normal((K, N)) * 0.25).astype(np.float16)
    c = poison((M, N), "float16")
    main = test_gemm.gemm_kernel.func(M, N, K, bm, bn, bk, "float16", "float16", False, False, 3, threads)
    tilelang.compile(main)(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype="float16", rtol=1e-2)
