"""T.copy's arguments beyond its regions: disable_tma=True keeps a copy off TMA (as upstream's
examples ask where a tile is small or misaligned), and the hints the compiler does not act on
(eviction_policy, prefer_instruction, coalesced_width, loop_layout; T.Parallel's
coalesced_width, loop_layout) are said in the remarks rather than dropped silently."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, f64, poison, assert_close
from tilelang.errors import TileLangCompileError


def _hopper(func):
    from tilelang import _tl

    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def staged_copy(no_tma_in=False, no_tma_out=False):
    """Y = X through a shared tile: a TMA store candidate on sm_90a."""

    @T.prim_func
    def main(X: T.Tensor((64, 64), "float16"), Y: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            T.copy(X, S, disable_tma=no_tma_in)
            T.copy(S, Y, disable_tma=no_tma_out)

    return main


def pipelined_gemm(no_tma=False):
    @T.prim_func
    def main(A: T.Tensor((128, 256), "float16"), B: T.Tensor((256, 128), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 64), "float16")
            B_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 64, k * 64], A_s, disable_tma=no_tma)
                T.copy(B[k * 64, bx * 64], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 64, bx * 64])

    return main


def test_disable_tma_keeps_a_store_with_the_threads():
    code, remarks = _hopper(staged_copy())
    assert "tma_store" in code and any("is a TMA store" in r for r in remarks), remarks
    code, remarks = _hopper(staged_copy(no_tma_out=True))
    assert "tma_store" not in code and not any("is a TMA store" in r for r in remarks), code


def test_disable_tma_keeps_a_pipelined_loop_off_the_tma_producer():
    """One copy of the loop that may not use TMA: the loop is not warp-specialized (its loads
    stay cp.async), and the remark says which copy."""
    _, remarks = _hopper(pipelined_gemm())
    assert any("warp-specialized," in r for r in remarks), remarks
    code, remarks = _hopper(pipelined_gemm(no_tma=True))
    assert not any("warp-specialized," in r for r in remarks), remarks
    assert any("A_s" in r and "disable_tma=True" in r for r in remarks), remarks
    assert "tma_load" not in code and "cp_async" in code, code


def test_the_flag_is_in_the_ir_and_the_answer_unchanged():
    art = tilelang.lower(staged_copy(no_tma_out=True), target="cpu", trace=True)
    assert any("T.copy(S[0:64, 0:64], Y[0:64, 0:64], disable_tma=True)" in r.ir for r in art.trace)
    x = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float16)
    y = poison((64, 64), "float16")
    compile_cpu(staged_copy(True, True))(x, y)
    np.testing.assert_array_equal(y, x)


def test_pipelined_gemm_without_tma_matches_float64():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 128)).astype(np.float16)
    c = poison((128, 128))
    compile_cpu(pipelined_gemm(no_tma=True))(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype="float16")


def test_prefer_tma_with_tma_disabled_is_an_error():
    with pytest.raises(TileLangCompileError, match='prefer_instruction="tma" conflicts with disable_tma=True'):

        @T.prim_func
        def main(X: T.Tensor((64, 64), "float16"), Y: T.Tensor((64, 64), "float16")):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((64, 64), "float16")
                T.copy(X, S, disable_tma=True, prefer_instruction="tma")
                T.copy(S, Y)


def test_hints_not_taken_are_remarks():
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float16"), Y: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float16")
            T.copy(X, S, eviction_policy="evict_first", coalesced_width=8)
            for i, j in T.Parallel(64, 64, coalesced_width=4):
                Y[i, j] = S[i, j]

    kernel = compile_cpu(main)
    remarks = kernel.get_remarks()
    assert any(r.startswith("T.copy(eviction_policy=..., coalesced_width=...): not applied") for r in remarks), remarks
    assert any(r.startswith("T.Parallel(coalesced_width=...): not applied") for r in remarks), remarks
    x = np.random.default_rng(4).standard_normal((64, 64)).astype(np.float16)
    y = poison((64, 64), "float16")
    kernel(x, y)
    np.testing.assert_array_equal(y, x)


def test_gemm_arguments_not_taken_are_remarks():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((32, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            T.gemm(A, B, acc, k_pack=2, wg_wait=-1)
            T.copy(acc, C)

    kernel = compile_cpu(main)
    assert any(r.startswith("T.gemm(k_pack=..., wg_wait=...): not applied") for r in kernel.get_remarks())
    rng = np.random.default_rng(6)
    a = rng.standard_normal((64, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    c = poison((64, 64))
    kernel(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype="float16")


def test_loop_reduction_and_print_hints_are_remarks():
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128):
            T.use_swizzle(4, order="col")
            F = T.alloc_fragment((64, 64), "float32")
            r = T.alloc_fragment((64,), "float32")
            T.copy(X, F)
            T.reduce_sum(F, r, dim=1, batch=4)
            for i in T.unroll(2, explicit=True):
                for j in T.serial(1, annotations={"tl.hint": 1}):
                    T.print(F[i, j], warp_group_id=1)
            T.copy(r, Y)

    kernel = compile_cpu(main)
    remarks = kernel.get_remarks()
    for start in ("T.use_swizzle(order='col'): not applied", "T.reduce_sum(batch=...): not applied",
                  "T.unroll(explicit=...): not applied", "T.serial(annotations=...): not applied",
                  "T.print(warp_group_id=..., warp_id=...): not applied"):
        assert any(r.startswith(start) for r in remarks), (start, remarks)
