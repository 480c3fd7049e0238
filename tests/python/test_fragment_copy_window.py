"""T.copy of part of a register fragment (`T.copy(acc[64:128, :], C[0:64, :])`, upstream's
flash decoding `T.copy(acc_o[:valid_block_H, :], O_shared)`): on CUDA the register walk moves
only the elements of that window, each to the other region's corner plus its offset in the
window. It moved the whole fragment from the corner before (the window's start ignored, its
extent kept only where the other tensor's edge happened to clip). Values on the CPU target
(and on CUDA with TILELANG_TEST_CUDA=1); the CUDA code as text."""
import numpy as np
import pytest

import tilelang.language as T
from tilelang import _tl

from conftest import compile_cpu, f64, poison, rand


def halves_swapped(M=128, N=64, K=64):
    """C = A @ B with its two row halves stored in swapped places of a taller output."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), O: T.Tensor((2 * M, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c[M // 2:M, :], O[0:M // 2, :])
            T.copy(c[0:M // 2, :], O[M:M + M // 2, :])

    return main


def window_into_shared(M=64, N=64, K=32, rows=6, col0=16, cols=32):
    """A window of the accumulator through a shared tile of the window's shape, and a
    window of a tile loaded back into part of a second fragment."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), O: T.Tensor((rows, cols), "float32"),
             P: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            s = T.alloc_shared((rows, cols), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.copy(c[2:2 + rows, col0:col0 + cols], s)
            T.copy(s, O)
            T.fill(c, -1)
            T.copy(s, c[8:8 + rows, 0:cols])  # the rest of c keeps -1
            T.copy(c, P)

    return main


def reference(a, b):
    return f64(a) @ f64(b)


def test_halves_swapped_values(rng):
    a, b = rand(rng, (128, 64), "float16"), rand(rng, (64, 64), "float16")
    o = poison((256, 64))
    compile_cpu(halves_swapped())(a, b, o)
    c = reference(a, b)
    np.testing.assert_allclose(f64(o[0:64]), c[64:128], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(f64(o[128:192]), c[0:64], rtol=2e-3, atol=2e-3)
    assert np.isnan(o[64:128]).all() and np.isnan(o[192:]).all()


def test_window_values(rng):
    a, b = rand(rng, (64, 32), "float16"), rand(rng, (32, 64), "float16")
    o, p = poison((6, 32)), poison((64, 64))
    compile_cpu(window_into_shared())(a, b, o, p)
    c = reference(a, b)
    np.testing.assert_allclose(f64(o), c[2:8, 16:48], rtol=2e-3, atol=2e-3)
    want = np.full((64, 64), -1.0)
    want[8:14, 0:32] = c[2:8, 16:48]
    np.testing.assert_allclose(f64(p), want, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_only_the_window_moves(arch):
    lowered, _, _ = _tl.lower_cuda(halves_swapped().node, {"tl.target_arch": arch}, False)
    code = _tl.codegen_cuda(lowered).code
    body = code[code.index("// test_fragment_copy_window.py:27"):]
    first, second = body.split("// test_fragment_copy_window.py:28")
    # each walk keeps the registers of its half (rows >= 64, then rows < 64) ...
    assert ">= 64)) {" in first and "< 64)) {" in second, body
    # ... and moves them by the window's start: up 64 rows (64 x 64 floats), down 128
    assert "- 4096)]" in first and "+ 8192)]" in second, body


def atomic_from_halves(M=128, N=64, K=64):
    """The accumulator's lower half added into D's rows 0-63 and its upper half into D's
    rows 64-127 (swapped)."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), D: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=128) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((K, N), "float16")
            c = T.alloc_fragment((M, N), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.atomic_add(D[0:M // 2, :], c[M // 2:M, :])
            T.atomic_add(D[M // 2:M, :], c[0:M // 2, :])

    return main


def test_atomic_from_a_window_values(rng):
    a, b = rand(rng, (128, 64), "float16"), rand(rng, (64, 64), "float16")
    d = rand(rng, (128, 64))
    want = f64(d).copy()
    compile_cpu(atomic_from_halves())(a, b, d)
    c = reference(a, b)
    want[0:64] += c[64:128]
    want[64:128] += c[0:64]
    np.testing.assert_allclose(f64(d), want, rtol=2e-3, atol=2e-3)


def test_atomic_from_a_window_takes_its_rows():
    lowered, _, _ = _tl.lower_cuda(atomic_from_halves().node, {"tl.target_arch": "sm_80"}, False)
    code = _tl.codegen_cuda(lowered).code
    body = code[code.index("// test_fragment_copy_window.py:105"):]
    first, second = body.split("// test_fragment_copy_window.py:106")
    assert ">= 64)" in first and "- 4096)]" in first, first
    assert "< 64)" in second and "+ 4096)]" in second, second
