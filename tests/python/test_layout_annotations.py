"""T.annotate_layout and tilelang.layout: programs written with layout hints run unchanged;
the hint is reported as not applied (the compiler chooses tile layouts itself)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.layout import make_swizzled_layout
from conftest import assert_close, compile_cpu, f64, rand


def gemm_with_hints(M, N, K, bm=32, bn=32, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.annotate_layout({A_s: make_swizzled_layout(A_s), B_s: tilelang.layout.make_swizzled_layout(B_s)})
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_annotated_gemm_runs_and_reports_the_hint(rng):
    kernel = compile_cpu(gemm_with_hints(40, 48, 70), out_idx=[-1])
    a, b = rand(rng, (40, 70), "float16"), rand(rng, (70, 48), "float16")
    assert_close(kernel(a, b), f64(a) @ f64(b), "float32", rtol=1e-5)
    remarks = "\n".join(kernel.get_remarks())
    assert "T.annotate_layout(A_s" in remarks and "not applied" in remarks, remarks


def transposed(buf):  # a layout helper defined outside the kernel, as TileLang examples do
    return T.Layout(buf.shape, lambda i, j: [j, i])


def thread_rows(buf):
    return T.Fragment(buf.shape, forward_thread_fn=lambda i, j: i * 2 + j // 8)


def test_custom_layout_function_and_fragment_are_accepted(rng):
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((16, 16), "float32")
            f = T.alloc_fragment((16, 16), "float32")
            T.annotate_layout({s: transposed(s), f: thread_rows(f)})
            T.copy(A, s)
            T.copy(s, f)
            for i, j in T.Parallel(16, 16):
                f[i, j] = f[i, j] * 2
            T.copy(f, B)

    kernel = compile_cpu(main, out_idx=[-1])
    a = rand(rng, (16, 16))
    assert_close(kernel(a), 2 * f64(a), "float32")


def test_annotate_layout_checks_its_argument():
    with pytest.raises(tilelang.TileLangCompileError, match="keys must be tiles"):
        @T.prim_func
        def main(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                A_s = T.alloc_shared((16, 16), "float16")
                T.annotate_layout({"A_s": make_swizzled_layout(A_s)})
    with pytest.raises(tilelang.TileLangCompileError, match="expected a tile"):
        @T.prim_func
        def bad(A: T.Tensor((16,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                T.annotate_layout({bx: make_swizzled_layout(None)})


def test_lambdas_in_a_kernel_are_compile_time_functions(rng):
    @T.prim_func
    def main(A: T.Tensor((16, 16), "float32"), B: T.Tensor((16, 16), "float32")):
        with T.Kernel(1, threads=32) as bx:
            s = T.alloc_shared((16, 16), "float32")
            T.annotate_layout({s: T.Layout((16, 16), lambda i, j: [j, i])})
            scale = lambda x, k: x * k + 1  # noqa: E731
            T.copy(A, s)
            for i, j in T.Parallel(16, 16):
                B[i, j] = scale(s[i, j], 3)

    kernel = compile_cpu(main, out_idx=[-1])
    a = rand(rng, (16, 16))
    assert_close(kernel(a), 3 * f64(a) + 1, "float32")


def _roundtrip(fwd, scope="shared"):
    @T.prim_func
    def main(A: T.Tensor((128,), "int32"), Out: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "int32")
            T.annotate_layout({(s if scope == "shared" else A): T.Layout((128,), fwd)})
            for i in T.Parallel(128):
                s[i] = A[i]
            for i in T.Parallel(128):
                Out[i] = s[i]

    return main


@pytest.mark.parametrize("scope", ["shared", "global"])
@pytest.mark.parametrize("fwd,first,second,place", [(lambda i: i % 64, 0, 64, 0), (lambda i: i * 0, 0, 1, 0),
                                                    (lambda i: (i % 64) * 4, 0, 64, 0)])
def test_a_layout_that_maps_two_elements_to_one_place_is_refused(scope, fwd, first, second, place):
    # They would alias (upstream's issue 2632): refused naming the tile and both indices.
    from tilelang.errors import TileLangCompileError

    what = "shared buffer `s`" if scope == "shared" else "global tensor `A`"
    with pytest.raises(TileLangCompileError, match=rf"{what} must be injective.*\[{first}\] and \[{second}\] both "
                                                   rf"map to physical coordinates \[{place}\]"):
        compile_cpu(_roundtrip(fwd, scope))


@pytest.mark.parametrize("fwd", [lambda i: i, lambda i: i ^ 1, lambda i: i * 2 + 10])
def test_injective_layouts_still_run(rng, fwd):
    a = rng.integers(-1000, 1000, size=128).astype(np.int32)
    out = np.zeros(128, np.int32)
    compile_cpu(_roundtrip(fwd))(a, out)
    np.testing.assert_array_equal(out, a)
