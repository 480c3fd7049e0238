"""Compile errors point at the user's line: the exception type, the message, the line number
(marked `# ERR-HERE` in the kernel source) and a rendering with the source line and a caret."""
import inspect

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import marker_line, rand, source_line


def check_error(info, fn, pattern_parts):
    """info: pytest ExceptionInfo; fn: the function whose source holds the ERR-HERE marker."""
    e = info.value
    assert isinstance(e, tilelang.TileLangCompileError)
    line = marker_line(fn)
    assert e.line == line, f"error reported at line {e.line}, expected {line}:\n{e}"
    assert e.file == inspect.getsourcefile(fn)
    for part in pattern_parts:
        assert part in e.message, f"{part!r} not in {e.message!r}"
    text = str(e)
    src = source_line(e.file, line)
    assert src.strip() and src in text, text
    rendered = text.splitlines()
    src_idx = next(i for i, ln in enumerate(rendered) if ln.endswith(src))
    caret_line = rendered[src_idx + 1]
    assert "^" in caret_line
    # the caret sits under the reported column, inside the source text
    prefix = rendered[src_idx][: len(rendered[src_idx]) - len(src)]
    caret_col = caret_line.index("^") - len(prefix)
    assert caret_col == e.col and 0 <= caret_col < len(src)
    assert f":{line}:" in text
    return e


def expect_compile_error(fn, *parts):
    with pytest.raises(tilelang.TileLangCompileError) as info:
        T.prim_func(fn)
    return check_error(info, fn, parts)


def test_unknown_primitive():
    def k(A: T.Tensor((8, 8), "float32")):
        with T.Kernel(1) as bx:
            s = T.alloc_shared((8, 8), "float32")
            T.copy(A, s)
            T.reduce_maxx(s, s, dim=1)  # ERR-HERE
    e = expect_compile_error(k, "reduce_maxx")
    assert "reduce_max" in e.message.replace("reduce_maxx", "")  # a suggestion


def test_unknown_primitive_decorator_form():
    with pytest.raises(tilelang.TileLangCompileError) as info:
        @T.prim_func
        def k(A: T.Tensor((8,), "float32")):
            with T.Kernel(1) as bx:
                T.no_such_op(A)  # ERR-HERE
    check_error(info, test_unknown_primitive_decorator_form, ["no_such_op"])


def test_gemm_k_mismatch():
    def k(A: T.Tensor((16, 16), "float16"), C: T.Tensor((16, 16), "float32")):
        with T.Kernel(1) as bx:
            a = T.alloc_shared((16, 8), "float16")
            b = T.alloc_shared((16, 16), "float16")
            c = T.alloc_fragment((16, 16), "float32")
            T.copy(A[0, 0], a)
            T.copy(A, b)
            T.gemm(a, b, c)  # ERR-HERE
            T.copy(c, C)
    expect_compile_error(k, "8", "16")


def test_copy_shape_mismatch():
    def k(A: T.Tensor((16, 16), "float32")):
        with T.Kernel(1) as bx:
            s = T.alloc_shared((8, 8), "float32")
            T.copy(A[0:8, 0:8], s)
            T.copy(s, A[0:8, 0:4])  # ERR-HERE (the shared tile, the more local side, is the larger)
    e = expect_compile_error(k)
    assert "shape" in e.message.lower() or "extent" in e.message.lower(), e.message


def test_undefined_name():
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.Parallel(16):
                A[i] = A[i] * scale_factor  # ERR-HERE  # noqa: F821
    expect_compile_error(k, "scale_factor", "not defined")


def test_for_else_unsupported():
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.serial(16):
                A[i] = 0.0
            else:
                A[0] = 1.0  # ERR-HERE
    expect_compile_error(k, "for ... else")


def test_lambda_with_defaults_unsupported():
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1) as bx:
            f = lambda x, y=1: x + y  # ERR-HERE  # noqa: E731
            for i in T.serial(16):
                A[i] = f(A[i])
    expect_compile_error(k, "plain positional parameters")


def test_try_unsupported():
    def k(A: T.Tensor((16,), "float32")):
        with T.Kernel(1) as bx:
            try:  # ERR-HERE
                A[0] = 1.0
            except Exception:
                pass
    expect_compile_error(k, "Try")


