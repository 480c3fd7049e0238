"""mma.sync GEMMs on wgmma's panel layout (tl.mma_sync_panels, on by default for sm_90 and newer): the shared
operands of an ldmatrix + mma.sync GEMM are laid out in 128-byte swizzled panels instead of
XOR rows, so TMA can write them and a T.Pipelined loop feeding the GEMM can be
warp-specialized (upstream's mHC pre-norm GEMM: a tf32 B tile of 256 columns, A a bfloat16
tile widened into a tfloat32 fragment). Code is checked on sm_90a (and sm_80, where nothing
changes) without a GPU; results against TF32-rounded float64 on whichever target the suite
runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from test_tf32_mma import bf16_rows_times_weights, round_tf32, shared_gemm

PANELS = {"tl.mma_sync_panels": True}
NO_PANELS = {"tl.mma_sync_panels": "0"}


def cuda_lowering(func, arch="sm_90a", **cfg):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch, **cfg}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def test_tf32_operands_in_panels_are_loaded_by_tma_in_a_specialized_loop():
    code, remarks = cuda_lowering(bf16_rows_times_weights(256, 1024), **{k: "1" for k in PANELS})
    # (A, the tfloat32 fragment, stays in registers: test_tf32_register_a.py)
    assert "tl::gemm_rs_tf32<32, 32, 256, 2, 2, false, false, 256, tl::kWgmmaPanels + 32, true>" in code, code
    assert any("warp-specialized, 2 stages; a producer warpgroup loads 2 copies with TMA" in r for r in remarks), remarks
    assert "tl::tma_load_2d(" in code and "cp_async" not in code, code
    # ldmatrix reads the stage after the mbarrier; the consumers fence before releasing it
    assert "tl::fence_proxy_async_shared();" in code, code


def test_without_the_switch_the_tiles_stay_in_xor_rows():
    code, remarks = cuda_lowering(bf16_rows_times_weights(256, 1024), **NO_PANELS)
    assert "tl::gemm_rs_tf32<32, 32, 256, 2, 2, false, false, 256, tl::kXorRows, true>" in code, code
    assert any("not warp-specialized" in r for r in remarks), remarks


def test_before_hopper_the_switch_changes_nothing():
    with_switch, _ = cuda_lowering(bf16_rows_times_weights(256, 1024), arch="sm_80", **{k: "1" for k in PANELS})
    without, _ = cuda_lowering(bf16_rows_times_weights(256, 1024), arch="sm_80", **NO_PANELS)
    assert with_switch == without


@pytest.mark.parametrize("tokens, hidden", [(256, 1024), (100, 512)])
def test_panel_gemm_matches_rounded_float64(tokens, hidden, rng):
    import ml_dtypes

    x = rng.standard_normal((tokens, hidden)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((32, hidden)).astype(np.float32)
    out = np.full((tokens, 32), np.nan, dtype=np.float32)
    tilelang.compile(bf16_rows_times_weights(tokens, hidden), pass_configs=PANELS)(x, w, out)
    ref = x.astype(np.float64) @ round_tf32(w).astype(np.float64).T
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-3)


def test_shared_shared_tf32_gemm_on_panels_matches_rounded_float64(rng):
    M, N, K = 128, 64, 256
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    c = np.full((M, N), np.nan, dtype=np.float32)
    tilelang.compile(shared_gemm(M, N, K, bm=64, bn=64, bk=32), pass_configs=PANELS)(a, b, c)
    ref = round_tf32(a).astype(np.float64) @ round_tf32(b).astype(np.float64).T
    np.testing.assert_allclose(c, ref, rtol=1e-4, atol=1e-3)


def test_by_default_only_tf32_operands_take_panels():
    _, tf32 = cuda_lowering(bf16_rows_times_weights(256, 1024))
    assert any("in wgmma's panel layout, which TMA can load" in r for r in tf32), tf32
    _, half = cuda_lowering(shared_gemm(128, 64, 256, a_dtype="float16", b_dtype="float16", bk=64, threads=128))
    assert not any("panel layout" in r for r in half), half


def test_a_second_gemm_off_the_panel_atoms_keeps_the_tiles_in_xor_rows():
    from test_gemm_shared_operands import misaligned_window

    code, remarks = cuda_lowering(misaligned_window(), **{k: "1" for k in PANELS})
    assert not any("panel layout" in r for r in remarks), remarks
    assert "gemm_ss_panels" not in code and "tl::kWgmmaPanels" not in code, code
