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


def test_lower_fragments_writes_each_register_fragments_layout():
    """The layout chosen for a fragment is written before its declaration, in the IR and as a
    comment in the generated source (for the reader: nothing re-derives it)."""
    before, after = around(gemm(), "cuda-lower-fragments", arch="sm_80")
    assert "fragment_layout" not in before
    note = 'T.attr("tl.fragment_layout:C_l = mma_acc(128x128, warps 2x2), 128 per thread")'
    assert note in after, after
    src = tilelang.lower(gemm(), target="cuda -arch=sm_80").kernel_source
    assert "float C_l[128];  // mma_acc(128x128, warps 2x2), 128 per thread\n" in src, src


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


def test_launch_bounds_decides_the_block_order():
    """The rasterization panel is decided here and written as a marker for the code
    generator: 8 columns for a GEMM grid wider than 8, nothing for a narrow one."""

    def wide_gemm(blocks_x):
        @T.prim_func
        def main(A: T.Tensor((128, 32), "float16"), B: T.Tensor((32, blocks_x * 64), "float16"),
                 C: T.Tensor((128, blocks_x * 64), "float32")):
            with T.Kernel(blocks_x, 2, threads=128) as (bx, by):
                A_s = T.alloc_shared((64, 32), "float16")
                B_s = T.alloc_shared((32, 64), "float16")
                acc = T.alloc_fragment((64, 64), "float32")
                T.clear(acc)
                T.copy(A[by * 64, 0], A_s)
                T.copy(B[0, bx * 64], B_s)
                T.gemm(A_s, B_s, acc)
                T.copy(acc, C[by * 64, bx * 64])

        return main

    before, after = around(wide_gemm(16), "cuda-launch-bounds", arch="sm_80")
    assert "tl.raster_panel" not in before and 'T.attr("tl.raster_panel", 8)' in after, after
    _, narrow = around(wide_gemm(4), "cuda-launch-bounds", arch="sm_80")
    assert "tl.raster_panel" not in narrow, narrow
    _, asked = around(wide_gemm(16), "cuda-launch-bounds", arch="sm_80", **{"tl.raster_panel": "4"})
    assert 'T.attr("tl.raster_panel", 4)' in asked, asked


