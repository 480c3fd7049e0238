"""Control flow: run-time if/elif/else, while/break/continue, T.alloc_var and reassigned
names, T.serial/T.unroll/T.vectorized/range loops, T.Pipelined with 0 or few iterations,
and compile-time Python (if on constants, closures, globals, helper functions)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, f64, poison, rand

SCALE = 3  # a global constant read by the kernel


def triple_plus(x, c):
    """A Python helper applied to run-time values: it builds an expression."""
    return x * SCALE + c


def copy_twice(src, mid, dst):
    """A Python helper that emits tile operations."""
    T.copy(src, mid)
    T.copy(mid, dst)


def test_runtime_control_flow_and_vars(rng):
    M = 17
    offset = 5  # a closure constant

    @T.prim_func
    def cf(A: T.Tensor((M,), "int32"), Out: T.Tensor((4, M), "int32"), S: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=1):
            total = T.alloc_var("int32", 7)        # with an initial value
            cnt = T.alloc_var(T.int32)             # without: assigned below
            cnt = 0
            for i in T.serial(M):
                a = A[i]
                if a > 5:
                    Out[0, i] = 1
                elif a < -5:
                    Out[0, i] = -1
                else:
                    Out[0, i] = 0
                if a % 2 == 0 and a != 0:
                    total += a
                if not a > 0:
                    continue
                cnt = cnt + 1
            S[0] = total
            S[1] = cnt
            acc = T.alloc_var("int32", 0)
            for k in T.serial(1, M, 3):            # start, stop, step
                acc += A[k]
            for k in range(M - 2, M):              # range inside a kernel: a serial loop
                acc += 100 * A[k]
            S[2] = acc
            for k in T.unroll(4):
                Out[1, k] = triple_plus(A[k], offset)
            for k in T.vectorized(M):
                Out[2, k] = A[k] * A[k]
            for k in T.Parallel(M - 4):
                Out[1, k + 4] = -A[k + 4]
            # while with break: the first index holding a value >= 8 (M if none)
            j = T.alloc_var("int32", 0)
            while j < M:
                if A[j] >= 8:
                    break
                j += 1
            S[3] = j
            # a reassigned plain name becomes a mutable scalar
            m = A[0]
            for k in T.serial(M):
                if A[k] > m:
                    m = A[k]
            S[4] = m
            for k in T.Pipelined(0, num_stages=2):  # zero iterations: the body never runs
                S[5] = 999
            S[5] = T.if_then_else(m > 100, 1, 2)
            # nested loops with a break in the inner one only
            pairs = T.alloc_var("int32", 0)
            for p in T.serial(4):
                for q in T.serial(10):
                    if q > p:
                        break
                    pairs += 1
            S[6] = pairs
            S[7] = T.ceildiv(total, 4)
            for k in T.serial(M):
                Out[3, k] = T.max(A[k], 0) if SCALE > 2 else 12345  # compile-time conditional

    kernel = compile_cpu(cf)
    a = rand(rng, (M,), "int32", -12, 12)
    a[5], a[9] = 9, 11
    out, s = poison((4, M), "int32"), poison((8,), "int32")
    kernel(a, out, s)
    a64 = a.astype(np.int64)
    np.testing.assert_array_equal(out[0], np.where(a > 5, 1, np.where(a < -5, -1, 0)))
    np.testing.assert_array_equal(out[1], np.concatenate([a64[:4] * 3 + 5, -a64[4:]]))
    np.testing.assert_array_equal(out[2], a64 * a64)
    np.testing.assert_array_equal(out[3], np.maximum(a64, 0))
    total = 7 + a64[(a64 % 2 == 0) & (a64 != 0)].sum()
    ref = [total, (a64 > 0).sum(), a64[1:M:3].sum() + 100 * a64[M - 2:].sum(),
           int(np.argmax(a64 >= 8)), a64.max(), 2, 1 + 2 + 3 + 4, -(-total // 4)]
    np.testing.assert_array_equal(s, ref)


@tilelang.jit(out_idx=[-1])
def staged(M, N, bm, relu, scales=(1.0, 2.0)):
    """Lazy style with compile-time Python: an `if` on a parameter, a loop over a tuple, a
    helper that emits tile ops, a nested helper closure."""
    def bias(i):
        return i * 0.5

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), B: T.Tensor((len(scales), M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), threads=(16, 2)) as bx:
            s = T.alloc_shared((bm, N), "float32")
            f = T.alloc_fragment((bm, N), "float32")
            copy_twice(A[bx * bm:(bx + 1) * bm, :], s, f)
            for t, sc in enumerate(scales):
                for i, j in T.Parallel(bm, N):
                    if relu:
                        s[i, j] = T.max(f[i, j], 0) * sc + bias(t)
                    else:
                        s[i, j] = f[i, j] * sc + bias(t)
                T.copy(s, B[t, bx * bm, 0])
    return main


def test_compile_time_python(rng):
    M, N = 10, 6
    a = rand(rng, (M, N))
    k_relu = staged(M, N, 4, True)
    k_lin = staged(M, N, 4, False, scales=(3.0, -1.0, 0.5))
    assert k_relu is not k_lin
    np.testing.assert_allclose(k_relu(a), np.stack([np.maximum(a, 0) * s + 0.5 * t for t, s in enumerate((1, 2))]),
                               rtol=1e-6)
    np.testing.assert_allclose(k_lin(a), np.stack([f64(a) * s + 0.5 * t for t, s in enumerate((3, -1, 0.5))]),
                               rtol=1e-6)
    assert "T.max" not in k_lin.get_kernel_source() and "max" not in k_lin.get_kernel_source().split("main")[-1]


def _make_doubler(n):
    @T.prim_func
    def doubler(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(1):
            for i in T.serial(n):
                B[i] = A[i] * 2
    return doubler


@tilelang.jit(out_idx=[-1])
def via_helper(n):
    return _make_doubler(n)  # lazy style without an inner decorated function


def test_lazy_factory_through_helper(rng):
    assert via_helper.is_lazy_mode()
    a = rand(rng, (5,))
    np.testing.assert_array_equal(via_helper(5)(a), a * 2)


def test_macro_sync_threads_clamp_and_pass_config_keys(rng):
    """@T.macro bodies are inlined at their call sites (with a return value); T.sync_threads
    and T.clamp work; pass_configs accept tilelang.PassConfigKey."""
    import tilelang

    @T.macro
    def scaled_copy(src, dst, factor):
        for i, j in T.Parallel(8, 16):
            dst[i, j] = src[i, j] * factor
        return factor + 1

    @T.prim_func
    def main(A: T.Tensor((8, 16), "float32"), B: T.Tensor((8, 16), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((8, 16), "float32")
            T.copy(A, s)
            T.sync_threads()
            nxt = scaled_copy(s, B, 2.0)
            for i, j in T.Parallel(8, 16):
                B[i, j] = T.clamp(B[i, j] * nxt, -3.0, 3.0)

    kernel = tilelang.compile(main, target="cpu",
                              pass_configs={tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True})
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = np.full((8, 16), np.nan, np.float32)
    kernel(a, b)
    np.testing.assert_allclose(b, np.clip(a * 2.0 * 3.0, -3.0, 3.0), rtol=1e-6)


@T.macro
def set_to_seven(x: T.Ref):
    x = 7  # noqa: F841 - writes the caller's variable or element


@T.macro
def bump(x: T.Var):
    x = x + 1  # noqa: F841


def test_macro_reference_parameters_write_the_callers_variable_or_element():
    @T.prim_func
    def main(A: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=1) as bx:
            v = T.alloc_var("int32")
            v = 1
            bump(v)
            A[0] = v
            set_to_seven(v)
            A[1] = v
            set_to_seven(A[2])
            A[3] = 3

    a = np.zeros(4, np.int32)
    compile_cpu(main)(a)
    np.testing.assert_array_equal(a, [2, 7, 7, 3])


@pytest.mark.parametrize("macro, message", [
    (bump, "parameter 'x' is annotated T.Var, so it takes a variable \\(T.alloc_var\\)"),
    (set_to_seven, "annotated T.Ref, so it takes a variable \\(T.alloc_var\\) or an element"),
])
def test_macro_reference_parameters_refuse_plain_values(macro, message):
    with pytest.raises(tilelang.TileLangCompileError, match=message) as info:
        @T.prim_func
        def main(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=1) as bx:
                x = 1
                macro(x)
    assert isinstance(info.value, ValueError)  # as upstream's front end raises it
