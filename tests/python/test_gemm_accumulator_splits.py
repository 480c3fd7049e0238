"""GEMM accumulators that must share a warp split: two T.gemm into one accumulator, and a
T.Parallel combining two accumulators element by element (upstream's GDN backward kernels).
On Hopper one GEMM may fit wgmma (one warp per 16 rows) while the other does not (its K of
32 is no 128-byte panel); both then take one split, and the loop or the second GEMM follows
it, instead of a layout-conflict error."""
import numpy as np

import tilelang
import tilelang.language as T


def shared_accumulator():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16"), Q: T.Tensor((64, 64), "float16"),
             K: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 32), "float16")
            b_s = T.alloc_shared((64, 32), "float16")
            q_s = T.alloc_shared((64, 64), "float16")
            k_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.copy(Q, q_s)
            T.copy(K, k_s)
            T.clear(acc)
            T.gemm(q_s, k_s, acc, transpose_B=True)
            T.gemm(a_s, b_s, acc, transpose_B=True)
            T.copy(acc, C)

    return main


def elementwise_product_of_two_accumulators():
    @T.prim_func
    def main(A: T.Tensor((64, 32), "float16"), B: T.Tensor((64, 32), "float16"), Q: T.Tensor((64, 64), "float16"),
             K: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            a_s = T.alloc_shared((64, 32), "float16")
            b_s = T.alloc_shared((64, 32), "float16")
            q_s = T.alloc_shared((64, 64), "float16")
            k_s = T.alloc_shared((64, 64), "float16")
            s1 = T.alloc_fragment((64, 64), "float32")
            s2 = T.alloc_fragment((64, 64), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.copy(Q, q_s)
            T.copy(K, k_s)
            T.gemm(a_s, b_s, s1, transpose_B=True, clear_accum=True)
            T.gemm(q_s, k_s, s2, transpose_B=True, clear_accum=True)
            for i, j in T.Parallel(64, 64):
                s2[i, j] = s1[i, j] * s2[i, j]
            T.copy(s2, C)

    return main


def _inputs(seed):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float16) for s in ((64, 32), (64, 32), (64, 64), (64, 64))]


def test_two_gemms_into_one_accumulator():
    a, b, q, k = _inputs(1)
    c = np.full((64, 64), np.nan, np.float32)
    tilelang.compile(shared_accumulator())(a, b, q, k, c)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    np.testing.assert_allclose(c, f(q) @ f(k).T + f(a) @ f(b).T, rtol=1e-3, atol=1e-2)


def test_elementwise_product_of_two_gemm_accumulators():
    a, b, q, k = _inputs(2)
    c = np.full((64, 64), np.nan, np.float32)
    tilelang.compile(elementwise_product_of_two_accumulators())(a, b, q, k, c)
    f = lambda x: x.astype(np.float64)  # noqa: E731
    np.testing.assert_allclose(c, (f(a) @ f(b).T) * (f(q) @ f(k).T), rtol=1e-3, atol=5e-2)


def test_on_hopper_the_accumulators_share_one_split():
    for func, names in ((shared_accumulator(), ["acc"]), (elementwise_product_of_two_accumulators(), ["s1", "s2"])):
        remarks = tilelang.compile(func, target="cuda -arch=sm_90a").get_remarks()
        held = [r for r in remarks if r.startswith("fragment ") and "registers" in r]
        layouts = {r.split(":")[0]: r.split("layout ")[1].split(" (")[0] for r in held}
        assert {f"fragment {n}" for n in names} <= set(layouts), remarks
        assert len({layouts[f"fragment {n}"] for n in names}) == 1, layouts
