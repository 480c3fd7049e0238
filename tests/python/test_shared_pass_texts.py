"""The passes of the CUDA pipeline that no other text test names, most of them shared with the
CPU pipeline (lower-buffer-views through legalize-index-width), read from their text: the IR
just before and just after each in a lowering trace (tilelang.lower(..., trace=True); no CUDA
toolkit, GPU or torch needed). What the pass is for must show between the two; a pass that
only reports or checks is read from the remark it adds or the error it raises."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from test_compat_reducer import _v1 as reducer_kernel
from test_cuda_pass_texts import around
from test_explicit_barriers import handoff_gemm
from test_global_layouts import unpermute
from test_role_branches import role_branch_gemm


def runs(func, pass_name, target="cuda -arch=sm_80", **configs):
    """(IR before, IR after) each run of `pass_name` when `func` is lowered for `target`
    ("cpu" or "cuda -arch=..."), and the lowering's remarks."""
    art = tilelang.lower(func, target=target, trace=True, pass_configs=configs)
    names = [r.name for r in art.trace]
    assert pass_name in names, names
    pairs = [(art.trace[i - 1].ir, art.trace[i].ir) for i, n in enumerate(names) if n == pass_name]
    return pairs, art.remarks


def edge_kernel():
    """A 100-element tensor in blocks of 32 (the last block runs past the end), a shared fill
    and an atomic add of the tile: tile ops left for the target-neutral lowering."""

    @T.prim_func
    def main(X: T.Tensor((100,), "float32"), Y: T.Tensor((100,), "float32"), Z: T.Tensor((64,), "float32")):
        with T.Kernel(T.ceildiv(100, 32), threads=32) as bx:
            S = T.alloc_shared((64,), "float32")
            T.fill(S, 2.0)
            for i in T.Parallel(32):
                Y[bx * 32 + i] = X[bx * 32 + i] + S[i]
            T.atomic_add(Z, S)

    return main


def test_lower_buffer_views_addresses_the_owner_of_a_reshape():
    @T.prim_func
    def main(B: T.Tensor((4, 6), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4, 6), "float32")
            w = T.reshape(s, [24])
            for i in T.Parallel(24):
                w[i] = T.cast(i, "float32")
            T.copy(s, B)

    before, after = around(main, "lower-buffer-views", arch="sm_80")
    assert 'T.attr("tl.buffer_view", T.address_of(w[0]), T.address_of(s[0, 0]))' in before, before
    assert "w[i] = " in before, before
    assert "tl.buffer_view" not in after and "w[" not in after, after
    assert "s[i // 6, i % 6] = " in after, after


def test_privatize_reducers_accumulates_in_registers_instead_of_atomics():
    """acc[i] += A_frag[i, j] over T.Parallel(64, 32): a 64 x 32 register fragment per
    element of the nest, combined once by a T.reduce_sum at T.finalize_reducer."""
    before, after = around(reducer_kernel(64, 32, "float32", "sum"), "privatize-reducers", arch="sm_80")
    assert "T.atomic_add(acc[i:i + 1], A_frag[i, j])" in before, before
    assert 'T.attr("tl.reducer"' in before and 'T.attr("tl.reducer_finalize"' in before, before
    assert "T.atomic_add(" not in after and "tl.reducer" not in after, after
    assert 'acc_partial = T.alloc_fragment((64, 32), "float32")' in after, after
    assert "acc_partial[i, j] = acc_partial[i, j] + A_frag[i, j]" in after, after
    assert "T.reduce_sum(acc_partial[0:64, 0:32], acc[0:64], dim=1, clear=False)" in after, after


def test_normalize_role_branches_turns_a_thread_branch_into_ws_blocks():
    before, after = around(role_branch_gemm(256, 256, 512), "normalize-role-branches")
    assert "if tid >= 128:" in before and "else:" in before and "tl.ws" not in before, before
    assert "else:" not in after, after
    producer, consumer = after.split("if tid >= 128:")[1].split("if T.thread_binding(0) < 128:")
    assert producer.lstrip().startswith('T.attr("tl.ws", 1)') and "T.mbarrier_arrive" in producer, after
    assert consumer.lstrip().startswith('T.attr("tl.ws", 0)') and "T.gemm(" in consumer, after


