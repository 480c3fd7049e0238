"""Hand warp-specialized kernels whose warpgroups each run GEMMs of their own, as upstream's
sparse MLA forward does (`if tx < 128: ... elif tx < 256: ... else: producer`): a GEMM under
a branch on the thread index runs on the branch's warps, its accumulator laid out over
those threads only; tile copies under nested branches are spread over the threads both
conditions select; T.set_max_nreg sets each warpgroup's register budget (setmaxnreg).

Checked against numpy in float64 on the CPU target (lockstep emulation; the producer comes
first in program order there) and, in the suite's CUDA run, on the GPU; the sm_90a code is
also checked without a GPU (wgmma per warpgroup, setmaxnreg, the range layouts)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangCompileError

from conftest import assert_close, compile_cpu, f64, poison, rand


def cuda_lowering(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def two_consumer_gemm(M, K, bM=64, bK=64, half=64, dtype="float16", budgets=True):
    """C[:, :half] = A @ B[:, :half] on warpgroup 0 and C[:, half:] = A @ B[:, half:] on
    warpgroup 1, every K tile of A and B staged once by warpgroup 2 (the producer, first in
    program order), each stage on a barrier of its own. Each warpgroup's branch holds all its
    work, as upstream writes them (setmaxnreg needs one budget per branch to the end).
    Warpgroup 1 writes its part through a shared tile (a copy under two nested conditions);
    warpgroup 0 scales each row by its maximum."""
    N = 2 * half
    KT = (K + bK - 1) // bK

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), threads=384) as bx:
            A_s = T.alloc_shared((KT, bM, bK), dtype)
            B_s = T.alloc_shared((KT, bK, N), dtype)
            C1_s = T.alloc_shared((bM, half), "float32")
            acc0 = T.alloc_fragment((bM, half), "float32")
            acc1 = T.alloc_fragment((bM, half), "float32")
            row_max = T.alloc_fragment((bM,), "float32")
            ready = T.alloc_barrier(arrive_count=[128] * KT)
            tx = T.get_thread_binding()
            if tx >= 256:
                if budgets:
                    T.set_max_nreg(56, 0)
                for k in T.serial(KT):
                    T.copy(A[bx * bM, k * bK], A_s[k, :, :])
                    T.copy(B[k * bK, 0], B_s[k, :, :])
                    T.barrier_arrive(ready[k])
            elif tx < 128:
                if budgets:
                    T.set_max_nreg(232, 1)
                T.clear(acc0)
                for k in T.serial(KT):
                    T.barrier_wait(ready[k], 0)
                    T.gemm(A_s[k, :, :], B_s[k, :, 0:half], acc0)
                T.reduce_max(acc0, row_max, dim=1)
                for i, j in T.Parallel(bM, half):
                    acc0[i, j] = acc0[i, j] / T.max(T.abs(row_max[i]), 1.0)
                T.copy(acc0, C[bx * bM, 0])
            else:
                T.clear(acc1)
                for k in T.serial(KT):
                    T.barrier_wait(ready[k], 0)
                    T.gemm(A_s[k, :, :], B_s[k, :, half:N], acc1)
                T.copy(acc1, C1_s)
                T.copy(C1_s, C[bx * bM, half])

    return main


def reference(a, b, half):
    c = f64(a) @ f64(b)
    left = c[:, :half]
    return np.concatenate([left / np.maximum(np.abs(left.max(axis=1, keepdims=True)), 1.0), c[:, half:]], axis=1)


@pytest.mark.parametrize("M,K", [(128, 128), (64, 192), (100, 64)])
def test_warpgroups_with_their_own_gemms(rng, M, K):
    half = 64
    a, b = rand(rng, (M, K), "float16"), rand(rng, (K, 2 * half), "float16")
    c = poison((M, 2 * half))
    compile_cpu(two_consumer_gemm(M, K, half=half))(a, b, c)
    assert_close(c, reference(a, b, half), "float16")


def test_sm90a_code_has_a_gemm_and_a_register_budget_per_warpgroup():
    src, remarks = cuda_lowering(two_consumer_gemm(128, 128))
    text = "\n".join(remarks)
    # each consumer warpgroup's accumulator is laid out over its own threads ...
    assert "fragment acc0: registers, layout mma_acc(64x64, warps 4x1)" in text
    assert "fragment acc1: registers, layout threads 128..255 mma_acc(64x64, warps 4x1)" in text
    # ... and its GEMM is one warpgroup's wgmma, reading a whole-panel window of B
    assert src.count("tl::gemm_ss_wgmma<64, 64, 64, false, false") == 2
    # setmaxnreg where the branch selects whole warpgroups
    assert "tl::warpgroup_reg_alloc<232>();" in src and "tl::warpgroup_reg_dealloc<56>();" in src
    assert "threads 0..127 raise their register budget to 232" in text
    # warpgroup 1's copy out of C1_s is spread over its own 128 threads, numbered from 128
    assert re.search(r"tx_in_range(_\d+)? = \(tx & 127\)", src)
    assert "tl::floordiv(tx_in_range" not in src  # (divisions of it are shifts)


def test_register_budget_is_reported_where_it_does_not_apply():
    src, remarks = cuda_lowering(two_consumer_gemm(128, 128), arch="sm_80")
    assert "warpgroup_reg_alloc" not in src
    assert any("T.set_max_nreg(232, 1) at line" in r and "not applied: setmaxnreg needs sm_90a" in r for r in remarks)

    @T.prim_func
    def plain(A: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            tx = T.get_thread_binding()
            T.set_max_nreg(240, 1)
            A[tx] = A[tx] + 1.0

    src, remarks = cuda_lowering(plain)
    assert "warpgroup_reg" not in src
    assert any("not applied: the kernel does not program its own barriers" in r for r in remarks)
    a = np.arange(256, dtype=np.float32)
    compile_cpu(plain)(a)  # the CPU target ignores it
    assert_close(a, np.arange(256) + 1.0)


@pytest.mark.parametrize("count,inc,message", [(250, 1, "multiple of 8 in \\[24, 256\\], got 250"),
                                               (16, 0, "got 16"), (64, 2, "is_inc must be 0 or 1")])
def test_set_max_nreg_arguments(count, inc, message):
    with pytest.raises(TileLangCompileError, match=message):

        @T.prim_func
        def bad(A: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128):
                T.set_max_nreg(count, inc)
                A[0] = 1.0


def test_gemm_under_a_range_it_cannot_be_laid_over_is_refused():
    """Threads 64..191 are whole warps, but the device GEMM numbers its warps modulo its own
    count, so its range must start on a multiple of its size: refused at the GEMM's line."""

    @T.prim_func
    def shifted(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            tx = T.get_thread_binding()
            T.copy(A, A_s)
            if tx >= 64 and tx < 192:
                T.clear(acc)
                T.gemm(A_s, A_s, acc)
                T.copy(acc, C)

    with pytest.raises(_tl.CompileError, match="on a register fragment under a condition on the thread index"):
        cuda_lowering(shifted)
