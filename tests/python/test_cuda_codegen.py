"""CUDA code generation checked without a GPU: representative kernels compile for sm_80
and sm_90a (NVRTC, or nvcc), their resource usage is reported, GEMMs do not spill, and
calling a kernel where there is no GPU is a clear error."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())
pytestmark = pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")
ARCHES = ["sm_80", "sm_90a"]


def gemm(M, N, K, bm=128, bn=128, bk=32, dtype="float16", accum="float32", stages=3, threads=128,
         trans_a=False, trans_b=False):
    a_shape = (K, M) if trans_a else (M, K)
    b_shape = (N, K) if trans_b else (K, N)
    a_tile = (bk, bm) if trans_a else (bm, bk)
    b_tile = (bn, bk) if trans_b else (bk, bn)

    @T.prim_func
    def main(A: T.Tensor(a_shape, dtype), B: T.Tensor(b_shape, dtype), C: T.Tensor((M, N), accum)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared(a_tile, dtype)
            B_s = T.alloc_shared(b_tile, dtype)
            C_l = T.alloc_fragment((bm, bn), accum)
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                if trans_a:
                    T.copy(A[k * bk, by * bm], A_s)
                else:
                    T.copy(A[by * bm, k * bk], A_s)
                if trans_b:
                    T.copy(B[bx * bn, k * bk], B_s)
                else:
                    T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l, transpose_A=trans_a, transpose_B=trans_b)
            for i, j in T.Parallel(bm, bn):
                C_l[i, j] = T.max(C_l[i, j], 0)
            T.copy(C_l, C[by * bm, bx * bn])
    return main


def row_softmax(M, N, bm=4):
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=128) as bx:
            x = T.alloc_fragment((bm, N), "float32")
            mx = T.alloc_fragment((bm,), "float32")
            sm = T.alloc_fragment((bm,), "float32")
            T.copy(X[bx * bm, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = T.exp(x[i, j] - mx[i])
            T.reduce_sum(x, sm, dim=1)
            for i, j in T.Parallel(bm, N):
                x[i, j] = x[i, j] / sm[i]
            T.copy(x, Y[bx * bm, 0])
    return main


def compile_for(func, arch, **kw):
    return tilelang.compile(func, target=f"cuda -arch={arch}", **kw)


@pytest.mark.parametrize("arch", ARCHES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans", [(False, False), (False, True), (True, False)])
def test_gemm_compiles_without_spills(arch, dtype, trans):
    k = compile_for(gemm(1024, 1024, 1024, dtype=dtype, trans_a=trans[0], trans_b=trans[1]), arch)
    usage = k._cuda.resource_usage
    print(f"gemm {dtype} {arch} trans={trans}: {usage['registers']} registers, "
          f"{usage['spill_stores_bytes']} B spilled, {k._cuda.src.shared_bytes} B shared")
    if usage["registers"] is None:
        pytest.skip(f"{k._cuda.compiler} does not report ptxas statistics")
    assert usage["registers"] > 0
    assert usage["spill_stores_bytes"] == 0 and usage["spill_loads_bytes"] == 0
    src = k.get_kernel_source()
    if arch == "sm_80":
        assert "tl::gemm_ss<" in src and "cp_async_zfill_16" in src
        assert any("mma.sync" in r for r in k.get_remarks())
    else:
        # 128 rows on one warpgroup: two m64 wgmmas per k16 step, K = 32 K-major tiles in the
        # 64-byte swizzle, TMA loads in a warp-specialized pipeline
        assert "tl::gemm_ss_wgmma" in src and "tl::tma_load" in src, src
        assert any("2 64-row blocks each" in r for r in k.get_remarks()), k.get_remarks()


def test_every_kernel_may_use_the_whole_register_file():
    """__launch_bounds__(threads, 1): without the minimum of one block per SM, NVRTC gave a
    256-thread kernel that spills anyway 128 registers (upstream's sparse MLA forward: 7 KB
    spilled at 128 registers, 3.7 KB at 255 with the minimum; nvcc chose 255 either way)."""
    for threads in (128, 256):
        k = compile_for(gemm(1024, 1024, 1024, bm=256, bn=128, threads=threads, stages=2), "sm_80")
        assert f"__launch_bounds__({threads}, 1)" in k.get_kernel_source()


@pytest.mark.parametrize("arch", ARCHES)
def test_other_kernels_compile(arch):
    kernels = {
        "ragged gemm": gemm(1000, 999, 130, bm=64, bn=64, bk=32, stages=2),
        "float32 gemm (no tensor cores)": gemm(256, 256, 64, dtype="float32", bm=64, bn=64, stages=2),
        "int8 gemm": gemm(256, 256, 64, dtype="int8", accum="int32", bm=64, bn=64, stages=2),
        "row softmax": row_softmax(100, 256),
    }
    for name, func in kernels.items():
        k = compile_for(func, arch)
        usage = k._cuda.resource_usage
        print(f"{name} {arch}: {usage['registers']} registers, {usage['spill_stores_bytes']} B spilled")
        assert "__global__" in k.get_kernel_source()


def _scale_2d(M, N, swizzle=None):
    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 32), threads=128) as (bx, by):
            if swizzle:
                T.use_swizzle(swizzle)
            t = T.alloc_fragment((32, 32), "float32")
            T.copy(A[by * 32, bx * 32], t)
            for i, j in T.Parallel(32, 32):
                t[i, j] = t[i, j] * 2
            T.copy(t, B[by * 32, bx * 32])

    return main


def test_element_wise_grids_are_not_rasterized_unless_asked():
    # blocks reading disjoint tiles share nothing in L2: the panel order's arithmetic only delays them
    assert "tl_linear" not in compile_for(_scale_2d(1024, 1024), "sm_90a").get_kernel_source()
    assert "tl_linear" in compile_for(_scale_2d(1024, 1024, swizzle=4), "sm_90a").get_kernel_source()


def test_remarks_and_rasterization():
    k = compile_for(gemm(4096, 4096, 4096), "sm_80")
    remarks = "\n".join(k.get_remarks())
    assert "3-stage cp.async pipeline" in remarks
    assert "registers, layout mma_acc(128x128, warps 2x2)" in remarks
    assert "tl_linear" in k.get_kernel_source()  # blocks launched in panels for L2 reuse
    k = compile_for(gemm(4096, 4096, 4096), "sm_90a")
    remarks = "\n".join(k.get_remarks())
    # (3 stages and one more: the short k-tiles' wgmmas stay in flight)
    assert "warp-specialized, 4 stages" in remarks and "mma_acc(128x128, warps 4x1 interleaved)" in remarks, remarks
    assert "tl_linear" in k.get_kernel_source()


def test_raster_panel_config_overrides_the_automatic_order():
    src = lambda **cfg: compile_for(gemm(4096, 4096, 4096), "sm_90a", pass_configs=cfg).get_kernel_source()
    assert "tl_linear" not in src(**{"tl.raster_panel": 0})  # the plain block order
    assert "const int tl_group = 4 * gridDim.y;" in src(**{"tl.raster_panel": 4})
    # T.use_swizzle in the source wins over the config
    scaled = compile_for(_scale_2d(1024, 1024, swizzle=2), "sm_90a", pass_configs={"tl.raster_panel": 0})
    assert "const int tl_group = 2 * gridDim.y;" in scaled.get_kernel_source()
    with pytest.raises(Exception, match="tl.raster_panel must be a non-negative integer"):
        compile_for(gemm(256, 256, 64, bm=64, bn=64), "sm_90a", pass_configs={"tl.raster_panel": -1})


def test_call_without_gpu_is_a_clear_error():
    ok, _ = _tl.cuda_available()
    if ok:
        pytest.skip("a GPU is present")
    k = compile_for(gemm(256, 256, 64, bm=64, bn=64), "sm_80")
    a = np.zeros((256, 64), np.float16)
    with pytest.raises(tilelang.TileLangRuntimeError, match="needs a CUDA device"):
        k(a, a, a)


def test_shared_memory_over_the_limit_is_a_clear_error():
    # the tiles' stages, plus the warp-specialized pipeline's mbarriers (8 bytes per stage and kind)
    needed = 4 * (256 * 64 + 64 * 256) * 2 + 4 * 2 * 8
    with pytest.raises(tilelang.TileLangRuntimeError, match=f"needs {needed} bytes of shared memory, the device "
                                                            r"\(sm_90a\) has 232448"):
        compile_for(gemm(4096, 4096, 4096, bm=256, bn=256, bk=64, stages=4, threads=256), "sm_90a")


def test_attention_keeps_the_softmax_tile_in_registers():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    from attention_kernel import flash_attention

    k = compile_for(flash_attention(2, 4, 512, 128, causal=True), "sm_90a")
    remarks = "\n".join(k.get_remarks())
    assert "A from registers" in remarks, remarks
    assert "warp shuffles" in remarks, remarks
    usage = k._cuda.resource_usage
    print(f"attention sm_90a: {usage['registers']} registers, {usage['spill_stores_bytes']} B spilled")


def test_two_kernels_in_one_function_become_two_launches():
    """Each T.Kernel is its own CUDA kernel, launched in program order (the second here
    reads what the first wrote; run on the GPU by TILELANG_TEST_CUDA=1 in test_control_flow)."""
    @T.prim_func
    def two(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64) as bx:
            for i in T.Parallel(64):
                B[i] = A[i]
        with T.Kernel(2, threads=32) as bx:
            for i in T.Parallel(32):
                B[bx * 32 + i] = B[bx * 32 + i] * 2

    k = compile_for(two, "sm_80")
    src = k.get_kernel_source()
    assert src.count("__global__") == 2, src
    assert "two_0(" in src and "two_1(" in src, src
    assert "launched in order" in "\n".join(k.get_remarks())
    blocks = [(s.entry, list(s.block[:1])) for s in k._cuda.srcs]
    assert blocks == [("two_0", [64]), ("two_1", [32])], blocks



@pytest.mark.parametrize("trans", [(False, False), (False, True), (True, False), (True, True)])
def test_hopper_tile_shapes_select_wgmma(trans):
    """sm_90a with one warp per 16 rows of C and 64-element K panels: T.gemm becomes
    tl::gemm_ss_wgmma; on sm_80 the same program stays on mma.sync."""
    import test_gemm

    prog = test_gemm.gemm_kernel.func(200, 136, 150, 128, 128, 64, "bfloat16", "float32", *trans, 3, 256)
    hopper = compile_for(prog, "sm_90a")
    # (issued asynchronously inside a warp-specialized main loop: test_warp_specialize.py)
    assert re.search(r"tl::gemm_ss_wgmma(_issue)?<128, 128, 64", hopper.get_kernel_source())
    assert any("wgmma m64n128k16" in r for r in hopper.get_remarks()), hopper.get_remarks()
    assert hopper._cuda.resource_usage["spill_stores_bytes"] in (0, None)
    ampere = compile_for(prog, "sm_80")
    assert "gemm_ss_wgmma" not in ampere.get_kernel_source()


def test_gemm_that_cannot_use_wgmma_says_why():
    # 192 rows on 256 threads: neither one 64-row block per warpgroup, nor whole blocks
    # per warpgroup, nor warpgroups splitting N.
    k = compile_for(gemm(384, 256, 256, bm=192, threads=256), "sm_90a")
    assert any("not wgmma: wgmma needs one warp per 16 rows" in r for r in k.get_remarks()), k.get_remarks()
    # a 32-column tile is the 64-byte swizzle only along K: M-major A with 32 rows of M is not
    k = compile_for(gemm(256, 256, 256, bm=32, bk=64, trans_a=True, threads=128), "sm_90a")
    assert any("not wgmma" in r for r in k.get_remarks()), k.get_remarks()


def test_attention_on_hopper_takes_wgmma_for_both_gemms():
    """One warp per 16 rows: Q K^T reads both operands from shared memory and P V takes
    P from registers, both on wgmma, with no spills."""
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
    from attention_kernel import flash_attention

    k = compile_for(flash_attention(1, 4, 512, 128, causal=True, block_M=128, block_N=128, threads=256), "sm_90a")
    src = k.get_kernel_source()
    # The trailing `false`: K and V come from TMA, so the wgmmas skip their proxy fence.
    # (issued and awaited apart: the softmax overlap, test_ws_softmax_overlap.py)
    # (Q K^T overwrites the scores: AccumulateC false, after KTileA and KTileB)
    assert "tl::gemm_ss_wgmma_issue<128, 128, 128, false, true, false, 1, 1, 128, 128, false>" in src, src
    assert "tl::gemm_rs_wgmma_issue<128, 128, 128, false, false>" in src, src
    assert k._cuda.resource_usage["spill_stores_bytes"] in (0, None)


def test_long_loops_over_shared_memory_unroll_partially():
    """A tile spread over very few threads makes loops of hundreds of iterations; unrolling
    them fully (with a dot product inside) took NVRTC minutes. They unroll by 4, while
    loops over register arrays still unroll fully (their indices must be constants)."""
    @T.prim_func
    def few_threads(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=2) as bx:
            s = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_local((64,), "float32")
            T.copy(A, s)
            # (16-byte groups: 512 of them per thread)
            for i, j in T.Parallel(64, 64):
                s[i, j] = s[i, j] * 2.0
            for r in T.unroll(64):
                acc[r] = s[0, r % 32]
            T.copy(s, B)
            B[0, 0] = acc[63]
    lowered, _, _ = _tl.lower_cuda(few_threads.node, {"tl.target_arch": "sm_90a"}, False)
    code = _tl.codegen_cuda(lowered).code
    assert "#pragma unroll 4\n  for (int32_t it" in code.replace("    ", "  ")
    # The loop over the register array acc keeps full unrolling.
    assert re.search(r"#pragma unroll\n\s*for \(int32_t r = 0; r < 64", code)
