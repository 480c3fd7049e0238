"""TensorCoreIntrinEmitter (tilelang.cuda.intrinsics.macro.mma_macro_generator): a warp-level
GEMM written with upstream's emitter methods (ldmatrix_a / ldmatrix_b / mma / stmatrix) over
per-thread arrays. Each kernel's C is compared with a float64 product of fresh random inputs,
into a poisoned output. On the CPU target the warp's mma is emulated lane by lane
(cpu/emulate_warp_mma.cc); under TILELANG_TEST_CUDA=1 the same tests run mma.sync."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison
from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter
from tilelang.errors import TileLangCompileError

from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVRTC = _tl.find_cuda_compiler(_search_dirs())[0]  # sm_90a code compiles without a GPU

NP = {"float16": np.float16, "float32": np.float32, "int8": np.int8, "uint8": np.uint8, "int32": np.int32}


def emitter_gemm(M, N, K, in_dtype, accum, out_dtype, *, a_transposed=False, b_transposed=True, brw=2, bcw=2,
                 wrt=32, wct=32, chunk=32, c_store="4d", is_m_first=False, staged=False):
    em = TensorCoreIntrinEmitter(a_dtype=in_dtype, b_dtype=in_dtype, accum_dtype=accum, a_transposed=a_transposed,
                                 b_transposed=b_transposed, block_row_warps=brw, block_col_warps=bcw,
                                 warp_row_tiles=wrt, warp_col_tiles=wct, chunk=chunk, is_m_first=is_m_first)
    bM, bN, bK = brw * wrt, bcw * wct, chunk
    A_shape, B_shape = ((K, M) if a_transposed else (M, K)), ((N, K) if b_transposed else (K, N))
    As, Bs = ((bK, bM) if a_transposed else (bM, bK)), ((bN, bK) if b_transposed else (bK, bN))
    n = em.n_dim

    @T.prim_func
    def main(A: T.Tensor(A_shape, in_dtype), B: T.Tensor(B_shape, in_dtype), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=32 * brw * bcw) as (bx, by):
            A_shared = T.alloc_shared((2,) + As if staged else As, in_dtype)
            B_shared = T.alloc_shared(Bs, in_dtype)
            C_tile = T.alloc_shared((bM // 16, bN // n, 16, n) if c_store == "4d" else (bM, bN), out_dtype)
            A_local = T.alloc_local((em.warp_rows * em.local_size_a), in_dtype)
            B_local = T.alloc_local((em.warp_cols * em.local_size_b), in_dtype)
            C_local = T.alloc_local((em.warp_rows * em.warp_cols * em.local_size_out), accum)
            T.clear(C_local)
            for ko in T.Pipelined(K // bK, num_stages=2):
                A_tile = A_shared[1, :, :] if staged else A_shared
                if a_transposed:
                    T.copy(A[ko * bK, by * bM], A_tile)
                else:
                    T.copy(A[by * bM, ko * bK], A_tile)
                if b_transposed:
                    T.copy(B[bx * bN, ko * bK], B_shared)
                else:
                    T.copy(B[ko * bK, bx * bN], B_shared)
                for ki in T.serial(bK // em.micro_size_k):
                    em.ldmatrix_a(A_local, A_tile, ki)
                    em.ldmatrix_b(B_local, B_shared, ki)
                    em.mma(A_local, B_local, C_local)
            if c_store == "global":
                em.stmatrix(C_local, C, pid_m=by, pid_n=bx)
            else:
                em.stmatrix(C_local, C_tile)
                for i, j in T.Parallel(bM, bN):
                    if c_store == "4d":
                        C[by * bM + i, bx * bN + j] = C_tile[i // 16, j // n, i % 16, j % n]
                    else:
                        C[by * bM + i, bx * bN + j] = C_tile[i, j]

    return main


def check(M, N, K, in_dtype, accum, out_dtype, atol, rtol=1e-2, **kw):
    kernel = tilelang.compile(emitter_gemm(M, N, K, in_dtype, accum, out_dtype, **kw), target="cpu")
    rng = np.random.default_rng()
    if in_dtype in ("int8", "uint8"):
        lo = -128 if in_dtype == "int8" else 0
        A = rng.integers(lo, 128, size=(M, K)).astype(NP[in_dtype])
        B = rng.integers(lo, 128, size=(K, N)).astype(NP[in_dtype])
    else:
        A, B = (rng.standard_normal(s).astype(NP[in_dtype]) for s in ((M, K), (K, N)))
    a_in = np.ascontiguousarray(A.T) if kw.get("a_transposed") else A
    b_in = np.ascontiguousarray(B.T) if kw.get("b_transposed", True) else B
    C = poison((M, N), out_dtype)
    kernel(a_in, b_in, C)
    ref = A.astype(np.float64) @ B.astype(np.float64)
    np.testing.assert_allclose(C.astype(np.float64), ref, atol=atol, rtol=rtol)


@pytest.mark.parametrize("kw", [
    {},
    {"b_transposed": False},
    {"a_transposed": True},
    {"a_transposed": True, "b_transposed": False},
    {"c_store": "2d"},
    {"c_store": "global"},
    {"is_m_first": True},
    {"staged": True},
    {"brw": 1, "bcw": 4, "wrt": 64, "wct": 16},
])
def test_float16_into_float32(kw):
    check(128, 128, 64, "float16", "float32", "float32", atol=1e-3, **kw)


# (on CUDA behind tl.emitter_ldmatrix until a GPU run has checked it)
LDMATRIX = {"tl.emitter_ldmatrix": True}


@pytest.mark.parametrize("kw, trans_a, trans_b", [
    ({}, "false", "false"),
    ({"b_transposed": False}, "false", "true"),
    ({"a_transposed": True}, "true", "false"),
    ({"a_transposed": True, "b_transposed": False}, "true", "true"),
])
def test_16bit_operands_load_with_ldmatrix_on_cuda(kw, trans_a, trans_b):
    # ldmatrix_a / ldmatrix_b: one ldmatrix.x4 per micro tile (.trans where the tile is K-major
    # for the mma); the CPU runs the element loads of the same registers (the tests above).
    src = tilelang.lower(emitter_gemm(128, 128, 64, "float16", "float32", "float32", **kw),
                         target="cuda -arch=sm_90a", pass_configs=LDMATRIX).kernel_source
    assert f"tl::ldmatrix_operand<4, {trans_a}>((&A_local[" in src, src
    assert f"tl::ldmatrix_operand<4, {trans_b}>((&B_local[" in src, src
    for local in ("A_local", "B_local"):  # no element loads left
        assert f"tl::copy<4>((&{local}[" not in src and not re.search(rf"\b{local}\[[^\]]*\] =", src), src


def test_n8_micro_tiles_load_two_matrices_on_cuda():
    src = tilelang.lower(emitter_gemm(64, 48, 64, "float16", "float32", "float32", wct=24),
                         target="cuda -arch=sm_90a", pass_configs=LDMATRIX).kernel_source
    assert "tl::ldmatrix_operand<2, false>((&B_local[" in src, src


def test_ldmatrix_is_on_on_cuda_by_default():
    src = tilelang.lower(emitter_gemm(128, 128, 64, "float16", "float32", "float32"),
                         target="cuda -arch=sm_90a").kernel_source
    assert "tl::ldmatrix_operand<4, false>((&A_local[" in src, src


def test_ldmatrix_off_makes_element_loads_with_a_remark():
    art = tilelang.lower(emitter_gemm(128, 128, 64, "float16", "float32", "float32"), target="cuda -arch=sm_90a",
                         pass_configs={"tl.emitter_ldmatrix": False})
    assert "ldmatrix_operand" not in art.kernel_source
    assert "tl::copy<4>((&A_local[" in art.kernel_source  # the register pairs, as vector reads
    said = [r for r in art.remarks if "tl.emitter_ldmatrix=False" in r]
    assert len(said) == 2, art.remarks  # ldmatrix_a's line and ldmatrix_b's


def pipeline_of(M, N, **configs):
    """How the emitter GEMM's loop is pipelined on sm_90a: "tma" (a producer warpgroup) or
    "cp.async", and the remarks."""
    art = tilelang.lower(emitter_gemm(M, N, 256, "float16", "float32", "float16", wrt=64, wct=64),
                         target="cuda -arch=sm_90a", pass_configs=configs)
    src = art.kernel_source
    assert ("tl::tma_load_2d(" in src) != ("cp_async" in src), src
    return ("tma" if "tl::tma_load_2d(" in src else "cp.async"), art.remarks


def test_more_mma_sync_blocks_than_sms_keep_the_cp_async_pipeline():
    # 256 blocks of 128 threads, 32 multiply-adds per loaded byte: two blocks share an SM
    how, remarks = pipeline_of(2048, 2048)
    assert how == "cp.async"
    assert any("its GEMMs run on mma.sync, 32 multiply-adds per loaded byte" in r for r in remarks), remarks
    assert pipeline_of(2048, 2048, **{"tl.ws_mma_sync": True})[0] == "tma"


def test_the_next_steps_loads_need_no_edge_test_under_their_guard():
    # `if ko + 1 < n:` around step ko + 1's cp.async loads: their column test
    # `ko * 32 < (n - 1) * 32` holds there (the simplifier narrows ko by the guard)
    src = tilelang.lower(emitter_gemm(2048, 2048, 256, "float16", "float32", "float16", wrt=64, wct=64),
                         target="cuda -arch=sm_90a").kernel_source
    loads = [ln for ln in src.splitlines() if "cp_async_zfill_16(" in ln]
    assert len(loads) == 4 and all(ln.rstrip().endswith(", true);") for ln in loads), src


def test_one_wave_of_mma_sync_blocks_is_warp_specialized():
    assert pipeline_of(1024, 1024)[0] == "tma"  # 64 blocks: an SM each either way
    assert pipeline_of(1024, 1024, **{"tl.sm_count": 32})[0] == "cp.async"


def test_the_k_steps_of_warp_mmas_are_unrolled():
    art = tilelang.lower(emitter_gemm(128, 128, 64, "float16", "float32", "float32"), target="cuda -arch=sm_90a")
    assert re.search(r"#pragma unroll\n\s*for \(int32_t ki = 0; ki < 2; \+\+ki\)", art.kernel_source), art.kernel_source
    assert any("loop ki at line" in r and "2 steps of warp MMAs" in r for r in art.remarks), art.remarks
    off = tilelang.lower(emitter_gemm(128, 128, 64, "float16", "float32", "float32"), target="cuda -arch=sm_90a",
                         pass_configs={"tl.unroll_mma_steps": False}).kernel_source
    assert re.search(r"(?<!unroll)\n\s*for \(int32_t ki = 0; ki < 2; \+\+ki\)", off), off


@pytest.mark.parametrize("in_dtype, accum, chunk, words", [
    ("float16", "float32", 32, True),
    ("float16", "float16", 32, True),
    ("int8", "int32", 64, True),
    ("float32", "float32", 16, False),  # tf32: one element a register, nothing to pack
])
def test_mma_operands_are_read_as_whole_words_on_cuda(in_dtype, accum, chunk, words):
    # A_local / B_local are 16-byte aligned arrays and every micro tile starts on a word:
    # mma_fragment<true> reads each register as one 32-bit word (ptxas then feeds mma.sync
    # straight from ldmatrix's registers; packed from elements it copied each one first)
    kernel = tilelang.compile(emitter_gemm(128, 128, 128, in_dtype, accum, accum, chunk=chunk),
                              target="cuda -arch=sm_90a") if HAVE_NVRTC else None
    src = kernel.get_kernel_source() if kernel else tilelang.lower(
        emitter_gemm(128, 128, 128, in_dtype, accum, accum, chunk=chunk), target="cuda -arch=sm_90a").kernel_source
    calls = re.findall(r"tl::mma_fragment(<true>)?\(", src)
    assert calls and all(bool(c) == words for c in calls), src


def test_n8_micro_tiles():
    # warp_col_tiles 24 is not a multiple of 16: n = 8, one mma per micro tile
    check(64, 48, 64, "float16", "float32", "float32", atol=1e-3, wct=24)


def test_float16_accumulator():
    check(64, 64, 64, "float16", "float16", "float16", atol=0.1, rtol=2e-2)


@pytest.mark.parametrize("in_dtype", ["int8", "uint8"])
def test_8bit_into_int32(in_dtype):
    check(128, 64, 128, in_dtype, "int32", "int32", atol=0, rtol=0, chunk=64)


def test_float32_as_tf32():
    # tf32 rounds each input to 10 bits of mantissa on CUDA (exact on the CPU target)
    check(128, 128, 32, "float32", "float32", "float32", atol=0.05, rtol=1e-2, chunk=16)


def test_sizes_follow_upstream():
    em = TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32", block_row_warps=2,
                                 block_col_warps=2, warp_row_tiles=64, warp_col_tiles=64, chunk=32)
    assert (em.micro_size_x, em.micro_size_y, em.micro_size_k) == (16, 16, 16)
    assert (em.warp_rows, em.warp_cols) == (4, 4)
    assert (em.local_size_a, em.local_size_b, em.local_size_out) == (8, 8, 8)
    assert em.threads == 128 and em.mma_prefix == "m16n8k16"
    em8 = TensorCoreIntrinEmitter(a_dtype="int8", b_dtype="int8", accum_dtype="int32", warp_row_tiles=32,
                                  warp_col_tiles=32, chunk=32)
    assert (em8.micro_size_k, em8.local_size_a, em8.local_size_b) == (32, 16, 16)


def test_bad_configurations_name_the_parameter():
    with pytest.raises(ValueError, match="a_dtype and b_dtype"):
        TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="bfloat16", accum_dtype="float32")
    with pytest.raises(ValueError, match="not supported"):
        TensorCoreIntrinEmitter(a_dtype="int8", b_dtype="int8", accum_dtype="float32")
    with pytest.raises(ValueError, match="chunk must be a multiple of 32"):
        TensorCoreIntrinEmitter(a_dtype="int8", b_dtype="int8", accum_dtype="int32", warp_row_tiles=16,
                                warp_col_tiles=16, chunk=16)
    with pytest.raises(ValueError, match="warp_row_tiles"):
        TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32", warp_row_tiles=8)
    em = TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32", warp_row_tiles=16,
                                 warp_col_tiles=16)
    with pytest.raises(NotImplementedError, match="make_mma_store_layout"):
        em.make_mma_store_layout(None)


def test_operands_must_be_per_thread_arrays():
    em = TensorCoreIntrinEmitter(a_dtype="float16", b_dtype="float16", accum_dtype="float32", block_row_warps=1,
                                 block_col_warps=1, warp_row_tiles=16, warp_col_tiles=16, chunk=16)
    with pytest.raises(TileLangCompileError, match="per-thread array"):
        @T.prim_func
        def main(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
            with T.Kernel(1, threads=32):
                A_shared = T.alloc_shared((16, 16), "float16")
                A_frag = T.alloc_fragment((16, 16), "float16")
                T.copy(A, A_shared)
                em.ldmatrix_a(A_frag, A_shared, 0)
