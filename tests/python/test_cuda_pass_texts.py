"""Each CUDA pass that no other test names, read from its text: the IR just before and just
after it in a lowering trace (tilelang.lower(..., trace=True); no CUDA toolkit needed). What
the pass is for must show between the two."""
import pytest

import tilelang
import tilelang.language as T

from test_explicit_barriers import staged_gemm


def around(func, pass_name, arch="sm_90a", **configs):
    """(IR before, IR after) the first run of `pass_name` when `func` is lowered for `arch`."""
    art = tilelang.lower(func, target=f"cuda -arch={arch}", trace=True, pass_configs=configs)
    names = [r.name for r in art.trace]
    assert pass_name in names, names
    i = names.index(pass_name)
    return art.trace[i - 1].ir, art.trace[i].ir


def gemm():
    """A pipelined GEMM whose A tile is allocated inside the loop body, under
    T.annotate_min_blocks_per_sm."""

    @T.prim_func
    def main(A: T.Tensor((256, 256), "float16"), B: T.Tensor((256, 256), "float16"),
             C: T.Tensor((256, 256), "float16")):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            T.annotate_min_blocks_per_sm(2)
            B_s = T.alloc_shared((32, 128), "float16")
            C_l = T.alloc_fragment((128, 128), "float32")
            T.clear(C_l)
            for k in T.Pipelined(8, num_stages=2):
                A_s = T.alloc_shared((128, 32), "float16")
                T.copy(A[by * 128, k * 32], A_s)
                T.copy(B[k * 32, bx * 128], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * 128, bx * 128])

    return main


def copies():
    @T.prim_func
    def main(X: T.Tensor((128, 64), "float16"), Y: T.Tensor((128, 64), "float16"), Z: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            T.copy(X, S)
            T.copy(S, Y)
            for i in T.Parallel(128):
                Z[i] = 1.0

    return main


def test_hoist_pipelined_allocations_moves_a_tile_out_of_the_loop():
    before, after = around(gemm(), "hoist-pipelined-allocations")
    loop = before.index("T.Pipelined(")
    assert before.index("A_s = T.alloc_shared") > loop, before
    assert after.index("A_s = T.alloc_shared") < after.index("T.Pipelined("), after


def test_lower_fragments_makes_the_gemm_an_instruction_call():
    before, after = around(gemm(), "cuda-lower-fragments", arch="sm_80")
    assert "T.gemm(A_s" in before and "T.gemm(" not in after, after
    assert "T.gemm_ss(" in after, after


def test_lower_copies_leaves_no_tile_copy():
    before, after = around(copies(), "cuda-lower-copies", arch="sm_80")
    assert before.count("T.copy(") == 2 and "T.copy(" not in after, after
    assert "tl.thread_partitioned" in after, after


def test_partition_parallel_spreads_a_nest_over_the_threads():
    before, after = around(copies(), "cuda-partition-parallel", arch="sm_80")
    assert "for i in T.Parallel(128):" in before, before
    assert "T.Parallel(" not in after and "Z[" in after and "tx" in after.split("Z[")[1].split("]")[0], after


def test_launch_bounds_turns_the_annotation_into_a_marker():
    before, after = around(gemm(), "cuda-launch-bounds", arch="sm_80")
    assert "tl.min_blocks_per_sm" not in before.replace("T.annotate_min_blocks_per_sm", ""), before
    assert 'T.attr("tl.min_blocks_per_sm", 2)' in after, after


@pytest.mark.parametrize("pass_name, gone, made", [
    ("cuda-explicit-warp-specialize", "T.attr(\"tl.ws\"", "T.attr(\"tl.warp_specialized\""),
    ("cuda-lower-explicit-tma", "T.attr(\"tl.tma_copy\"", "T.tma_load("),
])
def test_programmed_barrier_kernels(pass_name, gone, made):
    before, after = around(staged_gemm(256, 256, 256), pass_name)
    assert gone in before and gone not in after, after
    assert made not in before and made in after, after
