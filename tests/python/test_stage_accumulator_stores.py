"""cuda-stage-accumulator-stores (tl.stage_accumulator_stores, on by default): on sm_90a a float32 GEMM
accumulator stored into a 16-bit tensor after its pipelined loop goes through a shared tile
(stmatrix, then a TMA store) where the loop's dead tiles have the bytes. Checked from the
lowering trace, the remarks and the generated code; the results (edges included) on the CPU
target, where the pass does not run, and on CUDA under TILELANG_TEST_CUDA=1 with the switch on."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, cpu_target_only, f64, rand

SM90 = "cuda -arch=sm_90a"
ON = {"tl.stage_accumulator_stores": True}
OFF = {"tl.stage_accumulator_stores": False}


def gemm(M, N, K, bm=128, bn=128, bk=64, stages=3, threads=256, out="float16", part=False, touch_b=False):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), out)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            if touch_b:  # B's tile is used after the loop: its bytes are not free there
                B_s[0, 0] = T.float16(0)
            if part:  # half of the accumulator's columns: not the whole tile
                T.copy(C_f[0:bm, 0:bn // 2], C[by * bm, bx * bn])
            else:
                T.copy(C_f, C[by * bm, bx * bn])

    return main


def persistent_gemm(M, N, K, bm=128, bn=128, bk=64, blocks=8):
    """The tile loop of a persistent kernel, stored from registers in the loop."""
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(blocks, threads=256) as block_id:
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            for by, bx in T.Persistent([T.ceildiv(M, bm), T.ceildiv(N, bn)], blocks, block_id):
                T.clear(C_f)
                for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                    T.copy(A[by * bm, k * bk], A_s)
                    T.copy(B[bx * bn, k * bk], B_s)
                    T.gemm(A_s, B_s, C_f, transpose_B=True)
                T.copy(C_f, C[by * bm, bx * bn])

    return main


def staged(func, **configs):
    art = tilelang.lower(func, target=SM90, trace=True, pass_configs=configs)
    names = [r.name for r in art.trace]
    i = names.index("cuda-stage-accumulator-stores")
    return art.trace[i - 1].ir, art.trace[i].ir, art


def test_the_store_goes_through_a_shared_tile():
    before, after, art = staged(gemm(512, 512, 512), **ON)
    assert before.count("T.copy(") == 3 and after.count("T.copy(") == 4
    assert "C_f_staged" in after
    said = [r for r in art.remarks if "through a shared tile" in r and "TMA store" in r]
    assert len(said) == 1 and said[0].startswith("T.copy at line"), art.remarks
    src = art.kernel_source
    assert "tl::stmatrix_x4(" in src and "tl::tma_store_2d(" in src
    # the tile reuses the loop's dead stage buffers: no more shared memory than without it
    plain = tilelang.lower(gemm(512, 512, 512), target=SM90)
    assert any("C_f_staged over" in r for r in art.remarks), art.remarks
    assert _smem_bytes(art.kernel_source) == _smem_bytes(plain.kernel_source)


def _smem_bytes(src):
    import re

    sizes = [int(n) for n in re.findall(r"tl_smem \+ (\d+)", src)]
    return max(sizes) if sizes else 0


def test_one_stage_is_enough_when_its_tiles_are_dead():
    _, after, _ = staged(gemm(512, 512, 512, stages=1))
    assert "C_f_staged" in after


def test_on_by_default():
    _, after, art = staged(gemm(512, 512, 512))
    assert "C_f_staged" in after and "tl::tma_store_2d(" in art.kernel_source


def test_switched_off_with_a_remark():
    before, after, art = staged(gemm(512, 512, 512), **OFF)
    assert before == after
    said = [r for r in art.remarks if "tl.stage_accumulator_stores=True" in r]
    assert len(said) == 1, art.remarks
    assert "tl::tma_store_2d(" not in art.kernel_source


@pytest.mark.parametrize("case", ["float32 output", "part of the tile", "too few stage bytes", "in a tile loop",
                                  "a stage tile used after the loop"])
def test_left_alone(case):
    func = {
        "float32 output": gemm(512, 512, 512, out="float32"),
        "part of the tile": gemm(512, 512, 512, part=True),
        # 128x256 fp16 is 64 KiB; one stage of 128x16 + 256x16 fp16 tiles is 12 KiB
        "too few stage bytes": gemm(512, 512, 512, bn=256, bk=16, stages=1),
        "in a tile loop": persistent_gemm(512, 512, 512),
        # one stage: A's and B's tiles (16 KiB each) are the 32 KiB the 128x128 tile needs,
        # but B's is used after the loop
        "a stage tile used after the loop": gemm(512, 512, 512, stages=1, touch_b=True),
    }[case]
    before, after, art = staged(func, **ON)
    assert before == after
    assert not any("shared tile" in r and r.startswith("T.copy at line") for r in art.remarks), art.remarks


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", pytest.param("cpu", marks=cpu_target_only)])
def test_not_on_sm80_or_the_cpu(target):
    art = tilelang.lower(gemm(256, 256, 256), target=target, trace=True, pass_configs=ON)
    assert not any("shared tile (stmatrix" in r for r in art.remarks), (target, art.remarks)


@pytest.mark.parametrize("shape", [(256, 256, 128), (200, 136, 96)])
def test_results_with_edges(rng, shape):
    M, N, K = shape  # the second: no dimension a multiple of its block
    kernel = compile_cpu(gemm(M, N, K, bm=64, bn=64, bk=32, stages=2, threads=128), out_idx=[-1], pass_configs=ON)
    a, b = rand(rng, (M, K), "float16"), rand(rng, (N, K), "float16")
    assert_close(kernel(a, b), f64(a) @ f64(b).T, "float16")


def dynamic_gemm(bm=64, bn=64, bk=32):
    M, N, K = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=2):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_dynamic_shapes_are_staged_without_a_tma_store():
    # (a tensor map needs 16-byte row strides, which a dynamic N does not promise)
    art = tilelang.lower(dynamic_gemm(), target=SM90)
    assert any(r.startswith("T.copy at line") and "else coalesced stores" in r for r in art.remarks), art.remarks
    assert any(r.startswith("T.copy C_f_staged -> C: ") and "accesses" in r for r in art.remarks), art.remarks
    assert "tl::stmatrix_x4(" in art.kernel_source and "tl::tma_store_2d(" not in art.kernel_source


@pytest.mark.parametrize("shape", [(128, 64, 64), (72, 100, 40)])
def test_dynamic_shape_results(rng, shape):
    M, N, K = shape
    kernel = compile_cpu(dynamic_gemm(), out_idx=[-1])
    a, b = rand(rng, (M, K), "float16"), rand(rng, (N, K), "float16")
    assert_close(kernel(a, b), f64(a) @ f64(b).T, "float16")


def two_accumulators(M, N, K, bm=128, bn=128, bk=64):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((N, K), "float16"), C: T.Tensor((M, N), "float16"),
             D: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bn, bk), "float16")
            C_f = T.alloc_fragment((bm, bn), "float32")
            D_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            T.clear(D_f)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=3):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[bx * bn, k * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
                T.gemm(B_s, A_s, D_f, transpose_B=True)  # (D holds the transposed product's tiles)
            T.copy(C_f, C[by * bm, bx * bn])
            T.copy(D_f, D[by * bm, bx * bn])

    return main


def test_two_stores_share_the_dead_bytes_one_after_the_other():
    art = tilelang.lower(two_accumulators(256, 256, 256), target=SM90)
    assert sum(r.startswith("T.copy at line") and "through a shared tile" in r for r in art.remarks) == 2
    src = art.kernel_source
    # D's tile takes bytes C's TMA store reads: its stmatrix waits for that store (thread 0 waits
    # for the bulk reads, then the consumers meet at a barrier)
    c_wait = src.index("tl::tma_store_wait<0, true>();")
    d_first = src.index("tl::stmatrix_x4((&D_f_staged")
    assert c_wait < src.index("tl::named_barrier_sync(", c_wait) < d_first, src


def test_two_stores_results(rng):
    kernel = compile_cpu(two_accumulators(256, 128, 128), out_idx=[-2, -1])
    a, b = rand(rng, (256, 128), "float16"), rand(rng, (128, 128), "float16")
    c, d = kernel(a, b)
    prod = f64(a) @ f64(b).T
    assert_close(c, prod, "float16")
    # block (bx, by) of D is rows by*128.., cols bx*128.. of B A^T's tile: (B_s A_s^T)[j, i]
    want = np.zeros((256, 128))
    for by in range(2):
        want[by * 128:(by + 1) * 128, :] = (f64(b) @ f64(a)[by * 128:(by + 1) * 128].T)
    assert_close(d, want, "bfloat16")
