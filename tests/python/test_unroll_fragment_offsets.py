"""cuda-unroll-fragment-offsets: a short serial loop whose T.Parallel nests index a fragment
by the loop's variable (`acc[i + s * 16, j]`, sparse MLA backward's split store) is
unrolled on CUDA, so each register walk sees a constant offset. Checked from the lowering
(no GPU needed) and against float64 on whichever target the suite runs."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison, rand

SM90 = "cuda -arch=sm_90a"


def split_store(steps=2, rows=32, with_let=False):
    """Out = A @ B, written back through a half-height staging tile, one half per step."""
    half = rows // steps

    @T.prim_func
    def main(A: T.Tensor((rows, 32), "float16"), B: T.Tensor((32, 64), "float16"),
             Out: T.Tensor((rows, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a_s = T.alloc_shared((rows, 32), "float16")
            b_s = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((rows, 64), "float32")
            stage = T.alloc_shared((half, 64), "float32")
            T.copy(A, a_s)
            T.copy(B, b_s)
            T.clear(acc)
            T.gemm(a_s, b_s, acc)
            for s in range(steps):
                if with_let:
                    base = s * half
                    for i, j in T.Parallel(rows, 64):
                        if i < half:
                            stage[i, j] = acc[i + base, j]
                else:
                    for i, j in T.Parallel(rows, 64):
                        if i < half:
                            stage[i, j] = acc[i + s * half, j]
                T.copy(stage, Out[s * half:(s + 1) * half, :])

    return main


def _remarks(func, **configs):
    return tilelang.compile(func, target=SM90, pass_configs=configs or None).get_remarks()


def test_split_store_loop_is_unrolled():
    remarks = _remarks(split_store())
    assert any("loop s at line" in r and "unrolled (2 steps)" in r for r in remarks), remarks
    src = tilelang.compile(split_store(), target=SM90).get_kernel_source()
    assert "for (int32_t s = 0" not in src, src


def test_each_step_stores_its_rows_in_register_pairs():
    # after unrolling, a register's row test reads the register index only (the lane's part
    # of the row cannot cross a multiple of 8), so pairs of registers store 8 bytes at once
    src = tilelang.compile(split_store(), target=SM90).get_kernel_source()
    assert "float stage_group[2];" in src, src
    remarks = _remarks(split_store())
    assert any("register walk(s): their shared-memory and tensor accesses" in r for r in remarks), remarks


def test_unrolling_can_be_turned_off():
    remarks = _remarks(split_store(), **{"tl.unroll_fragment_offsets": False})
    assert not any("unrolled (" in r for r in remarks), remarks
    src = tilelang.compile(split_store(), target=SM90,
                           pass_configs={"tl.unroll_fragment_offsets": False}).get_kernel_source()
    assert "for (int32_t s = 0" in src


def test_a_loop_that_declares_stays_a_loop():
    # `base = s * half` is a declaration each copy would repeat in one scope
    remarks = _remarks(split_store(with_let=True))
    assert not any("unrolled (" in r for r in remarks), remarks


@pytest.mark.parametrize("steps, with_let, unroll", [(2, False, True), (4, False, True), (2, True, True),
                                                     (2, False, False)])
def test_split_store_matches_float64(rng, steps, with_let, unroll):
    a = rand(rng, (32, 32), "float16", -2, 2)
    b = rand(rng, (32, 64), "float16", -2, 2)
    out = poison((32, 64))
    kernel = tilelang.compile(split_store(steps=steps, with_let=with_let),
                              pass_configs={"tl.unroll_fragment_offsets": unroll})
    kernel(a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3)
