"""Shared memory reused by liveness on CUDA (cuda-plan-shared-memory), checked without a
GPU on the generated source: tiles of disjoint phases share bytes and the arena shrinks,
a barrier orders the old tile's last reads before the new tile's first writes, tiles live
together never overlap, and pipelined GEMMs keep (or shrink) their arena with no spills.
The numeric tests run on the CPU target, and on the GPU under TILELANG_TEST_CUDA=1."""
import os
import re
import sys

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, rand
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_COMPILER, COMPILER = _tl.find_cuda_compiler(_search_dirs())
needs_compiler = pytest.mark.skipif(not HAVE_COMPILER, reason=f"no CUDA compiler: {COMPILER}")


def two_phases(n=128, w=128):
    """X is done with before Y is first written: they can share bytes."""
    h = n // 2

    @T.prim_func
    def main(A: T.Tensor((n, w), "float32"), B: T.Tensor((n, w), "float32")):
        with T.Kernel(1, threads=128) as bx:
            X = T.alloc_shared((h, w), "float32")
            Y = T.alloc_shared((h, w), "float32")
            T.copy(A[0:h, :], X)
            for i, j in T.Parallel(h, w):
                X[i, j] = X[i, j] + 1.0
            T.copy(X, B[0:h, :])
            T.copy(A[h:n, :], Y)
            for i, j in T.Parallel(h, w):
                Y[i, j] = Y[i, j] * 2.0
            T.copy(Y, B[h:n, :])
    return main


def three_tiles():
    """X and Y are read together; Z comes after both."""
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            X = T.alloc_shared((64, 64), "float32")
            Y = T.alloc_shared((64, 64), "float32")
            Z = T.alloc_shared((64, 64), "float32")
            T.copy(A, X)
            for i, j in T.Parallel(64, 64):
                Y[i, j] = X[j, i]
            for i, j in T.Parallel(64, 64):
                X[i, j] = X[i, j] + Y[i, j]
            T.copy(X, Z)
            for i, j in T.Parallel(64, 64):
                Z[i, j] = Z[i, j] * 3.0
            T.copy(Z, B)
    return main


def gemm_epilogue(M=1024, N=1024, K=1024, bm=128, bn=128, bk=32, stages=3, dtype="float16"):
    """A pipelined GEMM whose output goes through a shared tile after the main loop."""
    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_s = T.alloc_shared((bm, bn), dtype)
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            T.copy(C_s, C[by * bm, bx * bn])
    return main


def compile_sm90(func):
    return tilelang.compile(func, target="cuda -arch=sm_90a")


def placements(src):
    """{buffer: offset in the arena} from the generated kernel."""
    return {m[1]: int(m[2]) for m in re.finditer(r"\* (\w+) = reinterpret_cast<[\w:]+\*>\(tl_smem \+ (\d+)\)", src)}


def overlap(a, b):
    """Whether byte ranges (offset, size) a and b overlap."""
    return a[0] < b[0] + b[1] and b[0] < a[0] + a[1]


@needs_compiler
def test_disjoint_phases_share_an_offset_and_the_arena_shrinks():
    k = compile_sm90(two_phases())
    at = placements(k.get_kernel_source())
    assert at["X"] == at["Y"], at
    assert k._cuda.src.shared_bytes == 64 * 128 * 4  # one tile, not two
    remarks = "\n".join(k.get_remarks())
    assert "shared memory: 32768 bytes instead of 65536 (32768 saved" in remarks, remarks
    assert "Y over X" in remarks, remarks


@needs_compiler
def test_a_barrier_separates_the_last_read_of_x_from_the_first_write_of_y():
    lines = compile_sm90(two_phases()).get_kernel_source().splitlines()
    last_x = max(i for i, ln in enumerate(lines) if "X[" in ln)
    first_y = min(i for i, ln in enumerate(lines) if "Y[" in ln)
    assert last_x < first_y
    assert any("__syncthreads()" in ln for ln in lines[last_x:first_y]), "\n".join(lines[last_x:first_y + 1])


