"""T.atomic_*(memory_order=...): the atomic itself is relaxed, with a device-scope fence
(tl::thread_fence: __threadfence on CUDA, a sequentially consistent fence on the CPU) before
it for a releasing order and after it for an acquiring one, which is at least as strong as
the order asked. An acquiring order on an atomic used as a value (return_prev=True) is
refused: nothing can follow an expression. Code is checked on sm_90a without a GPU; sums
against numpy on whichever target the suite runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def cuda_code(func):
    lowered, _, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered).code


def tile_add(N, order, threads=32):
    @T.prim_func
    def main(X: T.Tensor((N,), "float32"), Out: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=threads):
            T.atomic_add(Out[0:N], X[0:N], memory_order=order)

    return main


def element_sum(N, order):
    @T.prim_func
    def main(X: T.Tensor((N,), "int32"), Out: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(N):
                T.atomic_add(Out[0], X[i], memory_order=order)
                T.atomic_or(Out[1], X[i], memory_order=order)

    return main


def fences_around_atomic(code):
    """(fence before the first atomic, fence after the last one)."""
    first, last = code.index("tl::atomic_"), code.rindex("tl::atomic_")
    return "tl::thread_fence();" in code[:first], "tl::thread_fence();" in code[last:]


@pytest.mark.parametrize("order, before, after", [
    (None, False, False), ("relaxed", False, False), ("release", True, False), ("acquire", False, True),
    ("consume", False, True), ("acq_rel", True, True), ("seq_cst", True, True)])
def test_fences_follow_the_order(order, before, after):
    assert fences_around_atomic(cuda_code(tile_add(64, order))) == (before, after)
    assert fences_around_atomic(cuda_code(element_sum(256, order))) == (before, after)


@pytest.mark.parametrize("order", ["relaxed", "release", "acq_rel", "seq_cst"])
def test_ordered_atomics_sum_like_numpy(order, rng):
    x = rng.standard_normal(64).astype(np.float32)
    base = rng.standard_normal(64).astype(np.float32)
    out = base.copy()
    tilelang.compile(tile_add(64, order))(x, out)
    np.testing.assert_allclose(out, base.astype(np.float64) + x, rtol=1e-6, atol=1e-6)
    v = rng.integers(0, 1 << 20, 256).astype(np.int32)
    acc = np.zeros(2, dtype=np.int32)
    tilelang.compile(element_sum(256, order))(v, acc)
    assert acc[0] == v.sum() and acc[1] == np.bitwise_or.reduce(v)


def test_release_on_a_value_fences_before_its_statement(rng):
    @T.prim_func
    def main(Counter: T.Tensor((1,), "int32"), Seen: T.Tensor((1,), "int32")):
        with T.Kernel(1, threads=1):
            Seen[0] = T.atomic_add(Counter[0], 5, return_prev=True, memory_order="release")

    code = cuda_code(main)
    assert code.index("tl::thread_fence();") < code.index("tl::atomic_add("), code
    counter, seen = np.array([7], dtype=np.int32), np.array([-1], dtype=np.int32)
    tilelang.compile(main)(counter, seen)
    assert counter[0] == 12 and seen[0] == 7


def test_an_acquiring_order_on_a_value_is_refused():
    with pytest.raises(tilelang.TileLangCompileError, match="acquiring order on an atomic used as a value"):
        @T.prim_func
        def main(Counter: T.Tensor((1,), "int32"), Seen: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1):
                Seen[0] = T.atomic_add(Counter[0], 5, return_prev=True, memory_order="acquire")

        tilelang.compile(main)
