"""stage-ws-pipelines: a T.Pipelined loop with num_stages >= 2 in a kernel with T.ws blocks,
whose producer loads one tile pair per iteration and hands it over through single barriers
(upstream's softpipe and copy_1_gemm_0 examples), gets one tile pair and one barrier pair
per stage, each wait on its own stage's phases, as upstream runs it: the producer works up
to num_stages tiles ahead. Values on the suite's target against float64; the staged source
compile-only for sm_90a; and the loops it leaves as written, each with its reason."""
import pytest

import tilelang
import tilelang.language as T

from conftest import assert_close, compile_cpu, f64, poison, rand
from test_explicit_barriers import cuda_source, handoff_gemm


def staged_remarks(kernel_remarks):
    return [r for r in kernel_remarks if "in a kernel with T.ws blocks" in r]


@pytest.mark.parametrize("num_stages", [2, 3, 4])
@pytest.mark.parametrize("loader", [0, 1])
def test_staged_handoff_matches_float64(rng, num_stages, loader):
    # K of 7 tiles: stages wrap around unevenly, and both parities of every stage occur
    M, N, K = 128, 64, 224
    a, b = rand(rng, (M, K), "float16"), rand(rng, (K, N), "float16")
    c = poison((M, N), "float16")
    kernel = compile_cpu(handoff_gemm(M, N, K, loader=loader, num_stages=num_stages, dtype="float16"))
    kernel(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")
    (remark,) = staged_remarks(kernel.get_remarks())
    assert f"(num_stages={num_stages})" in remark and f"in {num_stages} stages" in remark, remark
    assert "A_s, B_s" in remark and "loaded" in remark and "consumed" in remark, remark
    # a second call starts from fresh barriers
    a2 = rand(rng, (M, K), "float16")
    kernel(a2, b, c)
    assert_close(c, f64(a2) @ f64(b), "float16")


def test_num_stages_0_or_1_runs_as_written():
    for n in (0, 1):
        src, remarks = cuda_source(handoff_gemm(256, 256, 256, bM=128, bN=128, bK=64, num_stages=n, dtype="float16"))
        assert not staged_remarks(remarks), remarks
        assert src.count("tl::mbarrier_init(") == 2


def test_sm90_source_has_a_barrier_pair_per_stage_and_stage_parities():
    # (K of 16 tiles: the parities keep their "& 1", which fewer iterations let the simplifier drop)
    src, remarks = cuda_source(handoff_gemm(256, 256, 1024, bM=128, bN=128, bK=64, loader=1, num_stages=2,
                                            dtype="float16"))
    assert len(staged_remarks(remarks)) == 1, remarks
    for bar in ("loaded", "consumed"):
        assert f"tl::mbarrier_init((&{bar}[0]), 128);" in src and f"tl::mbarrier_init((&{bar}[1]), 128);" in src
    # the stage is k % 2 and a wait's parity the source's with k replaced by k // 2
    assert "tl::mbarrier_wait_parity((&consumed[(k & 1)]), (((k >> 1) + 1) & 1));" in src, src
    assert "tl::mbarrier_wait_parity((&loaded[(k & 1)]), ((k >> 1) & 1));" in src, src


def test_a_barrier_used_outside_the_loop_keeps_it_as_written(rng):
    """The loader waits on `consumed` once more after the loop: which stage that would name
    is not the loop's to decide, so the loop runs as written."""
    a, b = rand(rng, (128, 128), "float16"), rand(rng, (128, 64), "float16")
    c = poison((128, 64), "float16")
    kernel = compile_cpu(handoff_gemm(128, 64, 128, loader=1, num_stages=2, dtype="float16", wait_after_loop=True))
    kernel(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")
    (remark,) = staged_remarks(kernel.get_remarks())
    assert "runs as written" in remark and "a barrier it uses is also used outside it" in remark, remark


def test_a_kernel_without_ws_blocks_is_not_staged():
    # one set of threads waits on its own TMA barrier: nothing is handed between roles
    from test_explicit_barriers import one_group_gemm

    _, remarks = cuda_source(one_group_gemm(128, 128, 128, dtype="float16"))
    assert not staged_remarks(remarks), remarks


def staged_by_hand(M=128, N=64, K=160, bM=64, bN=64, bK=32, stages=2):
    """test_explicit_barriers.staged_gemm's stages written by the program itself, in a
    T.Pipelined loop: its barriers are named by the stage (a computed index), so the loop
    is the program's own pipeline and runs as written."""

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), "float16")
            B_s = T.alloc_shared((stages, bK, bN), "float16")
            acc = T.alloc_fragment((bM, bN), "float32")
            bars = T.alloc_barrier([128] * (2 * stages))
            with T.ws(0):
                T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=stages):
                s = k % stages
                with T.ws(1):
                    T.mbarrier_wait_parity(mbarrier=bars[s + stages], parity=((k // stages) % 2) ^ 1)
                    T.tma_copy(A[by * bM:(by + 1) * bM, k * bK:(k + 1) * bK], A_s[s, :, :], barrier=bars[s])
                    T.tma_copy(B[k * bK:(k + 1) * bK, bx * bN:(bx + 1) * bN], B_s[s, :, :], barrier=bars[s])
                    T.mbarrier_arrive(mbarrier=bars[s])
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=bars[s], parity=(k // stages) % 2)
                    T.gemm(A_s[s, :, :], B_s[s, :, :], acc)
                    T.mbarrier_arrive(mbarrier=bars[s + stages])
            with T.ws(0):
                T.copy(acc, C[by * bM, bx * bN])

    return main


def test_a_pipeline_staged_by_hand_runs_as_written(rng):
    a, b = rand(rng, (128, 160), "float16"), rand(rng, (160, 64), "float16")
    c = poison((128, 64), "float16")
    kernel = compile_cpu(staged_by_hand())
    kernel(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")
    (remark,) = staged_remarks(kernel.get_remarks())
    assert "runs as written" in remark and "staged by hand" in remark, remark
