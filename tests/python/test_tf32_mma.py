"""TF32 GEMMs: a T.gemm whose A or B tile was declared T.tfloat32 rounds A and B to TF32
(10-bit mantissa, round to nearest, ties away from zero) and sums the products in float32,
on every target: on CUDA (sm_80+) with A M x K and B N x K it takes ldmatrix + cvt.rna +
mma.sync m16n8k8 tf32 (a register-fragment A staged through shared memory, as upstream's
DeepSeek mHC pre-norm GEMM has it); other layouts run loops that round alike. A plain
float32 GEMM is unchanged (full float32 products). Results are checked on the CPU target
against numpy; the CUDA code compile-only (PTX instruction, remarks, no spills)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangCompileError
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")
TF32_MMA = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"


def round_tf32(x):
    """numpy reference: float32 -> TF32 (round to nearest, ties away), low 13 bits zero."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    finite = (u & 0x7F800000) != 0x7F800000
    return np.where(finite, (u + np.uint32(0x1000)) & np.uint32(0xFFFFE000), u).view(np.float32)


def shared_gemm(M, N, K, bm=64, bn=64, bk=32, a_dtype=T.tfloat32, b_dtype=T.tfloat32, trans_b=True,
                threads=128):
    """C = A @ op(B) from shared tiles (A M x K; B N x K when trans_b, else K x N)."""
    b_shape, b_tile = ((N, K), (bn, bk)) if trans_b else ((K, N), (bk, bn))

    @T.prim_func
    def main(A: T.Tensor((M, K), T.float32), B: T.Tensor(b_shape, T.float32), C: T.Tensor((M, N), T.float32)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            a_s = T.alloc_shared((bm, bk), a_dtype)
            b_s = T.alloc_shared(b_tile, b_dtype)
            acc = T.alloc_fragment((bm, bn), T.float32)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], a_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], b_s)
                else:
                    T.copy(B[k * bk, bx * bn], b_s)
                T.gemm(a_s, b_s, acc, transpose_B=trans_b)
            T.copy(acc, C[by * bm, bx * bn])

    return main