@needs_compiler
def test_the_launch_asks_for_the_peak():
    # Two 128 KiB tiles: 256 KiB side by side, over sm_90's 227 KiB; one at a time, they fit.
    k = compile_sm90(two_phases(512, 128))
    assert k._cuda.src.shared_bytes == 131072
    with pytest.raises(tilelang.TileLangRuntimeError, match=r"needs 131072 bytes of shared memory, the device "
                                                            r"\(sm_86\) has 101376"):
        tilelang.compile(two_phases(512, 128), target="cuda -arch=sm_86")


@needs_compiler
def test_tiles_live_together_never_overlap():
    k = compile_sm90(three_tiles())
    at = placements(k.get_kernel_source())
    size = 64 * 64 * 4
    assert not overlap((at["X"], size), (at["Y"], size)), at
    # Z is written by the copy that reads X: both live there, so Z takes Y's bytes.
    assert not overlap((at["X"], size), (at["Z"], size)), at
    assert at["Z"] == at["Y"], at
    assert k._cuda.src.shared_bytes == 2 * size

    g = compile_sm90(gemm_epilogue())
    at = placements(g.get_kernel_source())
    a_s, b_s = (at["A_s"], 3 * 128 * 32 * 2), (at["B_s"], 3 * 32 * 128 * 2)
    assert not overlap(a_s, b_s), at  # the pipeline's stages are live together
    assert at["A_s"] % 1024 == 0 and at["B_s"] % 1024 == 0  # swizzled operands


@needs_compiler
def test_gemm_pipelines_keep_or_shrink_their_arena_without_spills():
    from test_cuda_codegen import gemm

    # The cp.async pipeline (sm_80; on sm_90a these tiles take TMA and wgmma)
    sm80 = "cuda -arch=sm_80"
    plain = tilelang.compile(gemm(1024, 1024, 1024), target=sm80)
    assert plain._cuda.src.shared_bytes == 3 * (128 * 32 + 32 * 128) * 2  # nothing to reuse
    assert not any(r.startswith("shared memory:") for r in plain.get_remarks())
    # ... and the warp-specialized one: the stages plus a full/empty mbarrier pair per stage;
    # its short k-tiles stay in flight with one stage more than the source's 3
    ws = compile_sm90(gemm(1024, 1024, 1024))
    assert ws._cuda.src.shared_bytes == 4 * (128 * 32 + 32 * 128) * 2 + 4 * 2 * 8
    epi = tilelang.compile(gemm_epilogue(), target=sm80)
    staged = 3 * (128 * 32 + 32 * 128) * 2
    assert epi._cuda.src.shared_bytes == max(staged, 128 * 128 * 2) < staged + 128 * 128 * 2
    src = epi.get_kernel_source()
    # C_s reuses the stages only once every copy has landed and every thread is done with them.
    tail = src[src.index("tl::cp_async_wait<0>()"):]
    assert tail.index("__syncthreads()") < tail.index("C_s[")
    for k in (plain, epi):
        usage = k._cuda.resource_usage
        if usage["registers"] is None:
            pytest.skip(f"{k._cuda.compiler} does not report ptxas statistics")
        assert usage["spill_stores_bytes"] == 0 and usage["spill_loads_bytes"] == 0


@needs_compiler
def test_attention_output_tile_reuses_dead_bytes():
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "examples"))
    import attention_fwd

    func = attention_fwd.flashattn.func(1, 4, 4, 512, 64, False, "bhsd", block_M=128, block_N=128,
                                        num_stages=2, threads=256)
    k = compile_sm90(func)
    remarks = "\n".join(k.get_remarks())
    assert "O_shared over" in remarks, remarks
    assert k._cuda.src.shared_bytes < (128 * 64 + 2 * 2 * 128 * 64 + 128 * 64) * 2


def test_reuse_computes_the_same_results(rng):
    # On the CPU target the pass does not run; under TILELANG_TEST_CUDA=1 this runs the
    # kernels whose tiles share bytes on the GPU.
    a = rand(rng, (128, 128))
    b = np.zeros_like(a)
    compile_cpu(two_phases())(a, b)
    assert_close(b, np.concatenate([a[:64] + 1, a[64:] * 2]))
    a = rand(rng, (64, 64))
    b = np.zeros_like(a)
    compile_cpu(three_tiles())(a, b)
    assert_close(b, (a + a.T) * 3)


