"""T.gemm of float16 tiles into a float16 accumulator. On CUDA the tensor cores take it
(mma.sync m16n8k16 with .f16 accumulation, tl::mma_tile's half branch), on by default since
an H200 run checked it; with the pass config tl.mma_f16_accumulators=0 the same accumulator
layout is filled by per-thread multiply-add loops, and the remark says which.
Values against float64 on the target the suite runs (the CPU target sums each call's K
products in float and rounds once; the tensor cores round every 16: both within float16's
tolerance for these sizes)."""
import numpy as np
import pytest

import tilelang
import test_gemm
from conftest import assert_close, f64, poison

ON = {"tl.mma_f16_accumulators": True}
OFF = {"tl.mma_f16_accumulators": False}


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


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_on_by_default(arch):
    remark = gemm_remark(tilelang.compile(f16_gemm(), target=f"cuda -arch={arch}"))
    assert "ldmatrix + mma.sync m16n8k16" in remark and "no tensor cores" not in remark, remark


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, False), (False, True), (True, True)])
def test_with_the_key_the_tensor_cores_take_it(arch, trans_a, trans_b):
    kernel = tilelang.compile(f16_gemm(trans_a=trans_a, trans_b=trans_b), target=f"cuda -arch={arch}",
                              pass_configs=ON)
    remark = gemm_remark(kernel)
    assert "ldmatrix + mma.sync m16n8k16" in remark and "no tensor cores" not in remark, remark
    if arch == "sm_90a":  # wgmma accumulates in float32 only here: mma.sync, and the remark says so
        assert "not wgmma" in remark, remark
    assert "tl::gemm_ss<" in kernel.get_kernel_source()


def test_bfloat16_into_bfloat16_stays_in_the_loops():
    # mma.sync has no bfloat16 accumulator: the key does not apply
    main = test_gemm.gemm_kernel.func(64, 64, 32, 64, 64, 32, "bfloat16", "bfloat16", False, False, 2, 128)
    remark = gemm_remark(tilelang.compile(main, target="cuda -arch=sm_80", pass_configs=ON))
    assert "no tensor cores (a bfloat16 accumulator for bfloat16 operands)" in remark, remark


@pytest.mark.parametrize("key", [False, True])
@pytest.mark.parametrize("trans_a,trans_b", [(False, False), (True, True)])
def test_values_match_float64(key, trans_a, trans_b):
    rng = np.random.default_rng(7 + 2 * trans_a + trans_b)
    a = (rng.standard_normal((64, 128) if trans_a else (128, 64)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((128, 64) if trans_b else (64, 128)) * 0.5).astype(np.float16)
    c = poison((128, 128), "float16")
    tilelang.compile(f16_gemm(trans_a=trans_a, trans_b=trans_b), pass_configs={"tl.mma_f16_accumulators": key})(a, b, c)
    ref = (f64(a).T if trans_a else f64(a)) @ (f64(b).T if trans_b else f64(b))
    # the tensor cores round the float16 sum after every 16 products (4 times for K = 64),
    # each by up to half a unit in the last place of the partial sum: 5e-3 of the largest
    assert_close(c, ref, dtype="float16", rtol=5e-3 if key else None)