def bf16_rows_times_weights(tokens, hidden, n_out=32, token_block=32, hidden_block=256, trans_b=True):
    """out = x @ w^T with x bfloat16 widened into a tfloat32 register fragment, w tfloat32
    (N x K): the shape of upstream's mHC pre-norm GEMM (A a fragment, B transposed); with
    trans_b=False, out = x @ w for w K x N."""
    w_shape, w_tile = ((n_out, hidden), (n_out, hidden_block)) if trans_b else ((hidden, n_out), (hidden_block, n_out))

    @T.prim_func
    def main(X: T.Tensor((tokens, hidden), T.bfloat16), W: T.Tensor(w_shape, T.tfloat32),
             Out: T.Tensor((tokens, n_out), T.float32)):
        with T.Kernel(T.ceildiv(tokens, token_block)) as px:
            acc = T.alloc_fragment((token_block, n_out), T.float32)
            T.clear(acc)
            for pz in T.Pipelined(hidden // hidden_block, num_stages=2):
                x16 = T.alloc_shared((token_block, hidden_block), T.bfloat16)
                w_s = T.alloc_shared(w_tile, T.tfloat32)
                T.copy(X[px * token_block, pz * hidden_block], x16)
                if trans_b:
                    T.copy(W[0, pz * hidden_block], w_s)
                else:
                    T.copy(W[pz * hidden_block, 0], w_s)
                x_f = T.alloc_fragment((token_block, hidden_block), T.tfloat32)
                T.copy(x16, x_f)
                T.gemm(x_f, w_s, acc, transpose_B=trans_b)
            T.copy(acc, Out[px * token_block, 0])

    return main


def test_round_tf32_reference_edge_cases():
    # the numpy reference itself: ties go away from zero, carries reach the exponent,
    # the largest finite values overflow to infinity, inf / NaN pass
    bits = np.array([0x3F801000, 0x3F800FFF, 0xBF801000, 0x3FFFF000, 0x7F7FF000, 0x7F800000, 0x7FC00001],
                    dtype=np.uint32)
    got = round_tf32(bits.view(np.float32)).view(np.uint32)
    np.testing.assert_array_equal(got[:5], [0x3F802000, 0x3F800000, 0xBF802000, 0x40000000, 0x7F800000])
    assert got[5] == 0x7F800000 and np.isnan(got[6:].view(np.float32)).all()


def test_cpu_rounds_operands_like_cvt_rna():
    """C = A @ I: each C element is one product, round_tf32(A[i, j]) * 1, so C shows the
    CPU target's operand rounding bit for bit (ties, carries, negatives, tiny values)."""
    M = N = K = 64
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(np.float32)
    special = np.array([0x3F801000, 0xBF801000, 0x3F800FFF, 0x3FFFF000, 0x00001000, 0x00800FFF, 0x3F801001],
                       dtype=np.uint32).view(np.float32)
    a[0, :len(special)] = special
    eye = np.eye(N, K, dtype=np.float32)  # B stored N x K
    k = tilelang.compile(shared_gemm(M, N, K), out_idx=[-1], target="cpu")
    np.testing.assert_array_equal(k(a, eye).view(np.uint32), round_tf32(a).view(np.uint32))
    assert any("tfloat32 is held as float32 here; a T.gemm with a tfloat32 tile rounds A and B to TF32" in r
               for r in k.get_remarks()), k.get_remarks()


# tensor_cores: on the CUDA run of the suite, the tf32 mma path (tl.enable_tf32_mma) against
# the rounding loops; the CPU target has the one path
@pytest.mark.parametrize("tensor_cores", [False, True], ids=["loops", "tf32_mma"])
@pytest.mark.parametrize("trans_b", [True, False])
def test_cpu_tf32_gemm_matches_rounded_float64(trans_b, tensor_cores):
    M, N, K = 100, 72, 160  # ragged against 64 x 64 x 32 tiles
    rng = np.random.default_rng(1)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K) if trans_b else (K, N)).astype(np.float32)
    k = tilelang.compile(shared_gemm(M, N, K, trans_b=trans_b), out_idx=[-1], target="cpu",
                         pass_configs={"tl.enable_tf32_mma": tensor_cores})
    c = k(a, b)
    bt = b.T if trans_b else b
    exact = a.astype(np.float64) @ bt.astype(np.float64)
    rounded = round_tf32(a).astype(np.float64) @ round_tf32(bt).astype(np.float64)
    # float32 sums of the rounded products; the tf32 tolerance against the exact product
    np.testing.assert_allclose(c, rounded, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(c, exact, rtol=5e-3, atol=5e-2)
    # the rounding is there: TF32 errors (~2^-11 per operand) dwarf float32 ones
    assert np.abs(c - exact).max() > 1e-3


def test_cpu_one_tfloat32_operand_makes_a_tf32_gemm():
    M, N, K = 64, 64, 64
    rng = np.random.default_rng(2)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    k = tilelang.compile(shared_gemm(M, N, K, a_dtype=T.float32), out_idx=[-1], target="cpu")
    rounded = round_tf32(a).astype(np.float64) @ round_tf32(b).astype(np.float64).T
    np.testing.assert_allclose(k(a, b), rounded, rtol=1e-5, atol=1e-4)


def test_cpu_float32_gemm_keeps_full_precision():
    M, N, K = 64, 64, 64
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((N, K)).astype(np.float32)
    k = tilelang.compile(shared_gemm(M, N, K, a_dtype=T.float32, b_dtype=T.float32), out_idx=[-1], target="cpu")
    np.testing.assert_allclose(k(a, b), a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("trans_b", [True, False])
def test_cpu_fragment_a_from_bfloat16(trans_b):
    tokens, hidden = 64, 512
    rng = np.random.default_rng(4)
    import ml_dtypes

    x = rng.standard_normal((tokens, hidden)).astype(ml_dtypes.bfloat16)
    w = rng.standard_normal((32, hidden) if trans_b else (hidden, 32)).astype(np.float32)
    k = tilelang.compile(bf16_rows_times_weights(tokens, hidden, trans_b=trans_b), out_idx=[-1], target="cpu")
    # bfloat16 values are exact in TF32: only w is rounded
    wt = round_tf32(w).astype(np.float64)
    ref = x.astype(np.float64) @ (wt.T if trans_b else wt)
    np.testing.assert_allclose(k(x, w), ref, rtol=1e-5, atol=1e-3)


def test_tfloat32_with_another_operand_type_is_an_error():
    with pytest.raises(TileLangCompileError, match="tfloat32 GEMM takes"):
        @T.prim_func
        def main(A: T.Tensor((32, 32), T.float16), C: T.Tensor((32, 32), T.float32)):
            with T.Kernel(1, threads=128) as bx:
                a_s = T.alloc_shared((32, 32), T.float16)
                b_s = T.alloc_shared((32, 32), T.tfloat32)
                acc = T.alloc_fragment((32, 32), T.float32)
                T.copy(A, a_s)
                T.gemm(a_s, b_s, acc)
                T.copy(acc, C)


TF32_ON = {"tl.enable_tf32_mma": True}


def _remarks(k):
    return "\n".join(k.get_remarks())


def _assert_tf32_mma(k, min_mma):
    remarks = _remarks(k)
    assert "mma.sync m16n8k8 (tf32 tensor cores" in remarks, remarks
    assert "element-wise loops" not in remarks and "multiply-add loops" not in remarks, remarks
    # (some NVRTC builds, a pip wheel's, leave ptxas' report out: then the remark says "?")
    if k._cuda.resource_usage.get("registers") is not None:
        assert "0 bytes spilled" in remarks, remarks
    ptx = k.get_ptx()
    assert ptx.count(TF32_MMA) >= min_mma, ptx.count(TF32_MMA)
    assert "cvt.rna.tf32.f32" in ptx


@needs_cuda_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_shared_tf32_gemm_uses_tf32_mma(arch):
    k = tilelang.compile(shared_gemm(1024, 1024, 1024), out_idx=[-1], target=f"cuda -arch={arch}",
                         pass_configs=TF32_ON)
    # 64 x 64 x 32 over 4 warps (32 x 32 each): 2 x 4 tiles of 16 x 8, 4 k-steps of 8
    _assert_tf32_mma(k, 32)
    assert "registers, layout mma_acc(64x64" in _remarks(k)


@needs_cuda_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_fragment_a_tf32_gemm_uses_tf32_mma(arch):
    k = tilelang.compile(bf16_rows_times_weights(4096, 16384), out_idx=[-1], target=f"cuda -arch={arch}",
                         pass_configs=TF32_ON)
    # 32 x 32 x 256 over 4 warps (16 x 16 each): 2 tiles, 32 k-steps
    _assert_tf32_mma(k, 64)


@needs_cuda_compiler
def test_tf32_tensor_cores_are_on_by_default_and_can_be_turned_off():
    """On by default (upstream's T.gemm on float32 runs tf32 tensor cores); turned off, the
    rounding loops in the same layout, and the remark says why."""
    k = tilelang.compile(shared_gemm(1024, 1024, 1024), out_idx=[-1], target="cuda -arch=sm_90a")
    assert TF32_MMA in k.get_ptx()
    k = tilelang.compile(shared_gemm(1024, 1024, 1024), out_idx=[-1], target="cuda -arch=sm_90a",
                         pass_configs={"tl.enable_tf32_mma": False})
    remarks = _remarks(k)
    assert "the tf32 tensor-core path is turned off (tl.enable_tf32_mma)" in remarks, remarks
    assert TF32_MMA not in k.get_ptx()


@needs_cuda_compiler
def test_tf32_gemm_with_b_k_by_n_falls_back_to_rounding_loops():
    k = tilelang.compile(shared_gemm(1024, 1024, 1024, trans_b=False), out_idx=[-1], target="cuda -arch=sm_90a")
    remarks = _remarks(k)
    assert "multiply-add loops, no tensor cores (tfloat32 operands with B stored K x N (ldmatrix cannot " \
           "transpose 32-bit elements" in remarks, remarks
    assert "operands rounded to TF32" in remarks
    assert TF32_MMA not in k.get_ptx()
    # gemm_ss's loops round as the tensor cores do (its Tf32 template argument)
    assert re.search(r"tl::gemm_ss<[^(]*, false, false, true>\(", k.get_kernel_source())


@needs_cuda_compiler
def test_tf32_fragment_a_with_b_k_by_n_falls_back_to_rounding_loops():
    k = tilelang.compile(bf16_rows_times_weights(4096, 16384, trans_b=False), out_idx=[-1],
                         target="cuda -arch=sm_90a")
    remarks = _remarks(k)
    assert "element-wise loops, no tensor cores (" in remarks and "ldmatrix cannot transpose 32-bit elements" \
        in remarks, remarks
    assert "operands rounded to TF32" in remarks
    assert TF32_MMA not in k.get_ptx()
    assert k.get_kernel_source().count("tl::round_tf32(") == 2  # A and B of the one product


@needs_cuda_compiler
def test_float32_gemm_keeps_float32_loops_on_cuda():
    k = tilelang.compile(shared_gemm(1024, 1024, 1024, a_dtype=T.float32, b_dtype=T.float32), out_idx=[-1],
                         target="cuda -arch=sm_90a")
    remarks = _remarks(k)
    assert "no tensor cores for float32 operands" in remarks, remarks
    assert TF32_MMA not in k.get_ptx() and "round_tf32" not in k.get_kernel_source()


def test_tf32_flag_is_printed_and_compared():
    tf32, plain = shared_gemm(64, 64, 64), shared_gemm(64, 64, 64, a_dtype=T.float32, b_dtype=T.float32)
    assert "tf32=True" in tf32.script() and "tf32=True" not in plain.script()
    assert not _tl.structural_equal(tf32.node, plain.node)
    assert _tl.structural_equal(tf32.node, shared_gemm(64, 64, 64).node)
