"""Upstream TileLang's module names that its programs and tests import (tilelang.cuda,
tilelang.contrib.nvcc, tilelang.rocm, tilelang.engine.callback, tilelang.language.tir /
kernel / fp8, tilelang._ffi_api, vector dtypes, the 8x8 MMA fragments): behaviour, and a
clear error for the names we cannot back."""
from __future__ import annotations

import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, cpu_target_only


# --------------------------------------------------------------------------- tilelang.cuda

def test_swizzle_layout_is_an_xor_of_16_byte_vectors():
    from tilelang.cuda.intrinsics import get_swizzle_layout

    # float16, 64 elements a row = 128 bytes: 8 vectors of 8 elements, XOR with row % 8
    for row in range(16):
        cols = [get_swizzle_layout(row, c, 64, "float16")[2] for c in range(64)]
        assert sorted(cols) == list(range(64))  # a permutation of the row
        for c in range(64):
            assert cols[c] == ((c // 8) ^ (row % 8)) * 8 + c % 8
    # 64-byte rows: 4 vectors, rows paired: mask (row % 8) // 2
    assert get_swizzle_layout(2, 0, 32, "float16") == (0, 2, 8)
    # rows longer than 128 bytes: the column's 128-byte tile is the first coordinate
    assert get_swizzle_layout(1, 70, 128, "float16") == (1, 1, ((70 % 64) // 8 ^ 1) * 8 + 70 % 8)
    with pytest.raises(ValueError, match="multiple of 32 bytes"):
        get_swizzle_layout(0, 0, 8, "float16")


def test_make_mma_swizzle_layout_is_an_accepted_hint():
    from tilelang.cuda.intrinsics import make_mma_swizzle_layout

    @T.prim_func
    def f(A: T.Tensor((16, 64), "float16"), B: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((16, 64), "float16")
            T.annotate_layout({S: make_mma_swizzle_layout(S)})
            T.copy(A, S)
            T.copy(S, B)

    k = compile_cpu(f)
    a = np.arange(16 * 64, dtype=np.float16).reshape(16, 64)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_array_equal(a, b)

    class Buf:
        shape, dtype = (8, 64), "float16"

    lay = make_mma_swizzle_layout(Buf())
    assert lay(1, 0) == [0, 1, 8]
    assert make_mma_swizzle_layout(Buf(), is_smooth=True)(1, 0) == [1, 0]


def test_cuda_emitters_import_and_say_they_are_not_provided():
    from tilelang.cuda.intrinsics.macro.mma_macro_generator import TensorCoreIntrinEmitter as MMA
    from tilelang.cuda.intrinsics.macro.wgmma_macro_generator import compute_gmma_descriptor
    from tilelang.cuda.language.intrinsics import (
        TCGEN05TensorCoreIntrinEmitter, TensorCoreIntrinEmitter, WGMMATensorCoreIntrinEmitter)

    # the mma.sync emitter is provided (tests/python/test_mma_emitter.py), under T too
    assert MMA is TensorCoreIntrinEmitter is T.TensorCoreIntrinEmitter
    for cls in (WGMMATensorCoreIntrinEmitter, TCGEN05TensorCoreIntrinEmitter):
        with pytest.raises(NotImplementedError, match=cls.__name__):
            cls(a_dtype="float16")
    # provided since the twelfth session (tests/python/test_wgmma_gemm.py); a non-tile says so
    with pytest.raises(ValueError, match="compute_gmma_descriptor"):
        compute_gmma_descriptor(None, None)


# --------------------------------------------------------------------------- tilelang.layout

def test_gemm_fragment_8x8_and_its_transpose():
    from tilelang.layout import make_gemm_fragment_8x8, make_gemm_fragment_8x8_transposed

    f, t = make_gemm_fragment_8x8(), make_gemm_fragment_8x8_transposed()
    assert f.shape == t.shape == (8, 8) and f.thread_extent() == t.thread_extent() == 32
    for i in range(8):
        for j in range(8):
            assert f.forward_thread_fn(i, j) == 4 * i + j // 2 and f.forward_fn(i, j) == [j % 2]
            assert t.forward_thread_fn(i, j) == f.forward_thread_fn(j, i)
            assert t.forward_fn(i, j) == f.forward_fn(j, i)


def test_fragment_repeat_on_registers_and_on_threads():
    from tilelang.layout import make_gemm_fragment_8x8

    f = make_gemm_fragment_8x8()
    regs = f.repeat([2, 1], repeat_on_thread=False)
    assert regs.shape == (16, 8) and regs.thread_extent() == 32
    assert regs.forward_thread_fn(9, 3) == f.forward_thread_fn(1, 3)
    assert regs.forward_fn(9, 3) == [f.forward_fn(1, 3)[0] + 2]
    thr = f.repeat([1, 2], repeat_on_thread=True)
    assert thr.shape == (8, 16) and thr.thread_extent() == 64
    assert thr.forward_thread_fn(0, 9) == f.forward_thread_fn(0, 1) + 32
    # lower_dim_first: which copy comes first when repeating along two dimensions
    two = f.repeat([2, 2], repeat_on_thread=False, lower_dim_first=True)
    assert two.forward_fn(0, 8) == [2] and two.forward_fn(8, 0) == [4]
    two = f.repeat([2, 2], repeat_on_thread=False, lower_dim_first=False)
    assert two.forward_fn(0, 8) == [4] and two.forward_fn(8, 0) == [2]
    with pytest.raises(ValueError):
        f.repeat([2])


def test_swizzle_mode_codes():
    from tilelang.layout import SwizzleMode
    from tilelang.layout.swizzle import make_full_bank_swizzled_layout  # noqa: F401

    assert [m.swizzle_byte_size() for m in SwizzleMode] == [1, 32, 64, 128]
    assert SwizzleMode.SWIZZLE_128B.wgmma_layout_type() == 1 and SwizzleMode.SWIZZLE_32B.wgmma_layout_type() == 3
    assert SwizzleMode.SWIZZLE_64B.tcgen05_layout_type() == 4
    assert SwizzleMode.from_ordinal(3) is SwizzleMode.SWIZZLE_128B and SwizzleMode.NONE.is_none()


# --------------------------------------------------------------------------- dtypes

def test_vector_dtype_names():
    from tilelang.language.dtypes import _all_dtypes

    assert T.float32x2 == "float32x2" and T.float32x2.lanes == 2 and T.float32x2.bits == 32
    assert T.float4_e2m1fnx2.element == "float4_e2m1fn" and T.float4_e2m1fnx2.bits == 4
    assert T.int8x16.lanes == 16 and T.int8.lanes == 1
    assert all(isinstance(getattr(T, n), T.dtype) for n in _all_dtypes)
    with pytest.raises(ValueError):
        T.dtype("float32x3")
    with pytest.raises(AttributeError):
        T.float32x3  # noqa: B018
    # name only: kernels compute on scalars here
    with pytest.raises(Exception, match="not supported inside kernels"):
        @T.prim_func
        def f(A: T.Tensor((4,), T.float32x2)):
            with T.Kernel(1):
                pass


def test_torch_storage_dtypes():
    torch = pytest.importorskip("torch")
    from tilelang.language.dtypes import _TORCH_DTYPE_TO_STR, resolve_torch_storage_dtype

    assert resolve_torch_storage_dtype(T.float16) == T.float16
    assert resolve_torch_storage_dtype(T.int4) == T.int8
    want = T.float4_e2m1fnx2 if hasattr(torch, "float4_e2m1fn_x2") else T.int8
    assert resolve_torch_storage_dtype(T.float4_e2m1fn) == want
    assert _TORCH_DTYPE_TO_STR[torch.float16] == "float16" and _TORCH_DTYPE_TO_STR[torch.int] == "int32"


# --------------------------------------------------------------------------- language modules

def test_cast_rounding_arguments():
    from tilelang.language.tir.ir import _VALID_CAST_ROUNDING_MODES, cast

    assert T.cast is cast and {"", "rn", "rz", "rp", "rm", "rs"} == _VALID_CAST_ROUNDING_MODES
    with pytest.raises(ValueError, match="Invalid round"):
        T.cast(1.0, "float16", round="up")
    with pytest.raises(ValueError, match="Invalid sat"):
        T.cast(1.0, "float16", sat="yes")
    with pytest.raises(ValueError, match="rbits is required"):
        T.cast(1.0, "float16", round="rs")
    with pytest.raises(ValueError, match="rbits is only valid"):
        T.cast(1.0, "float16", round="rn", rbits=T.int32(3))
    # stochastic rounding is an expression of the target type (test_stochastic_rounding.py)
    assert str(T.cast(1.0, "float16", round="rs", rbits=T.int32(3)).dtype) == "float16"

    @T.prim_func
    def f(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                B[i] = T.cast(A[i], "int32", round="rz", sat=False)

    b = np.zeros(4, dtype=np.int32)
    compile_cpu(f)(np.array([1.5, -2.5, 3.0, 7.9], dtype=np.float32), b)
    np.testing.assert_array_equal(b, [1, -2, 3, 7])


@pytest.mark.parametrize("threads, want", [(None, [128, 1, 1]), (64, [64, 1, 1]), ([32, 4], [32, 4, 1]),
                                           ((8, 2, 2), [8, 2, 2])])
def test_normalize_threads(threads, want):
    from tilelang.language.kernel import _normalize_threads

    assert _normalize_threads(threads) == want


@pytest.mark.parametrize("threads", [0, -1, [32, 0], (4, 1, -2), [1, 1, 1, 1]])
def test_non_positive_threads_are_rejected(threads):
    from tilelang.language.kernel import _normalize_threads

    with pytest.raises(ValueError, match="threads"):
        _normalize_threads(threads)
    with pytest.raises(Exception, match="threads"):
        @T.prim_func
        def f(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=threads):
                A[0] = 1.0


def test_determine_fp8_type():
    from tilelang.language.fp8 import determine_fp8_type

    assert determine_fp8_type() == T.float8_e4m3fn and determine_fp8_type("e5m2") == T.float8_e5m2
    with pytest.raises(ValueError):
        determine_fp8_type("e3m4")


# --------------------------------------------------------------------------- toolchain modules

def test_nvcc_versions(monkeypatch):
    from tilelang.contrib import nvcc

    assert nvcc.parse_compute_version("9.0") == (9, 0)
    assert nvcc.get_target_arch("9.0") == "90a" and nvcc.get_target_arch((8, 6)) == "86"
    assert nvcc.get_target_compute_version(tilelang.tvm.target.Target("cuda -arch=sm_80")) == "8.0"
    with tilelang.tvm.target.Target("cuda -arch=sm_120a"):
        assert nvcc.get_target_compute_version() == "12.0"
    monkeypatch.setenv("TILELANG_CUDA_ARCH", "sm_89")
    assert nvcc.get_target_compute_version() == "8.9"
    ok, _ = tilelang._tl.find_cuda_compiler([])
    if ok:
        major, minor = nvcc.get_cuda_version()
        assert major >= 11 and minor >= 0


def test_rocm_is_never_available():
    from tilelang.rocm.target import check_hip_availability

    assert check_hip_availability() is False


def test_ffi_api_names_say_they_are_not_provided():
    from tilelang import _ffi_api

    with pytest.raises(NotImplementedError, match="get_tcgen5_instr_desc"):
        _ffi_api.get_tcgen5_instr_desc(128, 128, 32)
    assert not hasattr(_ffi_api, "no_such_function")


def test_cuda_postproc_callback_rewrites_the_source(monkeypatch):
    from tilelang.engine import callback

    monkeypatch.setattr(callback, "_hooks", {})
    seen = []

    @callback.register_cuda_postproc_callback
    def add_marker(code, target):
        seen.append(target)
        return "// marker-from-callback\n" + code

    assert callback.postprocess("cuda", "int x;", "cuda") == "// marker-from-callback\nint x;"
    assert seen == ["cuda"] and callback.postprocess("hip", "y") == "y"
    with pytest.raises(ValueError, match="already registered"):
        callback.register_cuda_postproc(lambda c, t: c, override=False)
    callback.register_cuda_postproc(lambda c, t: 3)
    with pytest.raises(TypeError, match="not the source str"):
        callback.postprocess("cuda", "int x;")


@pytest.mark.skipif(not os.environ.get("TILELANG_CUDA_ARCH") and tilelang.testing.cuda_compute_version() == (0, 0),
                    reason="needs a GPU or TILELANG_CUDA_ARCH to compile CUDA")
def test_cuda_postproc_callback_reaches_the_compiled_kernel(monkeypatch):
    from tilelang.engine import callback

    monkeypatch.setattr(callback, "_hooks", {})
    callback.register_cuda_postproc_callback(lambda code, target: "// marker-from-callback\n" + code)

    @T.prim_func
    def f(A: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                A[i] = 1.0

    src = tilelang.compile(f, target="cuda").get_kernel_source()
    assert src.startswith("// marker-from-callback")


# --------------------------------------------------------------------------- fast math, dtype bits

def test_dtype_bits():
    assert [T.dtype(n).bits for n in ("float64", "float8_e4m3fn", "float6_e2m3fn", "float4_e2m1fn",
                                      "float4_e2m1_unpacked", "int4", "bool", "tfloat32")] == [64, 8, 6, 4, 8, 4, 8, 32]


@pytest.mark.parametrize("name", ["__exp", "__exp10", "__log", "__log2", "__log10", "__sin", "__cos", "__tan"])
def test_fastmath_names_take_floats_only(name):
    f = getattr(T, name)
    for dt in ("float16", "bfloat16", "float32", "float64"):
        assert f(T.Var("x", dt)).dtype == dt
    for dt in ("int32", "uint8", "bool"):
        with pytest.raises(TypeError, match=rf"T\.{name} only supports floating-point inputs, but got {dt}"):
            f(T.Var("x", dt))


def test_fastmath_values():
    @T.prim_func
    def f(A: T.Tensor((8,), "float32"), B: T.Tensor((8, 8), "float32")):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[0, i] = T.__exp(A[i])
                B[1, i] = T.__exp10(A[i])
                B[2, i] = T.__log(A[i])
                B[3, i] = T.__log2(A[i])
                B[4, i] = T.__log10(A[i])
                B[5, i] = T.__sin(A[i])
                B[6, i] = T.__cos(A[i])
                B[7, i] = T.__tan(A[i])

    a = np.linspace(0.25, 2.0, 8, dtype=np.float32)
    b = np.zeros((8, 8), dtype=np.float32)
    compile_cpu(f)(a, b)
    want = [np.exp(a), 10.0 ** a, np.log(a), np.log2(a), np.log10(a), np.sin(a), np.cos(a), np.tan(a)]
    np.testing.assert_allclose(b, np.stack(want), rtol=1e-5)


# --------------------------------------------------------------------------- autotuner.param

def test_autotuner_param_records():
    from dataclasses import replace

    from tilelang.autotuner import AutoTuner
    from tilelang.autotuner.param import AutotuneResult, CompileArgs, ProfileArgs  # noqa: F401

    t = AutoTuner(lambda block=8: None, configs=[{"block": 8}])
    assert t.compile_args == CompileArgs() and t.profile_args == ProfileArgs()
    t.set_compile_args(out_idx=[-1], target="cpu").set_profile_args(warmup=1, rep=2, skip_check=True)
    assert t.compile_args.out_idx == [-1] and t.compile_args.target == "cpu"
    assert t.profile_args.warmup == 1 and t.profile_args.skip_check
    assert replace(t.compile_args, out_idx=[0]).out_idx == [0] and t.compile_args.out_idx == [-1]


def test_autotuner_runs_with_replaced_records():
    from dataclasses import replace

    from tilelang.autotuner import AutoTuner
    from tilelang.autotuner.param import CompileArgs, ProfileArgs

    def program(block=8):
        @T.prim_func
        def f(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
            with T.Kernel(32 // block, threads=block) as bx:
                for i in T.Parallel(block):
                    B[bx * block + i] = A[bx * block + i] * 2.0
        return f

    t = AutoTuner(program, configs=[{"block": 8}, {"block": 16}])
    t.compile_args = replace(CompileArgs(), out_idx=[-1], target="cpu")
    t.profile_args = replace(ProfileArgs(), warmup=1, rep=2, skip_check=True)
    res = t.run()
    assert res.config in ({"block": 8}, {"block": 16})
    a = np.arange(32, dtype=np.float32)
    np.testing.assert_array_equal(res.kernel(a), a * 2)


# --------------------------------------------------------------------------- tilelang.transform.simplify

def test_apply_simplify_and_simplify_prim_func():
    from tilelang.transform import simplify_prim_func
    from tilelang.transform.simplify import apply_simplify

    @simplify_prim_func
    def program(n):
        @T.prim_func
        def f(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=16):
                for i in T.Parallel(16):
                    B[i] = A[(i * 4 + 0) // 4 + n - n] * (1.0 + 0.0)
        return f

    f = program(3)
    assert "i * 4" not in f.script()
    b = np.zeros(16, dtype=np.float32)
    compile_cpu(f)(np.arange(16, dtype=np.float32), b)
    np.testing.assert_array_equal(b, np.arange(16, dtype=np.float32))
    assert apply_simplify(f).script() == f.script()
    with pytest.raises(TypeError):
        apply_simplify(lambda: None)


def test_apply_simplify_drops_tensor_parameters_the_body_never_uses(rng):
    """As upstream's (Simplify with simplify_arguments): a GEMV built without its bias."""
    from tilelang.transform.simplify import apply_simplify

    def gemv(with_bias):
        @T.prim_func
        def f(A: T.Tensor((8, 16), "float32"), x: T.Tensor((16,), "float32"),
              Bias: T.Tensor((8,), "float32"), y: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8):
                for i in T.Parallel(8):
                    acc = T.alloc_var("float32")
                    for k in T.serial(16):
                        acc += A[i, k] * x[k]
                    if with_bias:
                        y[i] = acc + Bias[i]
                    else:
                        y[i] = acc
        return apply_simplify(f)

    a = rng.standard_normal((8, 16)).astype(np.float32)
    x = rng.standard_normal(16).astype(np.float32)
    bias = rng.standard_normal(8).astype(np.float32)
    y = np.full(8, np.nan, np.float32)
    k = compile_cpu(gemv(False))
    assert [p.name for p in k.params] == ["A", "x", "y"]
    k(a, x, y)
    np.testing.assert_allclose(y, a.astype(np.float64) @ x, rtol=1e-5)
    y[:] = np.nan
    compile_cpu(gemv(True))(a, x, bias, y)
    np.testing.assert_allclose(y, a.astype(np.float64) @ x + bias, rtol=1e-5)


def test_eager_ast_names_say_they_are_not_provided():
    from tilelang.language.eager.ast import BaseBuilder, mutate

    class Sub(BaseBuilder):  # subclassing at import time works, as upstream's tests do it
        pass

    with pytest.raises(NotImplementedError, match="mutate"):
        mutate(lambda: None)
    with pytest.raises(NotImplementedError, match="BaseBuilder"):
        Sub()


# --------------------------------------------------------------------------- tilelang.tools.Analyzer

def _gemm(M, N, K, bm, bn, bk):
    @T.prim_func
    def f(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(N // bn, M // bm, threads=128) as (bx, by):
            As = T.alloc_shared((bm, bk), "float16")
            Bs = T.alloc_shared((bk, bn), "float16")
            Cf = T.alloc_fragment((bm, bn), "float32")
            T.clear(Cf)
            for k in T.Pipelined(K // bk, num_stages=2):
                T.copy(A[by * bm, k * bk], As)
                T.copy(B[k * bk, bx * bn], Bs)
                T.gemm(As, Bs, Cf)
            T.copy(Cf, C[by * bm, bx * bn])
    return f


def test_analyzer_counts_gemm_flops_and_global_bytes():
    from tilelang.tools import AnalysisResult, Analyzer

    M, N, K, bm, bn, bk = 256, 128, 512, 64, 64, 32
    blocks = (M // bm) * (N // bn)

    class H200:
        name = "NVIDIA H200"

    r = Analyzer.analysis(_gemm(M, N, K, bm, bn, bk), H200())
    assert isinstance(r, AnalysisResult)
    assert r.total_flops == 2 * M * N * K
    # per block and k step: an A tile and a B tile (fp16); per block: the C tile
    assert r.total_global_bytes == blocks * ((K // bk) * (bm * bk + bk * bn) * 2 + bm * bn * 2)
    assert r.expected_tflops == 989.4 and r.expected_bandwidth_GBps == 4800.0
    assert r.estimated_time == max(r.total_flops / 989.4e12, r.total_global_bytes / 4800e9)

    class Unknown:
        name = "some GPU"

    r = Analyzer.analysis(_gemm(M, N, K, bm, bn, bk), Unknown())
    assert r.total_flops == 2 * M * N * K and r.estimated_time is None and r.expected_tflops is None
    with pytest.raises(TypeError):
        Analyzer.analysis(lambda: None, H200())


def test_carver_cdna_says_there_is_no_hip_backend():
    from tilelang.carver.arch import CDNA

    with pytest.raises(NotImplementedError, match="HIP"):
        CDNA("hip")


def test_package_level_names_upstream_imports_eagerly():
    import tilelang.engine.callback as callback
    import tilelang.layout as layout
    import tilelang.profiler as profiler

    assert tilelang.Layout is layout.Layout and tilelang.Fragment is layout.Fragment
    assert tilelang.Profiler is profiler.Profiler
    assert tilelang.register_cuda_postproc is callback.register_cuda_postproc
    assert tilelang.dtypes.DataType is tilelang.DataType
    for sub in ("engine", "tools", "cuda"):
        assert getattr(tilelang, sub).__name__ == f"tilelang.{sub}"
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        tilelang.not_a_name


@cpu_target_only  # (TILELANG_TEST_CUDA sends "llvm" to CUDA too)
def test_determine_target():
    from tilelang.utils import determine_target

    assert determine_target("llvm") == "cpu" and determine_target("cuda") == "cuda"
    assert tilelang.testing.target_is_cuda("cuda -arch=sm_90a") and not tilelang.testing.target_is_cuda("cpu")


def test_scope_helpers():
    from tilelang.utils import is_fragment, is_global, is_local, is_shared

    seen = {}

    @T.prim_func
    def main(A: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((16,), "float32")
            f = T.alloc_fragment((16,), "float32")
            loc = T.alloc_local((4,), "float32")
            seen.update(shared=(is_shared(s), is_fragment(s)), fragment=(is_fragment(f), is_local(f)),
                        local=(is_local(loc), is_shared(loc)), glob=(is_global(A), is_shared(A[0:4])))
            T.copy(A, s)
            T.copy(s, A)

    assert seen == {"shared": (True, False), "fragment": (True, False), "local": (True, False),
                    "glob": (True, False)}
