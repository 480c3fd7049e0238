"""Upstream TileLang language names and fixes (project issue 10): one-row slices, element
copies, T.align_up / any_of / all_of / isfinite / isnan / isinf / assume, hints that become
remarks, `assert` in kernels, the name-only dtypes, upstream pass-config keys,
T.annotate_restrict_buffers, T.address_of, T.index_to_coordinates, T.loop_break, T.Persistent,
T.ldexp and T.isnullptr."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu
from tilelang.errors import TileLangCompileError


def test_one_row_slice_extent_is_one(rng):
    M, N = 8, 16

    @T.prim_func
    def rows(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(M, threads=32) as bx:
            S = T.alloc_shared((1, N), "float32")
            T.copy(A[bx * 1:(bx + 1) * 1, :], S)
            for i, j in T.Parallel(1, N):
                S[i, j] = S[i, j] * 2.0 + bx
            T.copy(S, B[bx * 1:(bx + 1) * 1, :])

    k = compile_cpu(rows)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = np.full_like(a, np.nan)
    k(a, b)
    ref = a.astype(np.float64) * 2 + np.arange(M)[:, None]
    np.testing.assert_allclose(b.astype(np.float64), ref, rtol=1e-6)


def test_copy_between_single_elements(rng):
    N = 16

    @T.prim_func
    def one(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=32) as bx:
            L = T.alloc_local((1,), "float32")
            v = T.alloc_var("float32")
            T.copy(A[bx], L[0])
            L[0] = L[0] + 1.0
            T.copy(L[0], v)
            T.copy(v, B[(bx + 1) % N])

    k = compile_cpu(one)
    a = rng.standard_normal(N).astype(np.float32)
    b = np.full_like(a, np.nan)
    k(a, b)
    np.testing.assert_allclose(b.astype(np.float64), np.roll(a.astype(np.float64) + 1, 1), rtol=1e-6)


def test_align_up_any_of_all_of(rng):
    N = 64

    @T.prim_func
    def f(A: T.Tensor((N,), "int32"), B: T.Tensor((N,), "int32")):
        with T.Kernel(N, threads=32) as bx:
            L = T.alloc_local((4,), "int32")
            for i in T.serial(4):
                L[i] = A[bx] - i
            B[bx] = T.align_up(A[bx], 8) + T.any_of(L[1:4]) * 100 + T.all_of(L) * 1000 + T.align_up(13, 4)

    k = compile_cpu(f)
    a = rng.integers(0, 40, size=N).astype(np.int32)
    a[:4] = [0, 1, 2, 3]
    b = np.zeros_like(a)
    k(a, b)
    a64 = a.astype(np.int64)
    L = a64[:, None] - np.arange(4)[None, :]
    ref = (-(-a64 // 8) * 8) + (L[:, 1:] != 0).any(1) * 100 + (L != 0).all(1) * 1000 + 16
    np.testing.assert_array_equal(b, ref)


def test_isfinite_isnan_isinf():
    N = 8

    @T.prim_func
    def f(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "int32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.serial(N):
                B[i] = T.isfinite(A[i]) * 1 + T.isnan(A[i]) * 2 + T.isinf(A[i]) * 4

    k = compile_cpu(f)
    a = np.array([0.0, -1.5, np.inf, -np.inf, np.nan, 3e38, -0.0, 1e-40], dtype=np.float32)
    b = np.zeros(N, dtype=np.int32)
    k(a, b)
    ref = np.isfinite(a) * 1 + np.isnan(a) * 2 + np.isinf(a) * 4
    np.testing.assert_array_equal(b, ref)


def test_assume_is_a_hint_and_false_constant_is_an_error():
    N = 16

    @T.prim_func
    def f(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=32) as bx:
            T.assume(bx < N)
            T.assume(0 <= bx and bx < N)
            B[bx] = A[bx] * 3.0

    k = compile_cpu(f)
    a = np.arange(N, dtype=np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_array_equal(b, a * 3)

    with pytest.raises(TileLangCompileError, match="T.assume"):
        @T.prim_func
        def g(A: T.Tensor((N,), "float32")):
            with T.Kernel(N, threads=32) as bx:
                T.assume(N < 4)
                A[bx] = 0.0


def test_accepted_hints_become_remarks_not_code():
    N = 8

    @T.prim_func
    def f(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(N, threads=32) as bx:
            T.annotate_safe_value({A: -1})
            T.disable_warp_group_reg_alloc()
            T.annotate_min_blocks_per_sm(2)
            T.pdl_sync()
            B[bx] = A[bx] + 1.0
            T.pdl_trigger()

    k = compile_cpu(f)
    a = np.arange(N, dtype=np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_array_equal(b, a + 1)
    text = "\n".join(k.get_remarks())
    for name in ("T.disable_warp_group_reg_alloc()", "T.pdl_sync()", "T.pdl_trigger()"):
        assert name in text, text
    assert "remark" not in k.get_kernel_source()
    # CUDA: compiled without a GPU; the hints leave nothing in the kernel, the PDL calls are
    # the CUDA runtime's (griddepcontrol), and after T.pdl_sync no pointer is __restrict__
    art = tilelang.lower(f, target="cuda -arch=sm_90a")
    assert "tl.remark" not in art.kernel_source
    code = art.kernel_source
    assert code.index("tl::cudaGridDependencySynchronize();") < code.index("tl::cudaTriggerProgrammaticLaunchCompletion();")
    assert "__restrict__" not in code, code
    assert any("T.pdl_sync()" in r for r in art.remarks)
    # T.annotate_min_blocks_per_sm is applied on CUDA: the second launch-bounds argument
    assert "__launch_bounds__(32, 2)" in art.kernel_source, art.kernel_source


def test_min_blocks_per_sm_must_be_a_positive_int():
    with pytest.raises(ValueError, match="annotate_min_blocks_per_sm takes a positive int, got 0"):

        @T.prim_func
        def f(A: T.Tensor((8,), "float32")):
            with T.Kernel(8, threads=32) as bx:
                T.annotate_min_blocks_per_sm(0)
                A[bx] = 1.0


def test_compile_time_assert():
    N = 8

    @T.prim_func
    def ok(A: T.Tensor((N,), "float32")):
        assert N % 4 == 0, "N must be a multiple of 4"
        with T.Kernel(1, threads=32) as bx:
            assert N >= 8
            A[0] = 1.0

    a = np.zeros(N, dtype=np.float32)
    compile_cpu(ok)(a)
    assert a[0] == 1.0

    with pytest.raises(TileLangCompileError, match="assertion failed at compile time: N must be odd") as e:
        @T.prim_func
        def bad(A: T.Tensor((N,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                assert N % 2 == 1, "N must be odd"
                A[0] = 1.0
    assert "assert N % 2 == 1" in str(e.value)


_RUNTIME_ASSERT = textwrap.dedent('''
    import sys
    import numpy as np
    import tilelang
    import tilelang.language as T

    @T.prim_func
    def f(A: T.Tensor((8,), "int32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(8, threads=32) as bx:
            assert A[bx] >= 0, "A must be non-negative"
            T.device_assert(A[bx] < 100, "A too large")
            B[bx] = A[bx] * 2

    k = tilelang.compile(f, target="cpu")
    a = np.arange(8, dtype=np.int32)
    b = np.zeros_like(a)
    k(a, b)
    print("first call", b.tolist(), flush=True)
    a[int(sys.argv[1])] = int(sys.argv[2])
    k(a, b)
    print("second call passed", flush=True)
''')


@pytest.mark.parametrize("value,message", [(-3, "A must be non-negative"), (500, "A too large")])
def test_runtime_assert_stops_the_kernel(tmp_path, value, message):
    script = tmp_path / "prog.py"
    script.write_text(_RUNTIME_ASSERT)
    env = dict(os.environ, TILELANG_PRINT_ON_COMPILATION="0")
    r = subprocess.run([sys.executable, str(script), "5", str(value)], capture_output=True, text=True, env=env,
                       timeout=300)
    assert "first call [0, 2, 4, 6, 8, 10, 12, 14]" in r.stdout, r.stdout + r.stderr
    assert "second call passed" not in r.stdout
    assert r.returncode != 0
    assert f"assertion failed (prog.py:10): {message}" in r.stdout + r.stderr or \
        f"assertion failed (prog.py:11): {message}" in r.stdout + r.stderr, r.stdout + r.stderr
    ok = subprocess.run([sys.executable, str(script), "5", "42"], capture_output=True, text=True, env=env,
                        timeout=300)
    assert ok.returncode == 0 and "second call passed" in ok.stdout, ok.stdout + ok.stderr


def test_runtime_assert_on_cuda_traps():
    @T.prim_func
    def f(A: T.Tensor((8,), "int32")):
        with T.Kernel(8, threads=32) as bx:
            assert A[bx] >= 0, "negative"
            A[bx] = A[bx] + 1

    src = tilelang.lower(f, target="cuda -arch=sm_80").kernel_source
    assert "__trap()" in src and "assertion failed" in src and "negative" in src


def test_name_only_dtypes_import_and_convert():
    import ml_dtypes

    for name in ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "int4", "uint4", "tfloat32"):
        t = getattr(T, name)
        assert t == name and isinstance(t, T.dtype)
    assert T.float8_e4m3fn.bits == 8 and T.float4_e2m1fn.bits == 4 and T.int4.bits == 4
    assert T.float8_e5m2.is_float8 and T.uint4.is_unsigned
    # upstream's fp4 predicates are methods, on the dtype and in tilelang.language.dtypes
    from tilelang.language.dtypes import is_float4, is_float4_e2m1_unpacked, is_float4_e2m1fn
    assert T.float4_e2m1fn.is_float4() and T.float4_e2m1fn.is_float4_e2m1fn()
    assert T.float4_e2m1_unpacked.is_float4() and not T.float4_e2m1_unpacked.is_float4_e2m1fn()
    assert T.float4_e2m1fnx2.is_float4() and not T.float16.is_float4() and not T.float8_e4m3fn.is_float4()
    assert T.float4_e2m1_unpacked.bits == 8 and T.float4_e2m1fn.bits == 4
    assert hasattr(T, "float4_e2m1fnx4") and not hasattr(T, "float4_e2m1_unpackedx2")
    assert is_float4("float4_e2m1fn") and is_float4("custom[float4_e2m1_unpacked]8") and not is_float4(T.float16)
    assert is_float4_e2m1fn(T.float4_e2m1fn) and is_float4_e2m1_unpacked("float4_e2m1_unpacked")
    assert T.float8_e4m3fn.as_numpy() == np.dtype(ml_dtypes.float8_e4m3fn)
    assert T.int4.as_numpy() == np.dtype(ml_dtypes.int4)
    assert T.float16.as_numpy() == np.float16 and T.bfloat16.as_numpy() == np.dtype(ml_dtypes.bfloat16)
    assert T.int is T.int32 and T.long == "int64" and T.short == "int16" and T.uint == "uint32"
    assert tilelang.DataType("float16") == T.float16 and T.dtype("e4m3_float8") == "float8_e4m3fn"
    # a torch dtype name canonicalises
    assert T.dtype("torch.float8_e4m3fn") == "float8_e4m3fn"


def test_tfloat32_tensors_and_tiles_are_float32(rng):
    """T.tfloat32 (upstream's TF32 GEMM operands, e.g. the DeepSeek mHC example): float32
    storage, so float32 tensors bind; a GEMM on tfloat32 tiles rounds A and B to TF32 and
    sums in float32 (said in the remarks; test_tf32_mma.py checks the rounding exactly)."""

    @T.prim_func
    def f(A: T.Tensor((32, 16), T.tfloat32), B: T.Tensor((16, 32), T.float32), C: T.Tensor((32, 32), T.float32)):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((32, 16), T.tfloat32)
            b_s = T.alloc_shared((16, 32), T.tfloat32)
            acc = T.alloc_fragment((32, 32), T.float32)
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.gemm(a_s, b_s, acc, clear_accum=True)
            T.copy(acc, C)

    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal((16, 32)).astype(np.float32)
    c = np.full((32, 32), np.nan, np.float32)
    k = compile_cpu(f)
    k(a, b, c)
    # TF32 operands (10-bit mantissas): relative errors of about 2^-11 per product
    np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=5e-3, atol=2e-2)
    assert any("tfloat32 is held as float32 here" in r for r in k.get_remarks()), k.get_remarks()


def test_fill_of_one_element():
    """T.fill(counter[0], 0) sets that one element (upstream's top-k selector)."""

    @T.prim_func
    def f(A: T.Tensor((4,), T.int32)):
        with T.Kernel(1, threads=32) as bx:
            c = T.alloc_shared((4,), T.int32)
            T.fill(c, 7)
            T.fill(c[2], -3)
            T.copy(c, A)

    a = np.zeros(4, np.int32)
    compile_cpu(f)(a)
    np.testing.assert_array_equal(a, [7, 7, -3, 7])


def test_tensor_over_another_buffers_data_is_a_view(rng):
    """T.Tensor((h * w, c), dtype, X.data) in a kernel: X's elements with another shape
    (upstream's convolution examples flatten the kernel and output this way)."""

    @T.prim_func
    def f(X: T.Tensor((2, 3, 8), T.float32), Y: T.Tensor((2, 3, 8), T.float32)):
        with T.Kernel(1, threads=32) as bx:
            x_flat = T.Tensor((6, 8), T.float32, X.data)
            y_flat = T.Tensor((6, 8), T.float32, Y.data)
            for r, c in T.Parallel(6, 8):
                y_flat[r, c] = x_flat[r, c] * (r + 1)

    x = rng.standard_normal((2, 3, 8)).astype(np.float32)
    y = np.full((2, 3, 8), np.nan, np.float32)
    compile_cpu(f)(x, y)
    np.testing.assert_allclose(y, (x.reshape(6, 8) * np.arange(1, 7)[:, None]).reshape(2, 3, 8), rtol=1e-6)


def test_thread_binding_value_is_the_thread_index():
    """`kr = T.thread_binding(0, 8, thread="threadIdx.x")`, `ni = ...("threadIdx.y")`: the
    thread's index along that block dimension (upstream's GEMV and top-k examples)."""

    @T.prim_func
    def f(A: T.Tensor((4, 8), T.int32)):
        with T.Kernel(1, threads=(8, 4)) as bx:
            kr = T.thread_binding(0, 8, thread="threadIdx.x")
            ni = T.thread_binding(0, 4, thread="threadIdx.y")
            A[ni, kr] = ni * 100 + kr

    a = np.zeros((4, 8), np.int32)
    compile_cpu(f)(a)
    np.testing.assert_array_equal(a, np.arange(4)[:, None] * 100 + np.arange(8)[None, :])
    with pytest.raises(TileLangCompileError, match="thread must be one of"):

        @T.prim_func
        def g(A: T.Tensor((4,), T.int32)):
            with T.Kernel(1, threads=4) as bx:
                t = T.thread_binding(0, 4, thread="blockIdx.x")
                A[t] = 1


def test_name_only_dtype_in_a_kernel_is_an_error_at_its_line():
    with pytest.raises(TileLangCompileError, match="float6_e2m3fn is known but not supported") as e:
        @T.prim_func
        def f(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                S = T.alloc_shared((8,), T.float6_e2m3fn)
                T.copy(A, S)
    assert "T.alloc_shared" in str(e.value)

    with pytest.raises(TileLangCompileError, match="int2 is known but not supported"):
        @T.prim_func
        def g(A: T.Tensor((8,), "int2")):
            with T.Kernel(1, threads=32) as bx:
                pass


def test_dtype_as_torch():
    torch = pytest.importorskip("torch")
    assert T.float16.as_torch() is torch.float16
    assert T.bfloat16.as_torch() is torch.bfloat16
    assert T.float8_e4m3fn.as_torch() is torch.float8_e4m3fn
    assert T.int32.as_torch() is torch.int32


# which keys are listed as having no effect depends on the target: these remarks are the CPU target's
@pytest.mark.cpu_target
def test_every_upstream_pass_config_key_is_accepted(rng):
    N = 16

    @T.prim_func
    def f(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            for i in T.Parallel(N):
                B[i] = A[i] * 2.0

    keys = list(tilelang.PassConfigKey)
    assert len(keys) >= 56
    for name in ("TL_ENABLE_AGGRESSIVE_SHARED_MEMORY_MERGE", "TL_REDUCER_FORCE_BASELINE", "TL_DISABLE_TMA_LOWER",
                 "TL_DISABLE_WARP_SPECIALIZED", "TL_ENABLE_FAST_MATH", "TL_CONFIG_INDEX_BITWIDTH",
                 "TIR_DISABLE_VECTORIZE", "TL_DISABLE_SAFE_MEMORY_ACCESS"):
        assert hasattr(tilelang.PassConfigKey, name)
    assert tilelang.PassConfigKey.TL_DISABLE_TMA_LOWER == "tl.disable_tma_lower"
    from tilelang.transform import ACTED_ON

    configs = {k: True for k in keys if k.value not in ACTED_ON}  # the acted-on ones take typed values
    configs[tilelang.PassConfigKey.TL_ENABLE_FAST_MATH] = True
    configs["tl.disable_warp_specialized"] = True  # also as a plain string
    configs["tl.some_key_nobody_defines"] = 1
    k = compile_cpu(f, pass_configs=configs)
    a = rng.standard_normal(N).astype(np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_allclose(b, a * 2)
    remarks = "\n".join(k.get_remarks())
    assert "pass config tl.disable_tma_lower=True: accepted, no effect" in remarks
    assert "pass config tl.enable_aggressive_shared_memory_merge=True" in remarks
    assert "tl.some_key_nobody_defines=1: accepted, no effect in this compiler (not a key upstream" in remarks
    assert "pass config tl.enable_fast_math" not in remarks  # acted on (CUDA fast math)


def test_prim_func_without_kernel_is_one_block(rng):
    N = 256

    @T.prim_func
    def vec(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), Add: T.Tensor((N,), "float32"),
            Div: T.Tensor((N,), "float32")):
        for i in T.Parallel(N):
            Add[i] = A[i] + B[i]
        for i in T.serial(N):
            Div[i] = A[i] / B[i]

    k = compile_cpu(vec)
    a = rng.uniform(1, 2, N).astype(np.float32)
    b = rng.uniform(1, 2, N).astype(np.float32)
    add, div = np.zeros_like(a), np.zeros_like(a)
    k(a, b, add, div)
    np.testing.assert_allclose(add.astype(np.float64), a.astype(np.float64) + b, rtol=1e-6)
    np.testing.assert_allclose(div.astype(np.float64), a.astype(np.float64) / b, rtol=1e-6)
    assert "__global__" in tilelang.lower(vec, target="cuda -arch=sm_80").kernel_source


def test_var_parallel_clamp_keywords(rng):
    N = 64
    n = T.Var("n", T.int32)
    assert isinstance(n, T.Var) and not isinstance(3, T.Var)

    @T.prim_func
    def f(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 32), threads=32) as bx:
            for i in T.parallel(32):
                if bx * 32 + i < n:
                    B[bx * 32 + i] = T.clamp(A[bx * 32 + i], min_val=-0.5, max_val=0.25)

    k = compile_cpu(f)
    a = rng.standard_normal(N).astype(np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_array_equal(b, np.clip(a, -0.5, 0.25))


def test_cumsum_accepts_annotations(rng):
    @T.prim_func
    def f(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            S = T.alloc_shared((16,), "float32")
            T.copy(A, S)
            T.cumsum(S, dim=0, annotations={"hint": 1})
            T.copy(S, B)

    k = compile_cpu(f)
    a = rng.standard_normal(16).astype(np.float32)
    b = np.zeros_like(a)
    k(a, b)
    np.testing.assert_allclose(b.astype(np.float64), np.cumsum(a.astype(np.float64)), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("width", [2, 4])
def test_atomic_addx2_x4(rng, width):
    M, N, bM, bN = 8, 16, 4, 8

    @T.prim_func
    def f(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bM), T.ceildiv(N, bN), threads=32) as (bx, by):
            for i, j in T.Parallel(bM, bN // width):
                if width == 2:
                    T.atomic_addx2(B[bx * bM + i, by * bN + j * 2], A[bx * bM + i, by * bN + j * 2])
                else:
                    T.atomic_addx4(B[bx * bM + i, by * bN + j * 4], A[bx * bM + i, by * bN + j * 4])

    k = compile_cpu(f)
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    ref = a.astype(np.float64) + b
    k(a, b)
    np.testing.assert_allclose(b.astype(np.float64), ref, rtol=1e-6)


def test_with_T_While():
    @T.prim_func
    def f(A: T.Tensor((1,), "int32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            state = T.alloc_var("int32")
            n = T.alloc_var("int32")
            state = A[0]
            n = 0
            with T.While(state > 1):
                state = T.if_then_else(state % 2 == 0, state // 2, 3 * state + 1)
                n = n + 1
            B[0] = state
            B[1] = n

    k = compile_cpu(f)
    b = np.zeros(2, np.int32)
    k(np.array([27], np.int32), b)
    assert b.tolist() == [1, 111]  # the Collatz sequence of 27 takes 111 steps


def test_lane_and_warp_indices():
    @T.prim_func
    def f(L: T.Tensor((256,), "int32"), W: T.Tensor((256,), "int32"), G: T.Tensor((256,), "int32"),
          W16: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=256) as bx:
            tx = T.get_thread_binding()
            L[tx] = T.get_lane_idx()
            W[tx] = T.get_warp_idx_sync()
            G[tx] = T.get_warp_group_idx()
            W16[tx] = T.get_warp_idx(16)

    outs = [np.full(256, -1, np.int32) for _ in range(4)]
    compile_cpu(f)(*outs)
    t = np.arange(256)
    for got, ref in zip(outs, (t % 32, t // 32, t // 128, t // 16)):
        np.testing.assert_array_equal(got, ref)


def test_region_alias_as_tile_operand(rng):
    M, N = 16, 32

    @T.prim_func
    def f(A: T.Tensor((M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=64) as bx:
            S = T.alloc_shared((2 * M, N), "float32")
            top = S[:M, :]
            bottom = S[M:2 * M, 0:N]
            T.copy(A, top)
            T.fill(bottom, 1.0)
            for i, j in T.Parallel(M, N):
                S[M + i, j] = S[i, j] * 2.0 + S[M + i, j]
            T.copy(bottom, B)

    a = rng.standard_normal((M, N)).astype(np.float32)
    b = np.zeros_like(a)
    compile_cpu(f)(a, b)
    np.testing.assert_allclose(b.astype(np.float64), a.astype(np.float64) * 2 + 1, rtol=1e-6)


def test_dtype_call_without_value_and_let(rng):
    M, N = 8, 32

    @T.prim_func
    def f(A: T.Tensor((M, 4 * N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(4, threads=32) as bx:
            off = T.int32()
            T.let(off, bx * N)
            S = T.alloc_shared((M, N), "float32")
            T.copy(A[0, off], S)
            for i, j in T.Parallel(M, N):
                if bx == 2:
                    B[i, j] = S[i, j] + off

    a = rng.standard_normal((M, 4 * N)).astype(np.float32)
    b = np.zeros((M, N), np.float32)
    compile_cpu(f)(a, b)
    np.testing.assert_allclose(b.astype(np.float64), a[:, 2 * N:3 * N].astype(np.float64) + 2 * N, rtol=1e-6)


def test_func_attr_is_accepted_and_noted():
    import tilelang

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        T.func_attr({"tir.noalias": True})
        with T.Kernel(1, threads=4):
            for i in T.Parallel(4):
                B[i] = A[i] + 1

    k = tilelang.compile(main, target="cpu")
    assert any("T.func_attr(tir.noalias)" in r for r in k.get_remarks())
    b = np.zeros(4, np.float32)
    k(np.arange(4, dtype=np.float32), b)
    np.testing.assert_array_equal(b, np.arange(4) + 1)


@T.macro
def _copy_out(A):
    M, N = A.shape
    B = T.empty(M, N, dtype=A.dtype)
    with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, 32), threads=64) as (bx, by):
        T.copy(A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32], B[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32])
    return B


def test_strided_tensor_subscript_annotation(rng):
    """`A: T.StridedTensor[[N, M], [sN, sM], dtype]`, the eager style's subscripted form, binds
    the shape and the strides like the call form."""

    @tilelang.jit(target="cpu")
    def copy(A):
        N, M, sN, sM = T.const("N, M, sN, sM")
        A: T.StridedTensor[[N, M], [sN, sM], T.float32]
        return _copy_out(A)

    a = rng.standard_normal((64, 96)).astype(np.float32)
    assert np.array_equal(copy(a), a)
    with pytest.raises(TileLangCompileError, match=r"T.StridedTensor\[shape, strides, dtype\]"):

        @tilelang.jit(target="cpu")
        def bad(A):
            A: T.StridedTensor[[64, 96]]
            return _copy_out(A)

        bad(a)


def test_annotate_safe_value_is_what_out_of_range_reads_give(rng):
    """T.annotate_safe_value({A: v}): the user's element reads of A outside the tensor give v
    (0 without it), on both targets."""
    M = N = 64

    @T.prim_func
    def shifted(A: T.Tensor((M, N), "float16"), B: T.Tensor((M, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(1, 1, threads=128) as (bx, by):
            for i, j in T.Parallel(M, N):
                C[i, j] = A[i - 5, j]  # before the annotation: 0
            T.annotate_safe_value({A: -3.5})
            for i, j in T.Parallel(M, N):
                B[i, j] = A[i - 5, j]

    a = rng.standard_normal((M, N)).astype(np.float16)
    b, c = np.zeros((M, N), np.float16), np.ones((M, N), np.float16)
    compile_cpu(shifted)(a, b, c)
    want = np.full_like(a, -3.5)
    want[5:] = a[:-5]
    assert np.array_equal(b, want)
    want[:5] = 0
    assert np.array_equal(c, want)


def test_const_used_before_the_annotation_that_binds_it(rng):
    """`splitK = K // split_k` before `A: T.Tensor((M, K), ...)`: the annotation's names bind
    from the arguments' shapes before the body runs (upstream's gemm_splitk example)."""

    @tilelang.jit(target="cpu")
    def row_chunks(A, B, chunks):
        M, K = T.const("M, K")
        chunk = K // chunks
        A: T.Tensor((M, K), T.float32)
        B: T.Tensor((M, chunks), T.float32)
        with T.Kernel(M, threads=32) as m:
            for c in T.serial(chunks):
                acc = T.alloc_var(T.float32, 0.0)
                for k in T.serial(chunk):
                    acc += A[m, c * chunk + k]
                B[m, c] = acc

    a = rng.standard_normal((5, 12)).astype(np.float32)
    b = np.zeros((5, 3), np.float32)
    row_chunks(a, b, 3)
    np.testing.assert_allclose(b, a.reshape(5, 3, 4).sum(axis=2), rtol=1e-5)
    with pytest.raises(Exception, match="shape"):
        row_chunks(a, np.zeros((4, 3), np.float32), 3)  # B disagrees with A's M: still checked


def test_const_bound_through_a_named_shape(rng):
    """`s_shape = (M, T.ceildiv(K, 4))` and then `S: T.Tensor(s_shape, ...)`, with the
    dimensions bound by an annotation that names its shape through a variable as well
    (upstream's deepgemm and NSA examples)."""

    @tilelang.jit(target="cpu")
    def group_sums(A, S):
        M, K = T.const("M, K")
        a_shape = (M, K)
        s_shape = (M, T.ceildiv(K, 4))
        A: T.Tensor(a_shape, T.float32)
        S: T.Tensor(s_shape, T.float32)
        with T.Kernel(M, threads=32) as m:
            for g in T.serial(T.ceildiv(K, 4)):
                acc = T.alloc_var(T.float32, 0.0)
                for k in T.serial(4):
                    if g * 4 + k < K:
                        acc += A[m, g * 4 + k]
                S[m, g] = acc

    a = rng.standard_normal((3, 10)).astype(np.float32)
    s = np.full((3, 3), np.nan, np.float32)
    group_sums(a, s)
    padded = np.concatenate([a, np.zeros((3, 2), np.float32)], axis=1)
    np.testing.assert_allclose(s, padded.reshape(3, 3, 4).sum(axis=2), rtol=1e-5)
    with pytest.raises(Exception, match="shape"):
        group_sums(a, np.zeros((3, 2), np.float32))  # S disagrees with ceildiv(K, 4): still checked


def test_const_bound_through_an_alias(rng):
    """`KH, KW = K, K` and then `W: T.Tensor((KH, KW, C), ...)`: the annotation binds KH, and
    so K (upstream's convolution example computes OH from K before the annotation)."""

    @tilelang.jit(target="cpu")
    def taps(W, O):
        C, K = T.const("C, K")
        KH, KW = K, K
        n = K * K
        W: T.Tensor((KH, KW, C), T.float32)
        O: T.Tensor((n,), T.float32)
        with T.Kernel(1, threads=32) as bx:
            for t in T.serial(n):
                acc = T.alloc_var(T.float32, 0.0)
                for c in T.serial(C):
                    acc += W[t // KW, t % KW, c]
                O[t] = acc

    w = rng.standard_normal((3, 3, 5)).astype(np.float32)
    o = np.full(9, np.nan, np.float32)
    taps(w, o)
    np.testing.assert_allclose(o, w.reshape(9, 5).sum(axis=1), rtol=1e-5)


def test_slice_between_two_bound_names_has_their_constant_difference(rng):
    """`kv_start = base + k * 16; kv_end = base + (k + 1) * 16; T.copy(KV[kv_start:kv_end], s)`:
    both names are bound in the kernel body, and the slice is 16 long (upstream's MLA decode)."""

    @T.prim_func
    def f(A: T.Tensor((128,), T.float32), B: T.Tensor((128,), T.float32)):
        with T.Kernel(2, threads=16) as bx:
            s = T.alloc_shared((16,), T.float32)
            for k in T.serial(4):
                kv_start = bx * 64 + k * 16
                kv_end = bx * 64 + (k + 1) * 16
                T.copy(A[kv_start:kv_end], s)
                for i in T.Parallel(16):
                    B[kv_start + i] = s[i] * 2.0

    a = rng.standard_normal(128).astype(np.float32)
    b = np.full(128, np.nan, np.float32)
    compile_cpu(f)(a, b)
    np.testing.assert_allclose(b, a * 2.0, rtol=1e-6)


# --------------------------------------------------------------------------- negative indices,
# and stores at the top of a kernel-less @T.prim_func (upstream's negative_index tests)

def test_negative_indices_count_from_the_end():
    @T.prim_func
    def f(A: T.Buffer((16,), T.float32), B: T.Buffer((16,), T.float32)):
        T.func_attr({"tir.noalias": True})
        B[0] = A[T.int32(-1)]
        B[1] = A[-2]
        B[-1] += A[3]
        for i in T.serial(4):
            B[2 + i] = A[-i - 1]       # negative for every i: 15 - i
        for i in T.serial(2, 4):
            B[6 + i] = A[2 * i - 9]    # -5, -3 -> 11, 13

    a = np.arange(16, dtype=np.float32)
    b = np.ones(16, dtype=np.float32)
    compile_cpu(f)(a, b)
    want = np.ones(16, dtype=np.float32)
    want[0], want[1], want[15] = 15, 14, 1 + 3
    want[2:6] = [15, 14, 13, 12]
    want[8:10] = [11, 13]
    np.testing.assert_array_equal(b, want)


def test_possibly_non_negative_indices_are_left_alone():
    @T.prim_func
    def f(shift: T.int32, A: T.Buffer((16,), T.float32), B: T.Buffer((8,), T.float32)):
        for i in T.serial(8):
            B[i] = A[shift + i]        # symbolic: as written
        for i in T.serial(1, 8):
            B[i] += A[i - 1]           # i - 1 >= 0 for every i here

    a = np.arange(16, dtype=np.float32)
    b = np.zeros(8, dtype=np.float32)
    compile_cpu(f)(3, a, b)
    np.testing.assert_array_equal(b, a[3:11] + np.concatenate([[0], a[:7]]))


def test_a_variable_named_i_with_an_initial_value():
    # The initialising loop of T.alloc_var(..., init) once used the C name `i` itself; a
    # variable is now a scalar initialised where it is declared (`int32_t i = 0;`).
    @T.prim_func
    def f(A: T.Tensor((1,), "int32")):
        with T.Kernel(1) as _:
            i = T.alloc_var(T.int32, 0)
            s = T.alloc_var(T.int32, 0)
            while i < 10:
                s += i
                i += 1
            A[0] = s

    a = np.zeros(1, dtype=np.int32)
    compile_cpu(f)(a)
    assert a[0] == 45
    assert "int32_t i = 0;" in tilelang.lower(f, target="cuda -arch=sm_90a").kernel_source


def test_alloc_var_starts_at_zero_and_takes_upstreams_forms(rng):
    """Upstream: T.alloc_var(dtype) starts at zero; a lone string is the scope; (init, scope)."""
    @T.prim_func
    def f(A: T.Tensor((4,), "float32"), B: T.Tensor((2,), "int32")):
        with T.Kernel(1) as _:
            s = T.alloc_var(T.float32)
            h = T.alloc_var(T.float32, "local.var")
            g = T.alloc_var(T.float32, 1.5, "local.var")
            n = T.alloc_var(T.int32, init=3)
            for k in T.serial(4):
                s += A[k]
            B[0] = T.cast(s * 0 + h, "int32") + n  # h is zero
            B[1] = T.cast(s + g, "int32")

    a = (rng.standard_normal(4) * 4).round().astype(np.float32)
    b = np.full(2, -7, np.int32)
    compile_cpu(f)(a, b)
    assert b[0] == 3 and b[1] == int(np.float32(a.sum()) + np.float32(1.5))
    with pytest.raises(ValueError, match="initial value is given twice"):

        @T.prim_func
        def twice(A: T.Tensor((1,), "int32")):
            with T.Kernel(1) as _:
                v = T.alloc_var(T.int32, 1, init=2)
                A[0] = v


def test_cast_of_a_variable_reads_its_value(rng):
    """T.cast(v, dtype) of a T.alloc_var is a cast of its value (upstream's select tests)."""
    @T.prim_func
    def f(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding(0)
            v = T.alloc_var(T.bfloat16)
            v = A[tx]
            B[tx] = T.Select(T.cast(A[tx], T.bfloat16) == v, T.cast(v, T.float32), -1.0)

    a = rng.standard_normal(128).astype(np.float32)
    b = np.zeros(128, np.float32)
    compile_cpu(f)(a, b)
    np.testing.assert_array_equal(b, a.astype(ml_dtypes.bfloat16).astype(np.float32))


def test_calling_a_name_only_dtype_is_a_type_error():
    for t in (T.float6_e3m2fn, T.float32x2, T.int2):
        with pytest.raises(TypeError, match="not supported inside kernels"):
            t(1.0)
        with pytest.raises(ValueError):  # and a ValueError, for callers that catch that
            t()


def test_alloc_buffer_by_scope():
    @T.prim_func
    def f(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            S = T.alloc_buffer((8,), "float32", scope="shared")
            F = T.alloc_buffer((8,), "float32", scope="local.fragment")
            T.copy(A, S)
            for i in T.Parallel(8):
                F[i] = S[i] + 1.0
            T.copy(F, B)

    b = np.zeros(8, dtype=np.float32)
    compile_cpu(f)(np.arange(8, dtype=np.float32), b)
    np.testing.assert_array_equal(b, np.arange(8) + 1)
    # scope "global" is T.alloc_global: outside the kernels only
    with pytest.raises(tilelang.TileLangCompileError, match="outside `with T.Kernel"):
        @T.prim_func
        def g(A: T.Tensor((8,), "float32")):
            with T.Kernel(1):
                G = T.alloc_buffer((8,), "float32")  # noqa: F841


def test_strided_tensor_subscript_and_evaluate():
    @T.prim_func
    def f(A: T.StridedTensor[(4, 4), (4, 1), T.float32], B: T.Tensor((4, 4), "float32")):
        with T.Kernel(1, threads=4):
            T.evaluate(0)  # a no-op statement
            for i, j in T.Parallel(4, 4):
                B[i, j] = A[i, j] + 1.0

    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    b = np.zeros((4, 4), dtype=np.float32)
    compile_cpu(f)(a, b)
    np.testing.assert_array_equal(b, a + 1)
    assert T.StridedTensor((4, 4), (4, 1), "float16").strides == (4, 1)
    with pytest.raises(Exception, match="T.evaluate must be used inside"):
        @T.prim_func
        def g(A: T.Tensor((4,), "float32")):
            T.evaluate(0)


def test_tuple_assignment_reads_every_value_first():
    """`a, b = b, a` and `A[0], A[1] = A[1], A[0]` swap, as in Python (upstream's
    frontend_v2 test_swap_logic): every right-hand value is read before the first store."""

    @tilelang.jit(target="cpu")
    def swap_vars(A):
        A: T.Tensor[(2,), T.float32]
        with T.Kernel(1, threads=1) as _:
            a = T.alloc_var(T.float32, A[0])
            b = T.alloc_var(T.float32, A[1])
            a, b = b, a
            A[0], A[1] = a, b

    @tilelang.jit(target="cpu")
    def swap_elements(A):
        A: T.Tensor[(3,), T.float32]
        with T.Kernel(1, threads=1) as _:
            A[0], A[1], A[2] = A[2], A[0], A[1]

    d = np.array([1.0, 2.0], np.float32)
    swap_vars(d)
    assert list(d) == [2.0, 1.0]
    d = np.array([1.0, 2.0, 3.0], np.float32)
    swap_elements(d)
    assert list(d) == [3.0, 1.0, 2.0]


def test_kernel_without_a_grid_is_one_block(rng):
    @T.prim_func
    def one_block(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(threads=64):
            for i in T.Parallel(64):
                B[i] = A[i] * 3.0

    a = rng.standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    compile_cpu(one_block)(a, b)
    np.testing.assert_allclose(b, a * 3, rtol=1e-6)


def test_annotate_safe_value_pads_tile_copies(rng):
    """A T.copy whose source window leaves the tensor pads with the annotated safe value
    (upstream's copy tests), on both targets; without the annotation, with 0."""
    M, N, BM = 40, 16, 32

    @T.prim_func
    def padded(A: T.Tensor((M, N), "float32"), B: T.Tensor((2 * BM, N), "float32"),
               C: T.Tensor((2 * BM, N), "float32")):
        with T.Kernel(2, threads=64) as bx:
            S = T.alloc_shared((BM, N), "float32")
            S2 = T.alloc_shared((BM, N), "float32")
            T.copy(A[bx * BM, 0], S2)  # rows 40.. of block 1: zeros
            T.annotate_safe_value({A: 7.5})
            T.copy(A[bx * BM, 0], S)  # rows 40.. of block 1: 7.5
            T.copy(S, B[bx * BM, 0])
            T.copy(S2, C[bx * BM, 0])

    a = rng.standard_normal((M, N)).astype(np.float32)
    b, c = np.zeros((2 * BM, N), np.float32), np.ones((2 * BM, N), np.float32)
    compile_cpu(padded)(a, b, c)
    want = np.full((2 * BM, N), 7.5, np.float32)
    want[:M] = a
    assert np.array_equal(b, want)
    want[M:] = 0
    assert np.array_equal(c, want)


@pytest.mark.parametrize("kind", ["max", "min", "absmax"])
def test_reduce_nan_propagate(kind):
    """nan_propagate=True: a row with a NaN reduces to NaN; without it NaN is skipped (fmax's
    rule). Rows of a 2-D tile (warp shuffles and a cross-warp workspace on CUDA) and the 1-D
    case of upstream's test, float32 and float16."""
    reducer = {"max": T.reduce_max, "min": T.reduce_min, "absmax": T.reduce_absmax}[kind]

    def rows_kernel(nan, dtype):
        @T.prim_func
        def f(A: T.Tensor((16, 64), dtype), B: T.Tensor((16,), dtype)):
            with T.Kernel(1, threads=128):
                frag = T.alloc_fragment((16, 64), dtype)
                out = T.alloc_fragment((16,), dtype)
                T.copy(A, frag)
                reducer(frag, out, dim=1, nan_propagate=nan)
                T.copy(out, B)

        return f

    rng = np.random.default_rng(4)
    for dtype in ("float32", "float16"):
        a = rng.standard_normal((16, 64)).astype(dtype)
        a[3, 17] = a[9, 63] = a[9, 0] = np.nan
        ref = {"max": np.nanmax(a, axis=1), "min": np.nanmin(a, axis=1), "absmax": np.nanmax(np.abs(a), axis=1)}[kind]
        for nan in (True, False):
            b = np.full(16, 7.0, dtype)
            compile_cpu(rows_kernel(nan, dtype))(a, b)
            want = ref.copy()
            if nan:
                want[[3, 9]] = np.nan
            np.testing.assert_array_equal(b, want)


def test_reduce_nan_propagate_folds_an_old_nan_and_one_dimension():
    @T.prim_func
    def f(A: T.Tensor((64,), "float32"), B: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=32):
            frag = T.alloc_fragment((64,), "float32")
            out = T.alloc_fragment((1,), "float32")
            T.copy(A, frag)
            T.copy(B, out)
            T.reduce_max(frag, out, clear=False, nan_propagate=True)
            T.copy(out, B)

    a = np.arange(64, dtype=np.float32)
    b = np.array([np.nan], np.float32)  # the old value is NaN: it stays
    compile_cpu(f)(a, b)
    assert np.isnan(b[0])
    b = np.array([100.0], np.float32)
    compile_cpu(f)(a, b)
    assert b[0] == 100.0
    a[5] = np.nan
    compile_cpu(f)(a, b)
    assert np.isnan(b[0])


def test_reduce_nan_propagate_is_for_max_and_min_only():
    with pytest.raises(TileLangCompileError, match="nan_propagate applies to max, min and absmax only"):

        @T.prim_func
        def f(A: T.Tensor((64,), "float32"), B: T.Tensor((1,), "float32")):
            with T.Kernel(1, threads=32):
                frag = T.alloc_fragment((64,), "float32")
                out = T.alloc_fragment((1,), "float32")
                T.copy(A, frag)
                T.reduce(frag, out, "sum", nan_propagate=True)
                T.copy(out, B)


def test_block_and_thread_bindings_and_extents():
    # upstream's T.get_block_binding / _bindings / _extent(s), T.get_thread_extent(s),
    # T.get_num_threads: block (bx, by) of a 3 x 2 grid of 64 threads writes its own cell
    @T.prim_func
    def main(Out: T.Tensor((2, 3, 4), "int32")):
        with T.Kernel(3, 2, threads=64) as (bx, by):
            bz = T.get_block_binding(2)  # not launched: 0
            x, y, _ = T.get_block_bindings()
            Out[y, x, 0] = T.get_block_binding(0) * 10 + T.get_block_binding(1) + bz
            Out[y, x, 1] = T.get_block_extent(0) * 10 + T.get_block_extents()[1]
            Out[y, x, 2] = T.get_thread_extent(0) + T.get_thread_extents()[2]
            Out[y, x, 3] = T.get_num_threads() + x * 0

    out = np.full((2, 3, 4), -1, np.int32)
    tilelang.compile(main)(out)
    want = np.zeros((2, 3, 4), np.int32)
    for y in range(2):
        for x in range(3):
            want[y, x] = [x * 10 + y, 32, 65, 64]
    np.testing.assert_array_equal(out, want)


def test_block_binding_outside_a_kernel_is_a_clear_error():
    with pytest.raises(Exception, match="T.get_block_binding"):
        @T.prim_func
        def main(Out: T.Tensor((4,), "int32")):
            Out[0] = T.get_block_binding(0)


def test_compile_errors_are_also_the_kind_the_kernel_code_raised():
    # upstream's tests catch ValueError / TypeError around kernel definitions; ours catch
    # TileLangCompileError: the error is both, and still points at the line
    def bad_threads():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=0):
                A[0] = 1.0

    with pytest.raises(ValueError, match="threads") as e:
        bad_threads()
    assert isinstance(e.value, TileLangCompileError) and e.value.line > 0

    def bad_type():
        @T.prim_func
        def main(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=32):
                A[0] = len(3)

    with pytest.raises(TypeError) as e:
        bad_type()
    assert isinstance(e.value, TileLangCompileError) and "len" in str(e.value)


def test_full_range_integer_constants():
    # T.uint64(0xFFFF...F0): a constant above 2**63 keeps its bits; T.uint32 / int64 limits too
    @T.prim_func
    def main(A: T.Tensor((3,), "uint64"), B: T.Tensor((2,), "uint32"), C: T.Tensor((2,), "int64")):
        with T.Kernel(1, threads=1):
            for i in T.serial(3):
                A[i] = A[i] & T.uint64(0xFFFFFFFFFFFFFFF0)
            B[0] = B[0] & T.uint32(0xFFFFFFFF)
            B[1] = T.uint32(0xFFFFFFFF)
            C[0] = T.int64(-0x7FFFFFFFFFFFFFFF - 1)
            C[1] = T.int64(0x7FFFFFFFFFFFFFFF)

    a = np.array([0xFFFFFFFFFFFFFFFF, 17, 2 ** 63 + 5], np.uint64)
    b = np.array([12345, 0], np.uint32)
    c = np.zeros(2, np.int64)
    tilelang.compile(main)(a, b, c)
    assert a.tolist() == [0xFFFFFFFFFFFFFFF0, 16, 2 ** 63]
    assert b.tolist() == [12345, 0xFFFFFFFF]
    assert c.tolist() == [-2 ** 63, 2 ** 63 - 1]


def test_a_float_initial_value_must_fit_its_type():
    with pytest.raises(ValueError, match="exceeds maximum of float32"):
        @T.prim_func
        def main(A: T.Tensor((1,), "float32")):
            with T.Kernel(1):
                v = T.alloc_var("float32", init=1e300)
                A[0] = v


def test_reshape_of_another_size_is_an_assertion_error_as_upstream():
    with pytest.raises(AssertionError, match="has 1056 elements"):
        @T.prim_func
        def main(A: T.Tensor((1024,), "float32")):
            with T.Kernel(1):
                v = T.reshape(A, [32, 33])
                v[0, 0] = 1.0


def test_eager_kernel_with_tensors_annotated_in_the_signature(rng):
    """@tilelang.jit on `def k(A: T.Tensor((64,), T.float16), ...)` (upstream's let tests):
    the signature declares the tensors; with static shapes the kernel also compiles without
    them (get_kernel_source())."""

    @tilelang.jit(target="cpu")
    def add_one(A: T.Tensor((64,), T.float16), B: T.Tensor((64,), T.float16)):
        with T.Kernel(1, threads=32):
            A_s = T.alloc_shared((32,), T.float16)
            for k in T.Pipelined(2, num_stages=2):
                T.copy(A[k * 32], A_s)
                for i in T.Parallel(32):
                    B[k * 32 + i] = A_s[i] + 1.0

    a = rng.standard_normal(64).astype(np.float16)
    b = np.zeros(64, np.float16)
    add_one(a, b)
    np.testing.assert_array_equal(b, a + np.float16(1))
    assert "add_one" in add_one.get_kernel_source()

    @tilelang.jit(target="cpu")
    def twice(A: T.Tensor((8,), T.float32)):
        A: T.Tensor((8,), T.float32)
        with T.Kernel(1):
            A[0] = 1.0

    with pytest.raises(ValueError, match="annotated twice"):
        twice(np.zeros(8, np.float32))


def test_dp4a_accumulates_four_int8_products(rng):
    @T.prim_func
    def f(A: T.Tensor((4, 8), "int8"), B: T.Tensor((4, 8), "int8"), C: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=4):
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "int32")
            acc[0] = 7
            for k in T.serial(2):
                T.dp4a(A[tx, k * 4], B[tx, k * 4], acc[0])
            C[tx] = acc[0]

    a = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    b = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    c = np.zeros(4, np.int32)
    compile_cpu(f)(a, b, c)
    np.testing.assert_array_equal(c, (a.astype(np.int64) * b).sum(1) + 7)
    with pytest.raises(ValueError, match="T.dp4a requires int32 C, got float32"):

        @T.prim_func
        def bad(A: T.Tensor((4,), "int8"), C: T.Tensor((1,), "float32")):
            with T.Kernel(1):
                T.dp4a(A[0], A[0], C[0])


def test_restrict_buffers_annotation_drops_restrict_for_aliasing_parameters():
    """T.annotate_restrict_buffers(x, y): x and y may overlap (two views of one array), so
    their pointers lose __restrict__ on both targets; the shift below reads what it writes."""

    @T.prim_func
    def shift(x: T.Tensor((64,), "float32"), y: T.Tensor((64,), "float32"), z: T.Tensor((64,), "float32")):
        T.annotate_restrict_buffers(x, y)
        with T.Kernel(1, threads=1):
            for i in T.serial(63):
                y[i] = x[i] + 1.0
            z[0] = 0.0

    for target in ("cpu", "cuda -arch=sm_90a"):
        src = tilelang.lower(shift, target=target).kernel_source
        assert "__restrict__ x" not in src and "__restrict__ y" not in src, src
        assert "__restrict__ z" in src, src
    base = np.arange(65, dtype=np.float32)
    kernel = tilelang.compile(shift, target="cpu")
    kernel(base[1:], base[:64], np.zeros(64, np.float32))  # y[i] = x[i] + 1 with x = y shifted by one
    np.testing.assert_array_equal(base[:63], np.arange(1, 64, dtype=np.float32) + 1)
    with pytest.raises(TileLangCompileError, match="takes the kernel's tensor parameters"):
        @T.prim_func
        def bad(x: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=32):
                s = T.alloc_shared((64,), "float32")
                T.annotate_restrict_buffers(s)
                T.copy(x, s)


def test_address_of_index_to_coordinates_and_loop_break():
    @T.prim_func
    def addresses(A: T.Tensor((4, 8), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=1):
            T.call_extern("tl_test_copy4", T.address_of(A[1, 0]), T.address_of(B), dtype="handle")

    src = tilelang.lower(addresses, target="cpu").kernel_source
    assert "tl_test_copy4((&A[8]), (&B[0]))" in src, src

    @T.prim_func
    def flatten(A: T.Tensor((4, 8), "float32"), B: T.Tensor((32,), "float32"), Lim: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1):
            for f in T.serial(32):
                if f >= Lim[0]:
                    T.loop_break()
                i, j = T.index_to_coordinates(f, (4, 8))
                B[f] = A[i, j] * 2.0

    a = np.random.default_rng(2).standard_normal((4, 8)).astype(np.float32)
    b = np.full(32, -1.0, np.float32)
    tilelang.compile(flatten, target="cpu")(a, b, np.array([13], np.int32))
    np.testing.assert_array_equal(b[:13], a.reshape(-1)[:13] * 2)
    assert (b[13:] == -1).all()
    assert [int(c) for c in T.index_to_coordinates(13, (4, 8))] == [1, 5]


def persistent_2d(mb, nb, workers):
    @T.prim_func
    def visit(Visited: T.Tensor((mb, nb), "int32"), First: T.Tensor((workers,), "int32")):
        with T.Kernel(workers, threads=1) as block_id:
            First[block_id] = -1
            for bx, by in T.Persistent([mb, nb], workers, block_id):
                Visited[bx, by] += 1
                if First[block_id] < 0:
                    First[block_id] = bx

    return visit


def persistent_3d(d0, d1, d2, workers):
    @T.prim_func
    def visit(Visited: T.Tensor((d0, d1, d2), "int32")):
        with T.Kernel(workers, threads=1) as block_id:
            for i, j, k in T.Persistent([d0, d1, d2], workers, block_id):
                Visited[i, j, k] += 1

    return visit


@pytest.mark.parametrize("mb, nb, workers", [(7, 5, 4), (16, 16, 132), (1, 9, 2), (20, 3, 6)])
def test_persistent_blocks_visit_every_tile_once(mb, nb, workers):
    """T.Persistent (upstream issue 2433): `workers` blocks walk the tiles in waves; each
    tile is visited exactly once, a 2-D domain in panels of 8 rows."""
    visited, first = np.zeros((mb, nb), np.int32), np.zeros(workers, np.int32)
    tilelang.compile(persistent_2d(mb, nb, workers), target="cpu")(visited, first)
    np.testing.assert_array_equal(visited, 1)
    if workers <= 8 * nb:  # the first wave stays in the first panel of 8 rows
        assert first[first >= 0].max() < 8


def test_persistent_blocks_visit_a_3d_domain_once():
    visited = np.zeros((3, 4, 5), np.int32)
    tilelang.compile(persistent_3d(3, 4, 5, 7), target="cpu")(visited)
    np.testing.assert_array_equal(visited, 1)


def test_ldexp_and_isnullptr():
    @T.prim_func
    def main(A: T.Tensor((16,), "float32"), E: T.Tensor((16,), "int32"), B: T.Tensor((16,), "float32"),
             H: T.Tensor((16,), "float16"), P: T.ptr, Z: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=16):
            tx = T.get_thread_binding()
            B[tx] = T.ldexp(A[tx], E[tx])
            H[tx] = T.ldexp(T.cast(A[tx], "float16"), 2)
            if tx == 0:
                Z[0] = T.if_then_else(T.isnullptr(P), 1, 0)

    kernel = tilelang.compile(main, target="cpu")
    a = np.random.default_rng(0).standard_normal(16).astype(np.float32)
    e = np.arange(-8, 8, dtype=np.int32)
    b, h, z = np.zeros(16, np.float32), np.zeros(16, np.float16), np.full(1, -1, np.int32)
    kernel(a, e, b, h, 0, z)
    np.testing.assert_array_equal(b, np.ldexp(a, e))
    np.testing.assert_array_equal(h, np.ldexp(a.astype(np.float16), 2))
    assert z[0] == 1
    kernel(a, e, b, h, b.__array_interface__["data"][0], z)
    assert z[0] == 0
    src = tilelang.lower(main, target="cuda -arch=sm_90a").kernel_source
    assert "tl::ldexp(A[tx], E[tx])" in src and "tl::isnullptr(P)" in src, src
    with pytest.raises(TileLangCompileError, match="T.ldexp: x1 must be a floating-point value"):
        @T.prim_func
        def bad(A: T.Tensor((16,), "int32")):
            with T.Kernel(1, threads=16):
                tx = T.get_thread_binding()
                A[tx] = T.ldexp(A[tx], 1)