def test_stage_ws_pipelines_gives_the_handed_over_tiles_and_barriers_a_stage_each():
    """One A/B tile pair handed between the T.ws blocks by two barriers, in a loop with
    num_stages=2: two of each, named by k % 2, each wait's parity on the phases k // 2."""
    before, after = around(handoff_gemm(128, 64, 128, loader=1, num_stages=2, dtype="float16"), "stage-ws-pipelines")
    assert 'A_s = T.alloc_shared((64, 32), "float16")' in before, before
    assert "T.mbarrier_wait_parity(T.address_of(consumed[0]), (k + 1) % 2)" in before, before
    assert 'A_s = T.alloc_shared((2, 64, 32), "float16")' in after, after
    assert 'loaded = T.alloc_shared((2,), "uint64")' in after, after
    assert 'T.attr("tl.barrier_init", loaded[0], 128, 128)' in after, after
    assert "T.mbarrier_wait_parity(T.address_of(consumed[k % 2]), (k // 2 + 1) % 2)" in after, after
    assert 'T.attr("tl.tma_copy", T.address_of(loaded[k % 2]), 0)' in after, after  # (0: one leader)
    assert "A_s[k % 2:k % 2 + 1, 0:64, 0:32]" in after, after
    assert "T.mbarrier_wait_parity(T.address_of(loaded[k % 2]), k // 2 % 2)" in after, after


def test_expand_global_layout_tile_ops_makes_element_loops_of_a_laid_out_tensors_copies():
    """dQ has a storage order (T.annotate_layout on a global tensor): its T.copy becomes an
    element loop nest, still on logical indices, and the annotation is fixed with its extents."""
    before, after = around(unpermute(), "expand-global-layout-tile-ops", arch="sm_80")
    assert "T.copy(dQ[bx * 32:bx * 32 + 32, 0:64], out[" in before, before
    assert 'T.attr("tl.global_layout", T.address_of(dQ[0, 0])' in before, before
    assert "T.copy(" not in after and "for i1 in T.Parallel(64):" in after, after
    assert 'T.Cast("float16", dQ[bx * 32 + i0, i1])' in after, after
    assert 'T.attr("tl.global_layout.checked", T.address_of(dQ[0, 0])' in after, after
    assert after.split("tl.global_layout.checked")[1].split("\n")[0].endswith(", 8, 8, 2, 32)"), after


def test_apply_global_layouts_addresses_the_storage_position():
    """After the guards: each access dQ[i, j] becomes dQ[0, p], p the row-major position of
    the layout's output in its (8, 8, 2, 32) array."""
    before, after = around(unpermute(), "apply-global-layouts", arch="sm_80")
    assert "dQ[bx * 32 + i0, i1]" in before and "tl.global_layout.checked" in before, before
    assert "tl.global_layout" not in after and "dQ[bx * 32 + i0, i1]" not in after, after
    assert "dQ[0, (((bx * 32 + i0) // 8 * 8 + i1 // 8) * 2 + i1 % 2) * 32 + " in after, after


def test_report_layout_annotations_drops_a_tiles_annotation_and_says_so():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), B: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((64, 64), "float16")
            T.annotate_layout({s: T.Layout((64, 64), lambda i, j: [j, i])})
            T.disable_warp_group_reg_alloc()
            T.copy(A, s)
            T.copy(s, B)

    [(before, after)], remarks = runs(main, "report-layout-annotations")
    assert 'T.attr("layout_annotation"' in before and 'T.attr("tl.remark:' in before, before
    assert "layout_annotation" not in after and "tl.remark:" not in after, after
    assert any(r.startswith("T.annotate_layout(s, line ") and "not applied" in r for r in remarks), remarks
    assert any(r.startswith("T.disable_warp_group_reg_alloc(): accepted") for r in remarks), remarks


def test_report_packed_tensors_names_each_4bit_tensor_and_refuses_odd_rows():
    @T.prim_func
    def packed(A: T.Tensor((4, 16), "int4"), B: T.Tensor((4, 16), "int8")):
        with T.Kernel(1, threads=64):
            for i, j in T.Parallel(4, 16):
                B[i, j] = T.cast(A[i, j], "int8")

    [(before, after)], remarks = runs(packed, "report-packed-tensors")
    assert before == after, after  # it only checks and reports
    assert any(r.startswith("A (int4): two values per byte along the last dimension") for r in remarks), remarks
    assert not any(r.startswith("B (") for r in remarks), remarks

    @T.prim_func
    def odd(A: T.Tensor((4, 7), "uint4"), B: T.Tensor((4, 7), "int8")):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(4, 7):
                B[i, j] = T.cast(A[i, j], "int8")

    with pytest.raises(tilelang.TileLangCompileError, match="last dimension of a uint4 tensor must be even"):
        tilelang.lower(odd, target="cuda -arch=sm_80", trace=True)


