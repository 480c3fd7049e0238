"""A T.gemm whose operand is a global tensor, read in place. The CPU target reads any
memory; on CUDA, ldmatrix and wgmma read shared memory only (the kernel stopped with "an
illegal instruction" on the H200 when a global operand went to ldmatrix), so such a GEMM
takes the element-wise loops, with a remark that says why and what to write instead."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, f64, poison


def gemm_of(a_in_global, b_in_global, m=64, n=64, k=32):
    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(1, threads=128):
            a_s = T.alloc_shared((m, k), "float16")
            b_s = T.alloc_shared((k, n), "float16")
            acc = T.alloc_fragment((m, n), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(A if a_in_global else a_s, B if b_in_global else b_s, acc)
            T.copy(acc, C)

    return main


@pytest.mark.parametrize("a_in_global,b_in_global", [(True, True), (True, False), (False, True)])
def test_global_operands_match_float64(a_in_global, b_in_global):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    c = poison((64, 64))
    tilelang.compile(gemm_of(a_in_global, b_in_global))(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype="float16")


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
@pytest.mark.parametrize("a_in_global,b_in_global", [(True, False), (False, True)])
def test_on_cuda_a_global_operand_is_not_read_by_the_tensor_cores(arch, a_in_global, b_in_global):
    kernel = tilelang.compile(gemm_of(a_in_global, b_in_global), target=f"cuda -arch={arch}")
    gemm = [r for r in kernel.get_remarks() if r.startswith("T.gemm")]
    which = "A" if a_in_global else "B"
    assert gemm and f"no tensor cores (operand {which} is a global tensor" in gemm[0], gemm
    assert "T.alloc_shared" in gemm[0], gemm
    src = kernel.get_kernel_source()
    assert "tl::gemm" not in src, src  # no tl::gemm_ss, gemm_ss_wgmma, gemm_rs


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_shared_operands_keep_the_tensor_cores(arch):
    kernel = tilelang.compile(gemm_of(False, False), target=f"cuda -arch={arch}")
    gemm = [r for r in kernel.get_remarks() if r.startswith("T.gemm")]
    assert gemm and "no tensor cores" not in gemm[0], gemm