def test_launch_bounds_keeps_the_plain_order_where_the_tensors_fit_in_l2():
    """On Hopper a GEMM whose tensors fit in L2 together (50 MB) keeps the plain block
    order: each tile comes from memory once in any order, and the panels measured slower
    there (upstream's FP8 GEMM, 4096^3 float8: 48 MB). A larger one, a dynamic shape, or an
    arch whose L2 is not known gets the panels."""

    def gemm(M, N, K, dtype="float8_e4m3", out="float8_e4m3"):
        @T.prim_func
        def main(A: T.Tensor((M, K), dtype), B: T.Tensor((N, K), dtype), C: T.Tensor((M, N), out)):
            with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), threads=128) as (bx, by):
                A_s = T.alloc_shared((128, 64), dtype)
                B_s = T.alloc_shared((128, 64), dtype)
                acc = T.alloc_fragment((128, 128), "float32")
                T.clear(acc)
                for k in T.Pipelined(T.ceildiv(K, 64), num_stages=3):
                    T.copy(A[by * 128, k * 64], A_s)
                    T.copy(B[bx * 128, k * 64], B_s)
                    T.gemm(A_s, B_s, acc, transpose_B=True)
                T.copy(acc, C[by * 128, bx * 128])

        return main

    _, fits = around(gemm(4096, 4096, 4096), "cuda-launch-bounds")  # 16 + 16 + 16 MB
    assert "tl.raster_panel" not in fits, fits
    remarks = tilelang.compile(gemm(4096, 4096, 4096), target="cuda -arch=sm_90a").get_remarks()
    assert "block order: plain, the kernel's tensors (48 MB) fit in the L2 (50 MB) together; tl.raster_panel " \
           "or T.use_swizzle asks for panels" in remarks, remarks
    _, larger = around(gemm(4096, 4096, 4096, out="float16"), "cuda-launch-bounds")  # 64 MB
    assert 'T.attr("tl.raster_panel", 8)' in larger, larger
    _, dynamic = around(gemm(T.dynamic("m"), 4096, 4096), "cuda-launch-bounds")
    assert 'T.attr("tl.raster_panel", 8)' in dynamic, dynamic
    _, ampere = around(gemm(4096, 4096, 4096, dtype="float16", out="float16"), "cuda-launch-bounds", arch="sm_80")
    assert 'T.attr("tl.raster_panel", 8)' in ampere, ampere
    _, asked = around(gemm(4096, 4096, 4096), "cuda-launch-bounds", **{"tl.raster_panel": "8"})
    assert 'T.attr("tl.raster_panel", 8)' in asked, asked

    # a 3-D grid counts per plane: split-K over 4 slices of K, 128 MB in all, 32 MB a plane
    def split_k(M, N, K, slices, bk=32):
        @T.prim_func
        def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
            with T.Kernel(T.ceildiv(N, 128), T.ceildiv(M, 128), slices, threads=128) as (bx, by, bz):
                A_s = T.alloc_shared((128, bk), "float16")
                B_s = T.alloc_shared((bk, 128), "float16")
                acc = T.alloc_fragment((128, 128), "float32")
                T.clear(acc)
                for k in T.Pipelined(K // slices // bk, num_stages=0):
                    T.copy(A[by * 128, bz * (K // slices) + k * bk], A_s)
                    T.copy(B[bz * (K // slices) + k * bk, bx * 128], B_s)
                    T.gemm(A_s, B_s, acc)
                for i, j in T.Parallel(128, 128):
                    T.atomic_add(C[by * 128 + i, bx * 128 + j], acc[i, j])

        return main

    _, planes = around(split_k(4096, 4096, 4096, 4), "cuda-launch-bounds")
    assert "tl.raster_panel" not in planes, planes
    remarks = tilelang.compile(split_k(4096, 4096, 4096, 4), target="cuda -arch=sm_90a").get_remarks()
    assert any("(128 MB, 32 MB a grid plane of 4) fit in the L2 (50 MB)" in r for r in remarks), remarks
    _, one_plane = around(split_k(4096, 4096, 4096, 1), "cuda-launch-bounds")
    assert 'T.attr("tl.raster_panel", 8)' in one_plane, one_plane
    # ... and a plane that does not fit keeps the panels: 2 slices of 8192^3 (128 + 128 + 256 MB,
    # 256 MB a plane)
    _, large_planes = around(split_k(8192, 8192, 8192, 2), "cuda-launch-bounds")
    assert 'T.attr("tl.raster_panel", 8)' in large_planes, large_planes


def test_plan_shared_memory_writes_each_tiles_layout():
    """Each shared tile's offset and layout go into the IR for the code generator: the GEMM's
    operands on sm_80 in the XOR-rows swizzle (layout 1), 1024-byte aligned."""
    before, after = around(gemm(), "cuda-plan-shared-memory", arch="sm_80")
    assert "tl.shared_offset" not in before, before
    import re

    planned = re.findall(r'T\.attr\("tl\.shared_offset", (\d+), (\d+)\)', after)
    assert len(planned) == 2 and all(layout == "1" and int(off) % 1024 == 0 for off, layout in planned), after


def test_pipeline_stages_the_loop_with_cp_async():
    """sm_80: the T.Pipelined loop becomes a serial loop over stages of its tiles (a leading
    stage dimension), filled with cp.async a step ahead and waited before use."""
    before, after = around(gemm(), "cuda-pipeline", arch="sm_80")
    assert "T.Pipelined(8, num_stages=2)" in before and "T.Pipelined(" not in after, after
    assert 'A_s = T.alloc_shared((2, 128, 32), "float16")' in after, after
    assert "T.cp_async(" in after and "T.cp_async_commit()" in after and "T.cp_async_wait(0)" in after, after
    assert "A_s[k % 2, 0, 0]" in after, after  # the GEMM reads the stage of its step


def test_vectorize_loops_makes_one_vector_copy_per_group():
    @T.prim_func
    def main(X: T.Tensor((128, 64), "float16"), Y: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((128, 64), "float16")
            T.copy(X, S)
            for i, j in T.Parallel(128, 64):
                Y[i, j] = S[i, j]

    before, after = around(main, "cuda-vectorize-loops", arch="sm_80")
    assert "in T.vectorized(8):" in before, before
    assert "T.vectorized(" not in after, after
    assert after.count("T.vec_copy(") == before.count("T.vec_copy(") + 1, after


def test_vectorize_atomics_adds_four_registers_at_a_time():
    @T.prim_func
    def main(X: T.Tensor((128, 64), "float32"), Y: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128):
            F = T.alloc_fragment((128, 64), "float32")
            T.copy(X, F)
            T.atomic_add(Y, F)

    before, after = around(main, "cuda-vectorize-atomics")
    assert "T.atomic_add(" in before and "T.atomic_add_vec(" not in before, before
    assert "T.atomic_add(" not in after, after
    assert "T.atomic_add_vec(" in after and "F[4 * l + 3]" in after, after


def test_pair_conversions_convert_two_registers_at_once():
    @T.prim_func
    def main(X: T.Tensor((128, 64), "float32"), Y: T.Tensor((128, 64), "float16")):
        with T.Kernel(1, threads=128):
            F = T.alloc_fragment((128, 64), "float32")
            G = T.alloc_fragment((128, 64), "float16")
            T.copy(X, F)
            for i, j in T.Parallel(128, 64):
                G[i, j] = F[i, j] * 2.0
            T.copy(G, Y)

    before, after = around(main, "cuda-pair-conversions")
    assert 'T.Cast("float16", F[l] * 2.0)' in before and "T.convert_pair(" not in before, before
    assert "T.convert_pair(T.address_of(G[2 * l]), F[2 * l] * 2.0, F[2 * l + 1] * 2.0)" in after, after


def test_forward_shared_copies_drops_a_copy_between_shared_tiles():
    """Fragments no GEMM lays out are kept in shared memory; their T.copy chain from the
    staged tile (bfloat16 -> bfloat16 -> float32) goes, and the loop reads the staged tile,
    converting each element it loads (upstream's mHC pre)."""
    from test_forward_shared_copies import row_sums

    before, after = around(row_sums(), "cuda-forward-shared-copies")
    assert "T.copy(xs[0:64, 0:128], x16[0:64, 0:128])" in before, before
    assert "T.copy(x16[0:64, 0:128], x32[0:64, 0:128])" in before, before
    assert "acc[l_1] + x32[" in before, before
    assert "x16" not in after and "x32" not in after, after
    assert 'acc[l_1] + T.Cast("float32", xs[' in after, after


def test_unroll_fragment_offsets_gives_each_step_its_constant_offset():
    """`for s in range(2): ... acc[i + s * 16, j]` becomes two copies of its body, s replaced
    by 0 and by 1 (each copy's loops with fresh variables), before fragments are laid out."""
    from test_unroll_fragment_offsets import split_store

    before, after = around(split_store(), "cuda-unroll-fragment-offsets")
    assert "for s in T.serial(2):" in before and "stage[i, j] = acc[i + s * 16, j]" in before, before
    assert "for s in T.serial(2):" not in after, after
    assert "stage[i, j] = acc[i + 0 * 16, j]" in after, after
    assert "stage[i_1, j_1] = acc[i_1 + 1 * 16, j_1]" in after, after
    assert "Out[1 * 16:1 * 16 + 16, 0:64]" in after, after
