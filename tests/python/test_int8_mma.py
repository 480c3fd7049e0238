"""int8 GEMMs on the tensor cores: int8 x int8 -> int32 with A M x K and B N x K takes
ldmatrix + mma.sync m16n8k32 (A from shared memory, or a register fragment staged there),
including a GEMM whose A is int4 weights unpacked to int8 in registers. Results are checked
exactly against numpy on the CPU target (and on the GPU under TILELANG_TEST_CUDA=1); the
CUDA code is checked compile-only for the instruction and the absence of per-element loops."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


def int4_weights_gemm(M, N, K, bm=32, bn=32, bk=128, threads=128, stages=1):
    """Ct (N x M) = W (N x K, int4 two per byte, low nibble first) x X^T (X: M x K int8).
    The unpacked weights are the GEMM's A operand, a register fragment."""

    @T.prim_func
    def main(X: T.Tensor((M, K), "int8"), W: T.Tensor((N, K // 2), "uint8"), Ct: T.Tensor((N, M), "int32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            X_s = T.alloc_shared((bm, bk), "int8")
            W_s = T.alloc_shared((bn, bk // 2), "uint8")
            W_f = T.alloc_fragment((bn, bk), "int8")
            acc = T.alloc_fragment((bn, bm), "int32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=stages):
                T.copy(X[by * bm, k * bk], X_s)
                T.copy(W[bx * bn, k * bk // 2], W_s)
                for i, j in T.Parallel(bn, bk):
                    nib = (W_s[i, j // 2] >> ((j % 2).astype("uint8") * T.uint8(4))) & T.uint8(15)
                    # sign-extend the nibble: shift it to the top of a byte, then back arithmetically
                    W_f[i, j] = T.reinterpret(nib << T.uint8(4), "int8") >> T.int8(4)
                T.gemm(W_f, X_s, acc, transpose_B=True)
            T.copy(acc, Ct[bx * bn, by * bm])

    return main


def int8_gemm_nt(M, N, K, bm=64, bn=64, bk=64, dtype="int8", threads=128):
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), "int32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bn, bk), dtype)
            C_f = T.alloc_fragment((bm, bn), "int32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def unpack_int4(w):
    lo = (w & 0xF).astype(np.int64)
    hi = (w >> 4).astype(np.int64)
    q = np.stack([lo, hi], axis=-1).reshape(w.shape[0], -1)
    return np.where(q >= 8, q - 16, q)


def test_int4_weights_gemm_matches_numpy():
    rng = np.random.default_rng(7)
    M, N, K = 64, 96, 256
    x = rng.integers(-128, 128, size=(M, K)).astype(np.int8)
    w = rng.integers(0, 256, size=(N, K // 2)).astype(np.uint8)
    k = tilelang.compile(int4_weights_gemm(M, N, K), out_idx=[-1], target="cpu")
    ref = unpack_int4(w) @ x.astype(np.int64).T
    np.testing.assert_array_equal(k(x, w), ref.astype(np.int32))


@pytest.mark.parametrize("dtype", ["int8", "uint8"])
def test_int8_nt_gemm_ragged_matches_numpy(dtype):
    rng = np.random.default_rng(3)
    M, N, K = 100, 72, 160  # ragged against 64 x 64 x 64 tiles
    lo, hi = (-128, 128) if dtype == "int8" else (0, 256)
    a = rng.integers(lo, hi, size=(M, K)).astype(dtype)
    b = rng.integers(lo, hi, size=(N, K)).astype(dtype)
    k = tilelang.compile(int8_gemm_nt(M, N, K, dtype=dtype), out_idx=[-1], target="cpu")
    ref = a.astype(np.int64) @ b.astype(np.int64).T
    np.testing.assert_array_equal(k(a, b), ref.astype(np.int32))  # int32 wraps like the tensor cores


@needs_cuda_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_int4_weights_gemm_uses_int8_mma(arch):
    k = tilelang.compile(int4_weights_gemm(4096, 4096, 4096), out_idx=[-1], target=f"cuda -arch={arch}")
    remarks = "\n".join(k.get_remarks())
    assert "mma.sync m16n8k32 (int8)" in remarks, remarks
    assert "element-wise loops" not in remarks and "multiply-add loops" not in remarks, remarks
    assert "registers, layout mma_acc(32x32" in remarks, remarks  # the accumulator is not in shared memory
    ptx = k.get_ptx()
    assert ptx.count("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32") >= 8  # 32x32x128 over 4 warps
    assert "ldmatrix.sync.aligned" in ptx
    usage = k.resource_usage
    if usage.get("registers") is not None:
        assert usage["spill_stores_bytes"] == 0 and usage["registers"] <= 128, usage


@needs_cuda_compiler
def test_int8_nt_gemm_uses_int8_mma_and_other_layouts_say_why_not():
    k = tilelang.compile(int8_gemm_nt(256, 256, 256, dtype="uint8"), out_idx=[-1], target="cuda -arch=sm_80")
    assert any("mma.sync m16n8k32 (int8)" in r for r in k.get_remarks()), k.get_remarks()
    assert "m16n8k32.row.col.s32.u8.u8.s32" in k.get_ptx()

    @T.prim_func
    def nn(A: T.Tensor((64, 64), "int8"), B: T.Tensor((64, 64), "int8"), C: T.Tensor((64, 64), "int32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "int8")
            B_s = T.alloc_shared((64, 64), "int8")
            C_f = T.alloc_fragment((64, 64), "int32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C_f, clear_accum=True)
            T.copy(C_f, C)

    k = tilelang.compile(nn, out_idx=[-1], target="cuda -arch=sm_80")
    remarks = "\n".join(k.get_remarks())
    assert "no tensor cores (int8 operands with B stored K x N (ldmatrix cannot transpose bytes" in remarks, remarks
