"""T.wgmma_gemm and T.wait_wgmma: a GEMM whose Hopper wgmmas are issued without a wait, and
the program's own wait. On the CPU the same programs run as ordinary GEMMs (checked against
numpy); for sm_90a the generated code is checked without a GPU (the wgmma issue, exactly one
wait per T.wait_wgmma and none implied); shapes and targets wgmma cannot serve are errors at
the user's line. Also the descriptor helpers upstream's tests use (compute_gmma_descriptor,
the bank-swizzled layout makers on tvm.tirx.decl_buffer)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import tvm
from tilelang.cuda.intrinsics.macro.wgmma_macro_generator import compute_gmma_descriptor
from tilelang.layout import SwizzleMode
from tilelang.layout.swizzle import (make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                                     make_quarter_bank_swizzled_layout)
from tvm import tirx

from conftest import assert_close, f64, rand

SM90 = "cuda -arch=sm_90a"


def sliced(M, N, K, parts, trans_b=True, dtype="float16", threads=128):
    """C = A @ B^T (or A @ B) accumulated over `parts` K-windows of the shared tiles."""
    kt = K // parts
    b_shape = (N, K) if trans_b else (K, N)

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor(b_shape, dtype), D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=threads):
            A_s = T.alloc_shared((M, K), dtype)
            B_s = T.alloc_shared(b_shape, dtype)
            C = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.clear(C)
            if trans_b:
                for j in T.serial(parts):
                    T.wgmma_gemm(A_s[:, j * kt:(j + 1) * kt], B_s[:, j * kt:(j + 1) * kt], C, transpose_B=True)
            else:
                T.wgmma_gemm(A_s, B_s, C)
            T.wait_wgmma(0)
            T.copy(C, D)
    return main


def static_window(M=64, N=64, K=32, c0=16):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "float16")
            B_s = T.alloc_shared((N, K), "float16")
            C = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s[:, c0:], B_s[:, c0:], C, transpose_B=True, clear_accum=True)
            T.wait_wgmma(0)
            T.copy(C, D)
    return main


def two_gemms_two_waits(M=64, N=64, K=64):
    """Two accumulators, each GEMM waited for on its own (wait(1) then wait(0))."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "bfloat16"), B: T.Tensor((K, N), "bfloat16"), B2: T.Tensor((K, N), "bfloat16"),
             D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, K), "bfloat16")
            B_s = T.alloc_shared((K, N), "bfloat16")
            B2_s = T.alloc_shared((K, N), "bfloat16")
            C = T.alloc_fragment((M, N), "float32")
            C2 = T.alloc_fragment((M, N), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.copy(B2, B2_s)
            T.wgmma_gemm(A_s, B_s, C, clear_accum=True)
            T.wgmma_gemm(A_s, B2_s, C2, clear_accum=True)
            T.wait_wgmma(1)
            T.wait_wgmma(0)
            for i, j in T.Parallel(M, N):
                D[i, j] = C[i, j] - 2 * C2[i, j]
    return main


def mla_like(H=64, BI=64, D=256, tail=64, stages=2, dtype="bfloat16"):
    """Upstream's sparse MLA pattern: three T.wgmma_gemm into one accumulator on column windows
    of Q and of a stage of a staged KV tile, one T.wait_wgmma(0) per stage."""
    W = D + tail

    @T.prim_func
    def main(Q: T.Tensor((H, W), dtype), KV: T.Tensor((stages, BI, W), dtype),
             S: T.Tensor((stages, H, BI), "float32")):
        with T.Kernel(1, threads=128):
            Q_s = T.alloc_shared((H, W), dtype)
            KV_s = T.alloc_shared((stages, BI, W), dtype)
            acc = T.alloc_fragment((H, BI), "float32")
            T.copy(Q, Q_s)
            T.copy(KV, KV_s)
            for st in T.serial(stages):
                T.clear(acc)
                T.wgmma_gemm(Q_s[:, :D // 2], KV_s[st, :, :D // 2], acc, transpose_B=True)
                T.wgmma_gemm(Q_s[:, D // 2:D], KV_s[st, :, D // 2:D], acc, transpose_B=True)
                T.wgmma_gemm(Q_s[:, D:], KV_s[st, :, D:], acc, transpose_B=True)
                T.wait_wgmma(0)
                T.copy(acc, S[st, :, :])
    return main


def pv_on_stage_windows(half=0, H=64, D=256, stages=2, dtype="bfloat16"):
    """Upstream's seesaw sparse MLA P V: P written into a stage's tail columns, then
    T.wgmma_gemm of that window (K-major A) by half of the stage's first D columns (an N-major
    B window of whole panels), both stages into one accumulator."""
    W, BI = D + H, H

    @T.prim_func
    def main(P: T.Tensor((stages, H, BI), dtype), KV: T.Tensor((stages, BI, W), dtype),
             O: T.Tensor((H, D // 2), "float32")):
        with T.Kernel(1, threads=128):
            KV_s = T.alloc_shared((stages, BI, W), dtype)
            acc = T.alloc_fragment((H, D // 2), "float32")
            T.copy(KV, KV_s)
            for st in T.serial(stages):
                T.copy(P[st, :, :], KV_s[st, :, D:])
            T.clear(acc)
            for st in T.serial(stages):
                T.wgmma_gemm(KV_s[st, :, D:], KV_s[st, :, half * (D // 2):(half + 1) * (D // 2)], acc,
                             transpose_B=False)
            T.wait_wgmma(0)
            T.copy(acc, O)
    return main


def run_cpu(func, *arrays, out_shape):
    kernel = tilelang.compile(func, target="cpu")
    out = np.full(out_shape, np.nan, dtype=np.float32)  # poisoned: every element must be written
    kernel(*arrays, out)
    return out


@pytest.mark.parametrize("M,N,K,parts", [(64, 64, 64, 4), (64, 64, 128, 4), (64, 64, 256, 8), (128, 64, 64, 2),
                                         (64, 128, 64, 2), (64, 64, 128, 2)])
def test_sliced_windows_on_cpu(rng, M, N, K, parts):
    a = rand(rng, (M, K), "float16")
    b = rand(rng, (N, K), "float16")
    out = run_cpu(sliced(M, N, K, parts), a, b, out_shape=(M, N))
    assert_close(out, f64(a) @ f64(b).T)


def test_static_window_and_two_waits_on_cpu(rng):
    a = rand(rng, (64, 32), "float16")
    b = rand(rng, (64, 32), "float16")
    out = run_cpu(static_window(), a, b, out_shape=(64, 64))
    assert_close(out, f64(a)[:, 16:] @ f64(b)[:, 16:].T)
    a = rand(rng, (64, 64), "bfloat16")
    b = rand(rng, (64, 64), "bfloat16")
    b2 = rand(rng, (64, 64), "bfloat16")
    out = run_cpu(two_gemms_two_waits(), a, b, b2, out_shape=(64, 64))
    assert_close(out, f64(a) @ f64(b) - 2 * (f64(a) @ f64(b2)))


def test_mla_like_windows_of_stages_on_cpu(rng):
    q, kv = rand(rng, (64, 320), "bfloat16"), rand(rng, (2, 64, 320), "bfloat16")
    out = np.full((2, 64, 64), np.nan, dtype=np.float32)
    tilelang.compile(mla_like(), target="cpu")(q, kv, out)
    assert_close(out, np.stack([f64(q) @ f64(kv[s]).T for s in range(2)]))


@pytest.mark.parametrize("half", [0, 1])
def test_pv_on_stage_windows_on_cpu(rng, half):
    p, kv = rand(rng, (2, 64, 64), "bfloat16"), rand(rng, (2, 64, 320), "bfloat16")
    out = run_cpu(pv_on_stage_windows(half), p, kv, out_shape=(64, 128))
    cols = slice(half * 128, (half + 1) * 128)
    assert_close(out, sum(f64(p[s]) @ f64(kv[s])[:, cols] for s in range(2)))


def _source(func):
    return tilelang.lower(func, target=SM90).kernel_source


def _waits(src):
    return re.findall(r"tl::wait_wgmma<(\d+)>\(\);", src)


@pytest.mark.parametrize("M,N,K,parts", [(64, 64, 64, 4), (64, 64, 256, 8), (128, 64, 64, 2), (64, 128, 128, 2)])
def test_sm90_issues_without_waiting(M, N, K, parts):
    src = _source(sliced(M, N, K, parts))
    # the GEMM only issues and commits; the one wait is the program's
    assert src.count("tl::gemm_ss_wgmma_issue<") == 1
    assert "tl::gemm_ss_wgmma<" not in src and "wgmma_wait_hold" not in src
    assert _waits(src) == ["0"]
    # the accumulator is pinned after the wait, so no read of it moves above it
    wait = src.index("tl::wait_wgmma<0>();")
    assert re.match(r"\s*tl::wgmma_hold<\d+>\(", src[wait + len("tl::wait_wgmma<0>();"):])
    # a narrower window names its tile's columns (KTileA, KTileB)
    kt = K // parts
    if kt * 2 % 128:
        assert f", {K}, {K}>(" in src


def test_sm90_whole_tiles_and_two_waits():
    src = _source(sliced(64, 128, 64, 1, trans_b=False))
    assert src.count("tl::gemm_ss_wgmma_issue<") == 1 and _waits(src) == ["0"]
    src = _source(two_gemms_two_waits())
    assert src.count("tl::gemm_ss_wgmma_issue<") == 2
    assert _waits(src) == ["1", "0"]
    # each wait pins both accumulators
    assert src.count("tl::wgmma_hold<") == 4


def test_sm90_static_window_starts_inside_a_panel():
    src = _source(static_window())
    assert src.count("tl::gemm_ss_wgmma_issue<") == 1 and _waits(src) == ["0"]
    assert "64, 64, 16, false, true, true, 1, 1, 32, 32>(" in src


def test_sm90_mla_like_windows_of_stages():
    src = _source(mla_like())
    assert src.count("tl::gemm_ss_wgmma_issue<") == 3 and _waits(src) == ["0"]
    # windows of 128 and 64 columns of tiles 320 wide: the tile's columns follow K
    assert src.count(", 320, 320>(") == 3


def test_sm90_n_major_windows_of_whole_panels():
    """B = KV_s[st, :, 128:256] (N-major, two 128-byte panels of a 320-wide stage): issued from
    the window's first panel, read as a tile of that width (KTileB = K)."""
    src = _source(pv_on_stage_windows(half=1))
    calls = re.findall(r"tl::gemm_ss_wgmma_issue<([^>]*)>\(([^;]*)\);", src)
    assert len(calls) == 1 and _waits(src) == ["0"]
    params, args = calls[0]
    assert params.replace(" ", "").startswith("64,128,64,false,false") and params.replace(" ", "").endswith(",320,64")
    # stage st of 64 x 320 elements; B's column 128 is panel 2 of 64 rows x 64 columns, A's
    # column 256 panel 4 (the stage's offset apart: tl.loop_terms_apart)
    a_ptr, b_ptr = args.split("), (")[:2]
    assert re.search(r"KV_s\[16384\]\) \+ \(st\w* \* 20480\)", a_ptr), args
    assert re.search(r"KV_s\[8192\]\) \+ \(st\w* \* 20480\)", b_ptr), args


def test_plain_gemm_keeps_its_own_wait():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16"), D: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            C = T.alloc_fragment((64, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, C, clear_accum=True)
            T.copy(C, D)

    src = _source(main)
    assert "tl::gemm_ss_wgmma<" in src and not _waits(src)


def test_wait_wgmma_pipelined_loop_is_not_warp_specialized():
    M, N, K, bk = 64, 64, 256, 64

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, bk), "float16")
            B_s = T.alloc_shared((N, bk), "float16")
            C = T.alloc_fragment((M, N), "float32")
            T.clear(C)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[0, k * bk], A_s)
                T.copy(B[0, k * bk], B_s)
                T.wgmma_gemm(A_s, B_s, C, transpose_B=True)
                T.wait_wgmma(0)
            T.copy(C, D)

    art = tilelang.lower(main, target=SM90)
    assert "mbarrier" not in art.kernel_source
    assert _waits(art.kernel_source) == ["0"]
    rng = np.random.default_rng(7)
    a, b = rand(rng, (M, K), "float16"), rand(rng, (N, K), "float16")
    assert_close(run_cpu(main, a, b, out_shape=(M, N)), f64(a) @ f64(b).T)


def explicit_ws(M=128, N=128, K=256, bM=64, bN=64, bK=64, stages=2, dtype="float16"):
    """Warpgroup 1 loads stages by TMA, warpgroup 0 issues T.wgmma_gemm on the stage, waits
    for it, then frees the stage (the wait before the release is the program's)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), dtype)
            B_s = T.alloc_shared((stages, bK, bN), dtype)
            acc = T.alloc_fragment((bM, bN), "float32")
            bars = T.alloc_barrier([128] * (2 * stages))
            with T.ws(0):
                T.clear(acc)
            for k in range(T.ceildiv(K, bK)):
                s = k % stages
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[s + stages], parity=((k // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bM:(by + 1) * bM, k * bK:(k + 1) * bK], A_s[s, :, :], barrier=bars[s])
                    T.tma_copy(B[k * bK:(k + 1) * bK, bx * bN:(bx + 1) * bN], B_s[s, :, :], barrier=bars[s])
                    T.mbarrier_arrive(mbarrier=bars[s])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[s], parity=(k // stages) % 2)
                    T.wgmma_gemm(A_s[s, :, :], B_s[s, :, :], acc)
                    T.wait_wgmma(0)
                    T.mbarrier_arrive(mbarrier=bars[s + stages])
            with T.ws(0):
                T.copy(acc, C[by * bM, bx * bN])
    return main


def test_explicit_warp_specialized_wgmma_gemm(rng):
    a, b = rand(rng, (128, 256), "float16"), rand(rng, (256, 128), "float16")
    assert_close(run_cpu(explicit_ws(), a, b, out_shape=(128, 128)), f64(a) @ f64(b))
    src = _source(explicit_ws())
    issue, wait = src.index("tl::gemm_ss_wgmma_issue<"), src.index("tl::wait_wgmma<0>();")
    release = src.index("tl::mbarrier_arrive((&bars[(s + 2)]))")
    assert issue < wait < release and _waits(src) == ["0"]


@pytest.mark.cpu_target  # the CPU runs the program that CUDA refuses
def test_pipelined_wgmma_gemm_must_be_waited_in_its_iteration(rng):
    M, N, K, bk = 64, 64, 256, 64

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, bk), "float16")
            B_s = T.alloc_shared((N, bk), "float16")
            C = T.alloc_fragment((M, N), "float32")
            T.clear(C)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[0, k * bk], A_s)
                T.copy(B[0, k * bk], B_s)
                T.wgmma_gemm(A_s, B_s, C, transpose_B=True)
            T.wait_wgmma(0)
            T.copy(C, D)

    # the next iteration's prefetch would overwrite the stage the wgmmas still read
    with pytest.raises(tvm.error.InternalError, match="not waited for with T.wait_wgmma"):
        tilelang.lower(main, target=SM90)
    a, b = rand(rng, (M, K), "float16"), rand(rng, (N, K), "float16")
    assert_close(run_cpu(main, a, b, out_shape=(M, N)), f64(a) @ f64(b).T)


def _rows32():
    @T.prim_func
    def main(A: T.Tensor((32, 64), "float16"), B: T.Tensor((64, 64), "float16"), D: T.Tensor((32, 64), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((32, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            C = T.alloc_fragment((32, 64), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.wgmma_gemm(A_s, B_s, C, clear_accum=True)
            T.wait_wgmma(0)
            T.copy(C, D)
    return main


@pytest.mark.parametrize("target", [SM90, "cuda -arch=sm_80"])
def test_cannot_use_wgmma_is_an_error_at_the_line(target):
    func = _rows32() if target == SM90 else sliced(64, 64, 64, 1, trans_b=False)
    with pytest.raises(tvm.error.InternalError, match=r"T\.wgmma_gemm\(\) requires Hopper WGMMA lowering") as e:
        tilelang.lower(func, target=target)
    text = str(e.value)
    assert "T.wgmma_gemm(" in text  # the user's line is shown
    assert ("M = 32" in text) if target == SM90 else ("sm_80" in text)


@pytest.mark.cpu_target  # wgmma cannot serve 32 rows on CUDA (the test above); the CPU runs it
def test_rows32_runs_on_cpu(rng):
    a, b = rand(rng, (32, 64), "float16"), rand(rng, (64, 64), "float16")
    assert_close(run_cpu(_rows32(), a, b, out_shape=(32, 64)), f64(a) @ f64(b))


def test_wait_wgmma_count_is_checked():
    with pytest.raises(Exception, match="non-negative int"):
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                T.wait_wgmma(-1)

        tilelang.lower(main, target="cpu")


# --- wgmma descriptor fields (in 16-byte units, as the descriptor holds them)

@pytest.mark.parametrize("maker,mode,field,sbo", [
    (make_full_bank_swizzled_layout, SwizzleMode.SWIZZLE_128B, 1, 64),
    (make_half_bank_swizzled_layout, SwizzleMode.SWIZZLE_64B, 2, 32),
    (make_quarter_bank_swizzled_layout, SwizzleMode.SWIZZLE_32B, 3, 16),
])
@pytest.mark.parametrize("rows,cols", [(64, 64), (128, 64), (64, 512), (8, 256)])
def test_descriptor_k_major(maker, mode, field, sbo, rows, cols):
    buf = tirx.decl_buffer((rows, cols), "float16", name="B", scope="shared")
    d = compute_gmma_descriptor(maker(buf), buf, transposed=False)
    assert d.swizzle_mode == mode and d.swizzle_mode.wgmma_layout_type() == field
    assert (d.leading_byte_offset, d.stride_byte_offset) == (1, sbo)


@pytest.mark.parametrize("k,n,lbo", [(64, 64, 0), (64, 128, 512), (32, 256, 256), (64, 192, 512)])
def test_descriptor_mn_major_128b(k, n, lbo):
    buf = tirx.decl_buffer((k, n), "bfloat16", name="V", scope="shared")
    d = compute_gmma_descriptor(make_full_bank_swizzled_layout(buf), buf, transposed=True)
    assert d.swizzle_mode == SwizzleMode.SWIZZLE_128B
    assert (d.leading_byte_offset, d.stride_byte_offset) == (lbo, 64)


def test_descriptor_float8_and_bad_tiles():
    buf = tirx.decl_buffer((64, 128), "float8_e4m3fn", name="Q", scope="shared")
    d = compute_gmma_descriptor(make_full_bank_swizzled_layout(buf), buf, transposed=False)
    assert (d.swizzle_mode, d.leading_byte_offset, d.stride_byte_offset) == (SwizzleMode.SWIZZLE_128B, 1, 64)
    narrow = tirx.decl_buffer((64, 16), "float16", name="N", scope="shared")  # 32-byte rows
    with pytest.raises(ValueError, match="128-byte swizzle"):
        compute_gmma_descriptor(make_full_bank_swizzled_layout(narrow), narrow, transposed=False)
    d = compute_gmma_descriptor(make_quarter_bank_swizzled_layout(narrow), narrow, transposed=False)
    assert (d.leading_byte_offset, d.stride_byte_offset) == (1, 16)


def test_decl_buffer_is_a_description_only():
    buf = tirx.decl_buffer((64, 32), T.float16, name="B", scope="shared.dyn")
    assert buf.shape == (64, 32) and buf.dtype == "float16" and buf.name == "B" and buf.scope == "shared"
    with pytest.raises(NotImplementedError, match="strides"):
        tirx.decl_buffer((4, 4), "float32", strides=(4, 1))
    with pytest.raises(Exception, match="not a kernel buffer"):
        @T.prim_func
        def main(A: T.Tensor((64, 32), "float16")):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((64, 32), "float16")
                T.copy(buf, S)

        tilelang.lower(main, target="cpu")


def test_sm90_kernels_compile_without_spills():
    """The issue template with windows (KTileA / KTileB), the wait and the holds compile for
    sm_90a (NVRTC or nvcc; not run: there is no GPU here)."""
    from tilelang import _tl
    from tilelang.jit.cuda_backend import _search_dirs

    ok, why = _tl.find_cuda_compiler(_search_dirs())
    if not ok:
        pytest.skip(f"no CUDA compiler: {why}")
    for func in (sliced(64, 64, 64, 4), sliced(128, 64, 64, 2), sliced(64, 128, 128, 2), static_window(),
                 two_gemms_two_waits(), sliced(64, 128, 64, 1, trans_b=False), mla_like(), explicit_ws()):
        usage = tilelang.compile(func, target=SM90)._cuda.resource_usage
        if usage["registers"] is None:
            pytest.skip("the compiler does not report ptxas statistics")
        assert usage["registers"] > 0 and usage["spill_stores_bytes"] == 0
