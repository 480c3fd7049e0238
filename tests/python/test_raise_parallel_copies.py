"""raise-parallel-copies: in a T.Pipelined body, a T.Parallel nest that only copies a global
box into a whole shared tile becomes that tile copy, so the pipeliner prefetches it (on sm_90a:
TMA and a producer warpgroup). Checked from the lowering trace's text, the remarks, and the
results on the CPU target against float64 (edges included: the copy reads past the tensor as
zero, as the loop's guarded reads did). Nests that are not exactly a copy stay loops."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, rand


def gemm_with_loop_loads(M, N, K, bm=64, bn=64, bk=32, load="plain"):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                for i, k in T.Parallel(bm, bk):
                    A_s[i, k] = A[by * bm + i, ko * bk + k]
                if load == "plain":
                    for j, k in T.Parallel(bn, bk):
                        B_s[j, k] = B[bx * bn + j, ko * bk + k]
                elif load == "scaled":  # not a copy: a value computed from the load
                    for j, k in T.Parallel(bn, bk):
                        B_s[j, k] = B[bx * bn + j, ko * bk + k] * T.float16(2)
                elif load == "strided":  # not a copy of a box: every other column
                    for j, k in T.Parallel(bn, bk):
                        B_s[j, k] = B[bx * bn + j, (ko * bk + k) % K]
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def raised(func, target, **configs):
    art = tilelang.lower(func, target=target, trace=True, pass_configs=configs)
    names = [r.name for r in art.trace]
    i = names.index("raise-parallel-copies")
    return art.trace[i - 1].ir, art.trace[i].ir, art.remarks


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a"])
def test_loop_loads_become_tile_copies(target):
    before, after, remarks = raised(gemm_with_loop_loads(256, 256, 256), target)
    assert "T.Parallel" in before and before.count("T.copy(") == 1  # the epilogue's
    assert "T.Parallel" not in after.split("T.Pipelined")[1].split("T.gemm")[0]
    assert after.count("T.copy(") == 3
    said = [r for r in remarks if r.startswith("T.Parallel at line") and "made that tile copy" in r]
    assert len(said) == 2, remarks
    if target != "cpu":
        assert any(r.startswith("T.Pipelined") and "warp-specialized" in r and "TMA" in r for r in remarks), remarks


@pytest.mark.parametrize("load", ["scaled", "strided"])
def test_nests_that_are_not_copies_stay_loops(load):
    before, after, _ = raised(gemm_with_loop_loads(128, 128, 128, load=load), "cpu")
    body = after.split("T.Pipelined")[1].split("T.gemm")[0]
    assert body.count("T.Parallel") == 2 and body.count("T.copy(") == 1  # A's raised, B's nest kept


@pytest.mark.parametrize("load", ["plain", "scaled", "strided"])
def test_results_with_edges(rng, load):
    M, N, K = 100, 72, 80  # none a multiple of its block: the copies read past the tensors
    kernel = compile_cpu(gemm_with_loop_loads(M, N, K, load=load), out_idx=[-1])
    a, b = rand(rng, (M, K), "float16"), rand(rng, (N, K), "float16")
    c = kernel(a, b)
    bb = f64(b) * (2 if load == "scaled" else 1)
    assert_close(c, f64(a) @ bb.T, "float16")


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_90a"])
def test_switched_off_keeps_the_loops_with_a_remark(target):
    off = {"tl.raise_parallel_copies": False}
    before, after, remarks = raised(gemm_with_loop_loads(256, 256, 256), target, **off)
    assert before == after and after.count("T.copy(") == 1
    said = [r for r in remarks if "tl.raise_parallel_copies=True" in r]
    assert len(said) == 2 and all("element by element" in r for r in said), remarks


def test_a_tile_read_before_its_raised_copy_keeps_the_step_order(rng):
    """The loop reads S before the nest that fills it: raised, the copy still lands after that
    read in each step (the pipeline does not prefetch a tile the step reads first)."""
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float16"), Out: T.Tensor((16, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((16, 64), "float16")
            R = T.alloc_shared((16, 64), "float16")
            T.clear(S)
            for k in T.Pipelined(4, num_stages=2):
                for i, d in T.Parallel(16, 64):
                    R[i, d] = S[i, d]
                for i, d in T.Parallel(16, 64):
                    S[i, d] = X[k * 16 + i, d]
            T.copy(R, Out)

    art = tilelang.lower(main, target="cpu")
    assert any("made that tile copy" in r for r in art.remarks), art.remarks
    kernel = compile_cpu(main, out_idx=[-1])
    x = rand(rng, (64, 64), "float16")
    assert_close(kernel(x), f64(x)[32:48], "float16")  # R holds the tile copied in step 2