def test_simplify_drops_the_guards_that_always_hold():
    """Run 1: the element loops of a laid-out tensor's copy (whole-tile guards on logical
    indices) keep no guard. Run 2, after lower-tile-ops and cuda-partition-parallel: the
    fill's and the atomic's guards go, and the one-step loop; the guard of the user's access
    that may pass the end of X and Y stays."""
    pairs, _ = runs(unpermute(), "simplify")
    before, after = pairs[0]
    assert "if bx * 32 + i0 >= 0 and bx * 32 + i0 < 64 and (i1 >= 0 and i1 < 64):" in before, before
    assert "T.if_then_else(" not in after and "if " not in after, after
    assert 'out[bx * 32 + i0, i1] = T.Cast("float16", dQ[bx * 32 + i0, i1])' in after, after
    pairs, _ = runs(edge_kernel(), "simplify")
    assert len(pairs) == 2, len(pairs)
    before, after = pairs[1]
    assert "if it * 32 + tx >= 0 and it * 32 + tx < 64:" in before and "T.unroll(1," in before, before
    assert "it * 32 + tx >= 0" not in after and "T.unroll(1," not in after, after
    assert "S[it * 32 + tx] = 2.0" in after and "if bx * 32 + tx < 100:" in after, after


def test_check_tile_bounds_refuses_a_write_past_a_shared_tile():
    @T.prim_func
    def oob(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            s = T.alloc_shared((4,), "float32")
            for i in T.Parallel(8):
                s[i] = A[i]

    with pytest.raises(tilelang.TileLangCompileError,
                       match=r"out-of-bounds access to s: index i of dimension 0 takes values in \[0, 7\], "
                             r"but s has 4 elements there"):
        tilelang.lower(oob, target="cuda -arch=sm_80", trace=True)


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80"])
def test_check_tile_bounds_refuses_a_cp_async_past_its_tile(target):
    """T.ptx_cp_async's count is in elements of the destination: four floats from t[i] for
    every i of a 64-float tile write three past its end (on the CPU target that corrupted the
    next array on the stack, silently)."""

    @T.prim_func
    def oob(B: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):
            t = T.alloc_shared((64,), "float32")
            for i in T.Parallel(64):
                T.ptx_cp_async(T.access_ptr(t[i], "w", 1), T.access_ptr(B[i], "r", 1), 4)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.Parallel(64):
                C[i] = t[i]

    with pytest.raises(tilelang.TileLangCompileError,
                       match=r"T.ptx_cp_async writes 16 bytes \(4 float32 elements\) from t\[i\], which takes values "
                             r"up to 63, past the end of t \(64 elements\)"):
        tilelang.lower(oob, target=target)


def test_check_tile_bounds_takes_a_cp_async_that_ends_at_its_tiles_end():
    @T.prim_func
    def fits(B: T.Tensor((64,), "float32"), C: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=16):
            t = T.alloc_shared((64,), "float32")
            for i in T.Parallel(16):
                T.ptx_cp_async(T.access_ptr(t[i * 4], "w", 4), T.access_ptr(B[i * 4], "r", 4), 4)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            for i in T.Parallel(64):
                C[i] = t[i]

    b = np.arange(64, dtype=np.float32)
    c = np.full(64, np.nan, np.float32)
    tilelang.compile(fits, target="cpu")(b, c)
    np.testing.assert_array_equal(c, b)


def test_check_tile_bounds_grows_a_fragment_indexed_past_its_end():
    @T.prim_func
    def grow(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=32):
            f = T.alloc_fragment((4,), "float32")
            for i in T.Parallel(8):
                f[i] = 1.0
            T.copy(f, A)

    [(before, after)], remarks = runs(grow, "check-tile-bounds")
    assert 'f = T.alloc_fragment((4,), "float32")' in before, before
    assert 'f = T.alloc_fragment((8,), "float32")' in after, after
    assert any(r.startswith("warning: fragment f is declared [4] but line") for r in remarks), remarks


def test_guard_global_access_guards_the_users_edge_accesses():
    before, after = around(edge_kernel(), "guard-global-access", arch="sm_80")
    assert "Y[bx * 32 + i] = X[bx * 32 + i] + S[i]" in before and "< 100" not in before, before
    assert "if bx * 32 + i < 100:" in after, after  # the write is skipped past the end
    assert "T.if_then_else(bx * 32 + i < 100, X[bx * 32 + i], 0.0) + S[i]" in after, after  # the read gives 0
    assert "S[i]" in after and "i < 64" not in after, after  # a tile access is not its business


def test_bind_threads_binds_tx_and_rewrites_the_thread_index():
    @T.prim_func
    def main(A: T.Tensor((32, 4), "float32")):
        with T.Kernel(1, threads=(32, 4)):
            x = T.get_thread_binding(0)
            y = T.get_thread_binding(1)
            A[x, y] = 1.0

    before, after = around(main, "cuda-bind-threads", arch="sm_80")
    assert "x: T.int32 = T.thread_binding(0)" in before and "tx" not in before, before
    assert "for tx in T.thread_binding(128):" in after and "T.thread_binding(0)" not in after, after
    assert "x: T.int32 = tx % 32" in after and "y: T.int32 = tx // 32" in after, after
    lines = after.splitlines()
    assert lines.index("    for tx in T.thread_binding(128):") < lines.index("      x: T.int32 = tx % 32"), after


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cpu"])
def test_lower_tile_ops_makes_guarded_loop_nests(target):
    [(before, after)], _ = runs(edge_kernel(), "lower-tile-ops", target=target)
    assert "T.fill(S[0:64], 2.0)" in before and "T.atomic_add(Z[0:64], S[0:64])" in before, before
    assert "T.fill(" not in after and "T.atomic_add(Z[0:64]" not in after, after
    assert "if i0 >= 0 and i0 < 64:\n" in after and "S[i0] = 2.0" in after, after
    assert "T.atomic_add(T.address_of(Z[i0_1]), S[i0_1])" in after, after


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cpu"])
def test_contract_half_fma_fuses_a_16bit_multiply_add(target):
    @T.prim_func
    def fma(A: T.Tensor((128,), "float16"), B: T.Tensor((128,), "float16"), C: T.Tensor((128,), "float16"),
            D: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(128):
                C[i] = A[i] * B[i] + C[i]
                D[i] = D[i] * D[i] + D[i]  # float: not this pass's

    [(before, after)], _ = runs(fma, "contract-half-fma", target=target)
    assert "T.hfma(" not in before, before
    assert before.count("] * ") == 2 and after.count("] * ") == 1, after
    assert after.count("T.hfma(") == 1, after
    [(_, kept)], _ = runs(fma, "contract-half-fma", target=target, **{"tl.contract_half_fma": False})
    assert "T.hfma(" not in kept, kept


@pytest.mark.parametrize("target", ["cuda -arch=sm_80", "cpu"])
def test_legalize_index_width_widens_offsets_into_a_dynamic_tensor(target):
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((m, 1024), "int8"), B: T.Tensor((m, 1024), "int8"), S: T.Tensor((64,), "int8")):
        with T.Kernel(T.ceildiv(m, 64), threads=128) as by:
            for i, k in T.Parallel(64, 1024):
                B[by * 64 + i, k] = A[by * 64 + i, k]
            for i in T.Parallel(64):
                S[i] = T.int8(0)

    [(before, after)], remarks = runs(main, "legalize-index-width", target=target)
    assert "int64" not in before, before
    for name in ("A", "B"):  # every index into them: int64, not just the ones that may wrap
        accesses = after.split(f"{name}[")[1:]
        assert accesses and all(a.startswith('T.Cast("int64", ') for a in accesses), after
    assert 'T.Kernel((T.Cast("int64", m) + T.int64(63)) // T.int64(64)' in after, after  # the grid size
    assert "S[" in after and 'S[T.Cast("int64"' not in after, after  # a small tensor keeps int32
    for name in ("A", "B"):
        assert f"index width: offsets into {name} computed in 64 bits (it may hold 2^31 elements or more)" in remarks
    assert not any("offsets into S" in r for r in remarks), remarks
