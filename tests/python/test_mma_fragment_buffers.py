"""mma.sync GEMMs in kernels whose register tiles nearly fill the register file load their
fragments right before their mmas (one buffer: gemm_ss's Prefetch = false), said in the
remarks; other kernels keep two buffers. Results checked against numpy in float64 (on the
CPU target, and on CUDA in the suite's CUDA run); the CUDA choice is read from the sm_90a
code (no GPU needed)."""
import numpy as np
import pytest

import tilelang.language as T
from tilelang import _tl

from conftest import assert_close, compile_cpu, f64, poison, rand


def two_gemms(M=32, N=512, N2=384, K=64):
    """C = A @ B and C2 = A @ B2, both accumulators held in registers at once (block_M 32:
    mma.sync, wgmma needs 64 rows per warpgroup)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), B2: T.Tensor((K, N2), "float16"),
             C: T.Tensor((M, N), "float32"), C2: T.Tensor((M, N2), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((K, N), "float16")
            B2_s = T.alloc_shared((K, N2), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            acc2 = T.alloc_fragment((M, N2), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(B2, B2_s)
            T.clear(acc)
            T.clear(acc2)
            T.gemm(A_s, B_s, acc)
            T.gemm(A_s, B2_s, acc2)
            T.copy(acc, C)
            T.copy(acc2, C2)

    return main


def lowered(func):
    out, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(out).code, remarks


def gemm_calls(src):
    return [line.strip() for line in src.splitlines() if "tl::gemm_ss<" in line]


def test_full_register_file_takes_one_fragment_buffer():
    src, remarks = lowered(two_gemms())
    calls = gemm_calls(src)
    assert len(calls) == 2
    # (M, N, K, WM, WN, TransA, TransB, LdA, LdB, SwzA, SwzB, MFastest, InterleaveM, Tf32, Prefetch)
    assert all(c.split(">(")[0].endswith("false, false, false, false") for c in calls), calls
    said = [r for r in remarks if r.startswith("T.gemm") and "one fragment buffer" in r]
    assert len(said) == 2 and "224 registers per thread" in said[0], remarks


def test_small_register_tiles_keep_two_buffers():
    src, remarks = lowered(two_gemms(N=128, N2=64))
    calls = gemm_calls(src)
    assert len(calls) == 2 and all("kXorRows>(" in c or "kRowMajor>(" in c or "kWgmmaPanels" in c for c in calls), calls
    assert not any("one fragment buffer" in r for r in remarks)


@pytest.mark.parametrize("N,N2", [(512, 384), (128, 64)])
def test_both_ways_compute_the_products(rng, N, N2):
    a, b, b2 = rand(rng, (32, 64), "float16"), rand(rng, (64, N), "float16"), rand(rng, (64, N2), "float16")
    c, c2 = poison((32, N)), poison((32, N2))
    compile_cpu(two_gemms(N=N, N2=N2))(a, b, b2, c, c2)
    assert_close(c, f64(a) @ f64(b), "float16")
    assert_close(c2, f64(a) @ f64(b2), "float16")
