"""Register tiles read across their rows (F[s, j] inside a T.Parallel over F[i, j]: each
thread holds whole columns) and pipelines whose stages are copied into registers first
(each stage refilled right after that copy). The kernel has the shape of upstream's mHC post
(written here from its description: out[r, j] = c[r] d[j] + sum_s a[s, r] b[s, j], tiles of
columns pipelined). Results are checked against float64 on the default target (the CPU;
the CUDA suite runs the same tests on the GPU); the code generated for sm_90a is checked on
any machine."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T


def mix_columns(rows, width, block, threads, stages, dtype="bfloat16"):
    tokens = T.dynamic("tokens")

    @T.prim_func
    def mix(a: T.Tensor((tokens, rows, rows), "float32"), b: T.Tensor((tokens, rows, width), dtype),
            c: T.Tensor((tokens, rows), "float32"), d: T.Tensor((tokens, width), dtype),
            out: T.Tensor((tokens, rows, width), dtype)):
        with T.Kernel(tokens, threads=threads) as t:
            b_tile = T.alloc_shared((rows, block), dtype)
            d_tile = T.alloc_shared(block, dtype)
            out_tile = T.alloc_shared((rows, block), dtype)
            b_reg = T.alloc_fragment((rows, block), "float32")
            d_reg = T.alloc_fragment(block, "float32")
            acc = T.alloc_fragment((rows, block), "float32")
            a_reg = T.alloc_fragment((rows, rows), "float32")
            c_reg = T.alloc_fragment(rows, "float32")
            T.copy(a[t, 0, 0], a_reg)
            T.copy(c[t, 0], c_reg)
            for step in T.Pipelined(T.ceildiv(width, block), num_stages=stages):
                T.copy(b[t, 0, step * block], b_tile)
                T.copy(d[t, step * block], d_tile)
                T.copy(b_tile, b_reg)
                T.copy(d_tile, d_reg)
                for r, j in T.Parallel(rows, block):
                    acc[r, j] = c_reg[r] * d_reg[j]
                    for s in T.serial(rows):
                        acc[r, j] += a_reg[s, r] * b_reg[s, j]
                T.copy(acc, out_tile)
                T.copy(out_tile, out[t, 0, step * block])

    return mix


def weighted_rows(rows, width, block, threads, stages):
    """out[t, j] = sum_s w[s] x[t, s, j]: a one-loop nest over a vector reading the tile across
    its rows (the shape of upstream's mHC pre "apply mix" loop)."""
    tokens = T.dynamic("tokens")

    @T.prim_func
    def mix(x: T.Tensor((tokens, rows, width), "bfloat16"), w: T.Tensor((rows,), "float32"),
            out: T.Tensor((tokens, width), "bfloat16")):
        with T.Kernel(tokens, threads=threads) as t:
            w_s = T.alloc_shared(rows, "float32")
            T.copy(w, w_s)
            for step in T.Pipelined(T.ceildiv(width, block), num_stages=stages):
                x_tile = T.alloc_shared((rows, block), "float32")
                x_reg = T.alloc_fragment((rows, block), "float32")
                T.copy(x[t, 0, step * block], x_tile)
                T.copy(x_tile, x_reg)
                o = T.alloc_fragment(block, "float32")
                T.clear(o)
                for s in T.serial(rows):
                    ws = w_s[s]
                    for j in T.Parallel(block):
                        o[j] += ws * x_reg[s, j]
                T.copy(o, out[t, step * block])

    return mix


def _inputs(rng, tokens, rows, width, np_dtype):
    a = rng.standard_normal((tokens, rows, rows)).astype(np.float32)
    b = rng.standard_normal((tokens, rows, width)).astype(np_dtype)
    c = rng.standard_normal((tokens, rows)).astype(np.float32)
    d = rng.standard_normal((tokens, width)).astype(np_dtype)
    return a, b, c, d


def _reference(a, b, c, d):
    a, b, c, d = (x.astype(np.float64) for x in (a, b, c, d))
    return c[:, :, None] * d[:, None, :] + np.einsum("tsr,tsj->trj", a, b)


@pytest.mark.parametrize("tokens,width,block,threads,stages", [
    (3, 512, 256, 64, 2),    # two steps
    (2, 768, 256, 64, 2),    # three steps: every stage refilled once
    (2, 256, 256, 64, 2),    # one step, fewer than the stages
    (2, 1024, 128, 32, 3),   # three stages, four steps
    (2, 96, 96, 32, 2),      # 3 columns a thread (vec 1)
    (2, 80, 80, 32, 2),      # 80 columns on 32 threads: no whole-column layout (shared memory)
])
def test_matches_float64(rng, tokens, width, block, threads, stages):
    from conftest import NP

    rows = 4
    k = tilelang.compile(mix_columns(rows, width, block, threads, stages))
    a, b, c, d = _inputs(rng, tokens, rows, width, NP["bfloat16"])
    out = np.full((tokens, rows, width), np.nan, NP["bfloat16"])
    k(a, b, c, d, out)
    np.testing.assert_allclose(out.astype(np.float64), _reference(a, b, c, d), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("width,block,threads,stages", [(1024, 512, 64, 2), (768, 256, 128, 3), (96, 96, 64, 2)])
def test_vector_nest_reading_a_tile_across_rows_matches_float64(rng, width, block, threads, stages):
    from conftest import NP

    k = tilelang.compile(weighted_rows(4, width, block, threads, stages))
    x = rng.standard_normal((3, 4, width)).astype(NP["bfloat16"])
    w = rng.standard_normal(4).astype(np.float32)
    out = np.full((3, width), np.nan, NP["bfloat16"])
    k(x, w, out)
    want = np.einsum("s,tsj->tj", w.astype(np.float64), x.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), want, rtol=2e-2, atol=2e-2)


def test_vector_nest_leads_a_tile_held_in_whole_columns():
    remarks = "\n".join(_sm90(weighted_rows(4, 1024, 512, 64, 2)).get_remarks())
    assert "fragment x_reg: registers, layout strip(4x512, 64 threads, 64 per row, vec 8)" in remarks
    assert "fragment o: registers, layout vector(512, 64 threads, vec 8)" in remarks
    # 96 columns on 64 threads: neither fits, both stay in shared memory
    remarks = "\n".join(_sm90(weighted_rows(4, 96, 96, 64, 2)).get_remarks())
    assert "fragment x_reg: kept in shared memory" in remarks and "fragment o: kept in shared memory" in remarks


def _sm90(kernel):
    return tilelang.compile(kernel, target="cuda -arch=sm_90a")


def test_tiles_read_across_rows_hold_whole_columns_in_registers():
    k = _sm90(mix_columns(4, 1024, 512, 128, 2))
    remarks = "\n".join(k.get_remarks())
    # every thread: all 4 rows of 4 columns (upstream's layout for its mHC post)
    assert "fragment b_reg: registers, layout strip(4x512, 128 threads, 128 per row, vec 4)" in remarks
    assert "fragment acc: registers, layout strip(4x512, 128 threads, 128 per row, vec 4)" in remarks
    assert "fragment d_reg: registers, layout vector(512, 128 threads, vec 4)" in remarks
    assert "fragment c_reg: registers" in remarks
    src = k.get_kernel_source()
    assert "float b_reg[16]" in src and "float d_reg[4]" in src
    assert "b_tile" in src  # (not forwarded: the register copy is what frees the stage early)


def test_without_a_whole_column_layout_the_tile_stays_in_shared_memory():
    remarks = "\n".join(_sm90(mix_columns(4, 80, 80, 32, 2)).get_remarks())
    assert "fragment b_reg: kept in shared memory" in remarks


def test_stage_copied_into_registers_is_refilled_right_after():
    k = _sm90(mix_columns(4, 2048, 512, 128, 2))
    remarks = "\n".join(k.get_remarks())
    assert ("2-stage cp.async pipeline over 2 copies; each stage refilled once the first 2 statement(s) have "
            "read it (2 loads in flight)") in remarks
    src = k.get_kernel_source()
    loop = src[src.index("for (int32_t step"):]
    # at the top, one group may still be pending; the refill (step + 2) follows the register copies
    assert loop.index("tl::cp_async_wait<1>()") < loop.index("cast_copy<4, tl::__bfloat1622float2>")
    assert loop.index("cast_copy<4, tl::__bfloat1622float2>") < loop.index("((step + 2) < 4)")


def test_early_refill_can_be_turned_off():
    k = tilelang.compile(mix_columns(4, 1024, 512, 128, 2), target="cuda -arch=sm_90a",
                         pass_configs={"tl.pipeline_early_refill": False})
    remarks = "\n".join(k.get_remarks())
    assert "2-stage cp.async pipeline over 2 copies" in remarks and "refilled once" not in remarks
    assert "tl::cp_async_wait<0>()" in k.get_kernel_source()
