"""T.annotate_layout on a global tensor sets its storage order (upstream's semantics, used
by upstream's attention backward for dQ): element (i, j, ...) lives at the row-major
position of layout(i, j, ...). Checked against numpy on whichever target the suite runs,
for element writes, atomic adds from an accumulator and tile copies, and from the
generated CUDA code (no GPU) for the coalesced atomics it exists for."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def dq_layout(shape):
    # upstream's make_dq_layout: an 8 x 8 block of (rows, cols) stored so that lane
    # 4 * (row % 8) + (col % 8) // 2 of a warp's accumulator pair is contiguous
    return T.Layout(shape, lambda l, d: [l // 8, d // 8, d % 2, 4 * (l % 8) + (d % 8) // 2])


def dq_position(L, D):
    """numpy: the storage position of each (l, d) under dq_layout."""
    l, d = np.meshgrid(np.arange(L), np.arange(D), indexing="ij")
    return ((l // 8 * (D // 8) + d // 8) * 2 + d % 2) * 32 + 4 * (l % 8) + (d % 8) // 2


def accumulate_into_dq(L=64, D=64, K=32):
    @T.prim_func
    def main(A: T.Tensor((2 * L, K), "float16"), B: T.Tensor((K, D), "float16"), dQ: T.Tensor((L, D), "float32")):
        with T.Kernel(2, threads=128) as bx:
            T.annotate_layout({dQ: dq_layout((L, D))})
            a_s = T.alloc_shared((L, K), "float16")
            b_s = T.alloc_shared((K, D), "float16")
            acc = T.alloc_fragment((L, D), "float32")
            T.copy(A[bx * L, 0], a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc)
            for i, j in T.Parallel(L, D):
                T.atomic_add(dQ[i, j], acc[i, j])

    return main


def unpermute(L=64, D=64, blk=32):
    @T.prim_func
    def main(dQ: T.Tensor((L, D), "float32"), out: T.Tensor((L, D), "float16")):
        with T.Kernel(L // blk, threads=128) as bx:
            T.annotate_layout({dQ: dq_layout((L, D))})
            T.copy(dQ[bx * blk:(bx + 1) * blk, :], out[bx * blk:(bx + 1) * blk, :])

    return main


def test_atomic_adds_land_in_the_annotated_storage_order():
    rng = np.random.default_rng(11)
    a = rng.standard_normal((128, 32)).astype(np.float16)
    b = rng.standard_normal((32, 64)).astype(np.float16)
    storage = np.zeros((64, 64), np.float32)
    tilelang.compile(accumulate_into_dq())(a, b, storage)
    logical = a[:64].astype(np.float64) @ b.astype(np.float64) + a[64:].astype(np.float64) @ b.astype(np.float64)
    want = np.empty(64 * 64)
    want[dq_position(64, 64).ravel()] = logical.ravel()
    np.testing.assert_allclose(storage.ravel(), want, rtol=1e-4, atol=1e-3)
    # a kernel annotating the tensor the same way reads it back in logical order
    out = np.full((64, 64), np.nan, np.float16)
    tilelang.compile(unpermute())(storage, out)
    np.testing.assert_allclose(out.astype(np.float64), logical, rtol=2e-3, atol=2e-3)


def test_cuda_atomics_are_lane_contiguous():
    lowered, remarks, _ = _tl.lower_cuda(accumulate_into_dq().node, {"tl.target_arch": "sm_90a"}, False)
    code = _tl.codegen_cuda(lowered).code
    # consecutive lanes (tx % 32) add into consecutive floats: 4 * (row % 8) + col pair
    assert "(((tx & 31) >> 2) * 4)) + (tx & 3))]), acc[" in code, code
    assert any("applied to the global tensor's storage (row-major in a (8, 8, 2, 32) array)" in r for r in remarks)


@pytest.mark.parametrize("layout, message", [
    (lambda l, d: [l, d // 2], r"logical indices \[0, 0\] and \[0, 1\] both map to physical coordinates \[0, 0\]"),
    (lambda l, d: [l - 1, d], "not provably non-negative"),
])
def test_a_layout_that_is_not_a_storage_order_is_refused(layout, message):
    def build():
        @T.prim_func
        def main(X: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=128) as bx:
                T.annotate_layout({X: T.Layout((64, 64), layout)})
                for i, j in T.Parallel(64, 64):
                    X[i, j] = 1.0

        return tilelang.compile(main)

    # (the first is found where the kernel is defined, the second when it is compiled)
    with pytest.raises(tilelang.errors.TileLangCompileError, match=message):
        build()
