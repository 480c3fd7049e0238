"""What the compiler knows of a CUDA arch, as the JIT reads it (`_tl.cuda_target`,
src/target/cuda_target.cc): the one table of per-arch facts. Needs no toolkit or GPU."""
import pytest

from tilelang import _tl


def test_hopper_and_ampere_facts():
    h = _tl.cuda_target("sm_90a")
    assert (h["arch"], h["sm"], h["suffix"], h["warp_size"]) == ("sm_90a", 90, "a", 32)
    assert h["wgmma"] and h["tma"] and h["cp_async"] and h["programmatic_launch"]
    assert h["max_shared_bytes"] == 232448
    a = _tl.cuda_target("80")  # the prefix is optional
    assert (a["arch"], a["wgmma"], a["tma"], a["max_shared_bytes"]) == ("sm_80", False, False, 166912)
    assert not _tl.cuda_target("sm_90")["wgmma"]  # wgmma is arch-specific: sm_90a only
    assert _tl.cuda_target("sm_75")["max_shared_bytes"] is None  # not in the table: not checked


@pytest.mark.parametrize("bad", ["", "sm_9x", "hopper", "sm_90b"])
def test_a_malformed_arch_names_the_expected_form(bad):
    with pytest.raises(ValueError, match=r"is not of the form sm_<number>\[a\|f\]"):
        _tl.cuda_target(bad)


def test_device_arch_and_header_switches():
    assert _tl.cuda_compile_arch("sm_90") == "sm_90a" and _tl.cuda_compile_arch("sm_86") == "sm_86"
    assert _tl.cuda_compile_defines({}) == ["-DTL_FLOAT8_HW_CVT=1", "-DTL_TF32_MMA=1", "-DTL_NATIVE_HALF_ARITH=1",
                                            "-DTL_MMA_F16_ACC=1"]
    assert _tl.cuda_compile_defines({"tl.enable_tf32_mma": "False", "tl.mma_f16_accumulators": "0"}) == [
        "-DTL_FLOAT8_HW_CVT=1", "-DTL_NATIVE_HALF_ARITH=1"]
