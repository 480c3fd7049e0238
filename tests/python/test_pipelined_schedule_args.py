"""T.Pipelined's hand-written schedule arguments (upstream's order=, stage=, group=, sync=):
the compiler keeps its own schedule, which computes the same values, takes the stage count
from stage= (its largest entry + 1), and says so in the remarks; malformed lists are errors
naming the argument."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison
from tilelang.errors import TileLangCompileError


def gemm(order, stage, num_stages=0, M=128, N=128, K=128, bm=64, bn=64, bk=32):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // bn, M // bm, threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=num_stages, order=order, stage=stage):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bm, bx * bn])

    return main


@pytest.mark.parametrize("order, stage", [([0, 1, 2], [0, 0, 1]), ([1, 2, 0], [0, 0, 2])])
def test_a_hand_written_schedule_gives_the_same_values(order, stage):
    rng = np.random.default_rng(len(stage) + stage[-1])
    a = rng.standard_normal((128, 128)).astype(np.float16)
    b = rng.standard_normal((128, 128)).astype(np.float16)
    c = poison((128, 128))
    kernel = compile_cpu(gemm(order, stage))
    kernel(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype="float16")
    notes = [r for r in kernel.get_remarks() if "T.Pipelined(order=..., stage=...)" in r]
    assert notes and f"{stage[-1] + 1} stage(s) in the compiler's own schedule" in notes[0], kernel.get_remarks()


@pytest.mark.parametrize("stage, stages", [([0, 0, 1], 2), ([0, 0, 2], 3)])
def test_stage_sets_the_number_of_stages(stage, stages):
    """sm_80 (lowered without a GPU): the cp.async pipeline gives the tiles as many stages
    as stage= asks for, where num_stages (0) alone would give none."""
    from test_cuda_pass_texts import around

    _, after = around(gemm([0, 1, 2], stage), "cuda-pipeline", arch="sm_80")
    assert f'A_s = T.alloc_shared(({stages}, 64, 32), "float16")' in after, after
    assert f"A_s[k % {stages}, 0, 0]" in after, after


def test_without_a_schedule_nothing_is_said():
    kernel = compile_cpu(gemm(None, None, num_stages=2))
    assert not any("T.Pipelined(" in r and "own schedule" in r for r in kernel.get_remarks())


@pytest.mark.parametrize("order, stage, message", [
    ([0, 1, 2], "001", "stage must be a list of ints"),
    ([0, 1], [0, 0, 1], "order and stage must have one entry per statement each, got 2 and 3"),
    ([0, 1.5, 2], [0, 0, 1], "order must be a list of ints"),
])
def test_malformed_schedules_are_errors_naming_the_argument(order, stage, message):
    with pytest.raises(TileLangCompileError, match=message):
        gemm(order, stage)