def test_gemm_epilogue_results(rng):
    a, b = rand(rng, (256, 128), "float16"), rand(rng, (128, 256), "float16")
    c = np.zeros((256, 256), np.float16)
    compile_cpu(gemm_epilogue(256, 256, 128, bk=32, stages=3))(a, b, c)
    assert_close(c, a.astype(np.float64) @ b.astype(np.float64), "float16")


def two_reductions_per_iteration(rows=64, cols=64, steps=3):
    """Row max and row sum of a tile every iteration, with warps split along the columns:
    each reduction has a shared workspace of its own, allocated inside the loop body."""
    @T.prim_func
    def main(A: T.Tensor((steps, rows, cols), "float16"), W: T.Tensor((cols, cols), "float16"),
             O: T.Tensor((rows,), "float32")):
        with T.Kernel(1, threads=256) as bx:
            a_s = T.alloc_shared((rows, cols), "float16")
            w_s = T.alloc_shared((cols, cols), "float16")
            s = T.alloc_fragment((rows, cols), "float32")
            mx = T.alloc_fragment((rows,), "float32")
            sm = T.alloc_fragment((rows,), "float32")
            acc = T.alloc_fragment((rows,), "float32")
            T.copy(W, w_s)
            T.clear(acc)
            for k in T.serial(steps):
                T.copy(A[k, 0, 0], a_s)
                T.gemm(a_s, w_s, s, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
                T.reduce_max(s, mx, dim=1)
                T.reduce_sum(s, sm, dim=1)
                for i in T.Parallel(rows):
                    acc[i] += mx[i] + sm[i]
            T.copy(acc, O)

    return main


def test_two_reductions_in_one_loop_body_match_numpy():
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 64, 64)).astype(np.float16)
    w = rng.standard_normal((64, 64)).astype(np.float16)
    out = np.full(64, np.nan, np.float32)
    tilelang.compile(two_reductions_per_iteration())(a, w, out)
    s = a.astype(np.float64) @ w.astype(np.float64)
    np.testing.assert_allclose(out, (s.max(axis=2) + s.sum(axis=2)).sum(axis=0), rtol=1e-3, atol=1e-2)


@needs_compiler
def test_workspaces_allocated_in_a_loop_body_share_bytes():
    """Allocated inside the loop, each workspace is new every iteration: the two reductions'
    workspaces take the same bytes (upstream's MLA decode fits in 227 KB this way)."""
    k = compile_sm90(two_reductions_per_iteration())
    assert any("s_red over s_red" in r for r in k.get_remarks()), k.get_remarks()
    src = k.get_kernel_source()
    at = re.findall(r"float\* (s_red\w*) = reinterpret_cast<float\*>\(tl_smem \+ (\d+)\)", src)
    assert len(at) == 2 and at[0][1] == at[1][1], at


def gemm_on_twelve_warps(n=128, k=128):
    """A 128 x 128 accumulator on 384 threads: 12 warps cannot split it in 16 x 8 tiles, so
    the GEMM becomes element loops with its fragments staged in shared memory."""
    @T.prim_func
    def main(A: T.Tensor((n, k), "float16"), B: T.Tensor((k, n), "float16"), C: T.Tensor((n, n), "float32")):
        with T.Kernel(1, threads=384):
            a = T.alloc_shared((n, k), "float16")
            b = T.alloc_shared((k, n), "float16")
            c = T.alloc_fragment((n, n), "float32")
            d = T.alloc_fragment((n, n), "float32")
            T.copy(A, a)
            T.copy(B, b)
            T.gemm(a, b, c, clear_accum=True)
            T.gemm(a, b, d, clear_accum=True)
            for i, j in T.Parallel(n, n):
                c[i, j] += d[i, j]
            T.copy(c, C)

    return main


@needs_compiler
def test_too_much_shared_memory_names_the_staged_fragments():
    with pytest.raises(tilelang.TileLangRuntimeError) as e:
        tilelang.compile(gemm_on_twelve_warps(), target="cuda -arch=sm_86")
    msg = str(e.value)
    assert "bytes of shared memory, the device (sm_86) has 101376" in msg
    assert "the compiler staged fragments in shared memory" in msg and "no tensor cores" in msg, msg