def test_runtime_value_as_python_bool():
    def k(A: T.Tensor((16,), "float32"), n: T.int32):
        with T.Kernel(1) as bx:
            lo = sorted([n, 3])[0]  # ERR-HERE
            A[lo] = 0.0
    expect_compile_error(k, "run-time", "bool")


def test_buffer_index_rank():
    def k(A: T.Tensor((16, 4), "float32")):
        with T.Kernel(1) as bx:
            for i in T.serial(16):
                A[i] = 0.0  # ERR-HERE
    expect_compile_error(k, "A", "2 dimension")


def test_error_in_lazy_jit_points_at_kernel_line():
    @tilelang.jit(out_idx=[-1])
    def bad(n):
        @T.prim_func
        def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
            with T.Kernel(1) as bx:
                s = T.alloc_fragment((n,), "float32")
                T.copy(A, s)
                T.fill(s, undefined_value)  # ERR-HERE  # noqa: F821
                T.copy(s, B)
        return main

    with pytest.raises(tilelang.TileLangCompileError) as info:
        bad(8)
    check_error(info, test_error_in_lazy_jit_points_at_kernel_line, ["undefined_value"])


def test_error_in_eager_jit_points_at_kernel_line(rng):
    @tilelang.jit
    def bad(A):
        (M,) = T.const("M"),
        A: T.Tensor((M,), T.float32)
        C = T.empty((M,), T.float32)
        with T.Kernel(1) as bx:
            s = T.alloc_shared((M,), T.float32)
            T.copy(A, s)
            T.copy(s[0:M + 3], C)  # ERR-HERE
        return C

    with pytest.raises(tilelang.TileLangCompileError) as info:
        bad(rand(rng, (5,)))
    e = check_error(info, test_error_in_eager_jit_points_at_kernel_line, [])
    assert e.message


def test_kernel_primitive_outside_kernel():
    def k(A: T.Tensor((16,), "float32")):
        T.fill(A, 1.0)  # ERR-HERE
    expect_compile_error(k, "T.Kernel")


def test_errors_do_not_leak_state(rng):
    """After a failed parse, the next kernel compiles and runs normally."""
    def broken(A: T.Tensor((4,), "float32")):
        with T.Kernel(1) as bx:
            T.copy(A, undefined_tile)  # ERR-HERE  # noqa: F821
    expect_compile_error(broken, "undefined_tile")

    @T.prim_func
    def ok(A: T.Tensor((4,), "float32")):
        with T.Kernel(1) as bx:
            for i in T.serial(4):
                A[i] = A[i] + 1.0

    a = rand(rng, (4,))
    ref = a + 1
    tilelang.compile(ok, target="cpu")(a)
    np.testing.assert_allclose(a, ref)


def test_reassigning_outer_value_in_runtime_loop():
    """`acc = 0.0` then `acc = acc + ...` in a run-time loop would silently lose the
    update; the front end asks for T.alloc_var instead."""
    def k(A: T.Tensor((8,), "float32"), S: T.Tensor((1,), "float32")):
        with T.Kernel(1) as bx:
            acc = 0.0
            for i in T.serial(8):
                acc = acc + A[i]  # ERR-HERE
            S[0] = acc
    expect_compile_error(k, "acc", "T.alloc_var")

    def k2(A: T.Tensor((8,), "float32")):
        with T.Kernel(1) as bx:
            y = 1.0
            if A[0] > 0:
                y += 1.0  # ERR-HERE
            A[1] = y
    expect_compile_error(k2, "y", "T.alloc_var")


def test_a_kernel_without_source_code_gets_a_clear_error():
    """python -c, stdin or exec() of a string keep no source for the front end to read."""
    code = ("import tilelang.language as T\n"
            "@T.prim_func\n"
            "def k(A: T.Tensor((4,), 'float32')):\n"
            "    with T.Kernel(1):\n"
            "        A[0] = 1.0\n")
    with pytest.raises(tilelang.TileLangCompileError, match="source code is not available"):
        exec(compile(code, "<string>", "exec"), {})
