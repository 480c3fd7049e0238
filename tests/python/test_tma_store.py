"""TMA stores (sm_90 and newer): a T.copy of a whole shared tile into a global tensor
parameter, and T.tma_copy's store. The generated code is checked without a GPU; the same
sources run on the CPU target against numpy (and, with TILELANG_TEST_CUDA=1, on the GPU,
where the stores are TMA)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, rand
from tilelang import _tl


def lower(func, arch="sm_90a", **configs):
    cfg = {"tl.target_arch": arch, **{k: str(v) for k, v in configs.items()}}
    lowered, remarks, _ = _tl.lower_cuda(func.node, cfg, False)
    return _tl.codegen_cuda(lowered), list(remarks)


def gemm_epilogue(M, N, K, bm=64, bn=128, bk=32, threads=128, out_dtype="float16", explicit=False, stages=2):
    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), out_dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_s = T.alloc_shared((bm, bn), out_dtype)
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C_s)
            if explicit:
                T.tma_copy(C_s, C[by * bm, bx * bn])
                T.tma_store_wait()
            else:
                T.copy(C_s, C[by * bm, bx * bn])

    return main


def round_trip(M, N, bm, bn, dtype, part=False, explicit=False, threads=128):
    """Tiles of X through shared memory into Y, plus one (so a stale Y shows)."""
    @T.prim_func
    def main(X: T.Tensor((M, N), dtype), Y: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=threads) as (bx, by):
            S = T.alloc_shared((bm, bn), dtype)
            T.copy(X[by * bm, bx * bn], S)
            for i, j in T.Parallel(bm, bn):
                S[i, j] = S[i, j] + 1
            if part == "rows":  # the second half of the tile's rows
                if explicit:
                    T.tma_copy(S[bm // 2:bm, :], Y[by * bm + bm // 2, bx * bn])
                else:
                    T.copy(S[bm // 2:bm, :], Y[by * bm + bm // 2, bx * bn])
            elif part == "cols":  # the first half of each row
                if explicit:
                    T.tma_copy(S[:, 0:bn // 2], Y[by * bm, bx * bn])
                else:
                    T.copy(S[:, 0:bn // 2], Y[by * bm, bx * bn])
            elif part == "odd_rows":  # rows from 4: not where a box may start
                T.copy(S[4:bm, :], Y[by * bm + 4, bx * bn])
            elif explicit:
                T.tma_copy(S, Y[by * bm, bx * bn])
            else:
                T.copy(S, Y[by * bm, bx * bn])

    return main


AUTO = {"tl.auto_tma_store": True}


def test_plain_copies_are_tma_stores_unless_turned_off():
    src, _ = lower(gemm_epilogue(1024, 1024, 1024), **{"tl.auto_tma_store": 0})
    assert "tl::tma_store" not in src.code and "XOR-swizzled staging tile" in src.code
    src, _ = lower(gemm_epilogue(1024, 1024, 1024))
    assert "tl::tma_store_2d" in src.code


def test_gemm_epilogue_stores_its_tile_with_tma():
    src, remarks = lower(gemm_epilogue(1024, 1024, 1024), **AUTO)
    code = src.code
    # C_s (64 x 128 halves, 256-byte rows) takes two 128-byte-swizzled panels, stored one box each
    assert re.search(r"tl::half\* C_s = .*// wgmma panels", code), code
    assert [s for s in src.tma_specs if s[0] == 2] == [(2, 6, 2, [1024, 1024], [64, 64], 3)], src.tma_specs
    store = code[code.index("tl::fence_proxy_async_shared();"):]
    assert store.index("tl::named_barrier_sync(1, 128)") < store.index("if ((tx == 0)) {") < \
        store.index("tl::tma_store_2d(tl_tma_2, (&C_s[0]), (bx * 128), (by * 64));") < \
        store.index("tl::tma_store_2d(tl_tma_2, (&C_s[4096]), ((bx * 128) + 64), (by * 64));") < \
        store.index("tl::tma_store_arrive();") < store.index("tl::tma_store_wait<0, true>();")
    assert any("C_s -> C is a TMA store (the tile in 128-byte-swizzled panels)" in r for r in remarks), remarks


def test_narrow_tile_is_stored_row_major():
    # rows of 64 bytes: no whole 128-byte panel, so the tile stays row-major (no swizzle)
    src, remarks = lower(round_trip(256, 256, 64, 16, "float32"), **AUTO)
    assert "tl::tma_store_2d" in src.code and "XOR-swizzled" not in src.code and "panels" not in src.code
    assert [s for s in src.tma_specs if s[0] == 1] == [(1, 7, 4, [256, 256], [16, 64], 0)], src.tma_specs
    assert any("S -> Y is a TMA store" in r and "panels" not in r for r in remarks), remarks


def test_no_tma_store_without_tma():
    for arch, configs in (("sm_80", {}), ("sm_90a", {"tl.disable_tma_lower": True}),
                          ("sm_90a", {"tl.disable_tma_store": True})):
        src, _ = lower(round_trip(256, 256, 64, 64, "float16", explicit=True), arch=arch, **configs)
        assert "tl::tma_store" not in src.code and "fence_proxy" not in src.code


def test_a_run_of_whole_rows_is_a_tma_store_from_its_first_row():
    src, remarks = lower(round_trip(256, 256, 64, 64, "float16", part="rows"), **AUTO)
    # 64 halves a row: 128-byte panels, so row 32 of the tile starts at element 32 * 64
    assert "tl::tma_store_2d(tl_tma_0, (&S[2048]), (bx * 64), ((by * 64) + 32));" in src.code, src.code
    assert [s for s in src.tma_specs if s[0] == 1] == [(1, 6, 2, [256, 256], [64, 32], 3)], src.tma_specs
    assert any("S -> Y is a TMA store" in r for r in remarks), remarks


def test_a_partial_row_or_an_unaligned_run_is_stored_by_the_threads():
    for part in ("cols", "odd_rows"):
        src, remarks = lower(round_trip(256, 256, 64, 64, "float16", part=part), **AUTO)
        assert "tl::tma_store" not in src.code and not any("TMA store" in r for r in remarks), part
    # T.tma_copy asks for TMA: the fallback is said
    src, remarks = lower(round_trip(256, 256, 64, 64, "float16", part="cols", explicit=True))
    assert "tl::tma_store" not in src.code
    assert any("T.tma_copy at line" in r and "stored by the threads, not TMA (the copy does not cover a run of "
               "whole rows of the shared tile)" in r for r in remarks), remarks


@pytest.mark.parametrize("part", ["rows", "cols", "odd_rows"])
def test_partial_tile_results(rng, part):
    M, N = 200, 240
    k = compile_cpu(round_trip(M, N, 64, 64, "float16", part=part))
    x = rand(rng, (M, N), "float16")
    y = np.full((M, N), np.nan, dtype=x.dtype)
    k(x, y)
    want = np.full((M, N), np.nan)
    for r0 in range(0, M, 64):
        for c0 in range(0, N, 64):
            rows = {"rows": slice(r0 + 32, r0 + 64), "cols": slice(r0, r0 + 64), "odd_rows": slice(r0 + 4, r0 + 64)}
            cols = slice(c0, c0 + 32) if part == "cols" else slice(c0, c0 + 64)
            want[rows[part], cols] = x[rows[part], cols].astype(np.float64) + 1
    np.testing.assert_array_equal(y.astype(np.float64), want.astype(np.float16).astype(np.float64))


def store_then_read(M, N, bm, bn):
    """Y's tile stored from shared memory, then read back by the same kernel (into Z)."""
    @T.prim_func
    def main(X: T.Tensor((M, N), "float32"), Y: T.Tensor((M, N), "float32"), Z: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float32")
            T.copy(X[by * bm, bx * bn], S)
            T.copy(S, Y[by * bm, bx * bn])
            for i, j in T.Parallel(bm, bn):
                Z[by * bm + i, bx * bn + j] = Y[by * bm + i, bx * bn + j] * 2

    return main


def test_no_automatic_tma_store_into_a_tensor_the_kernel_reads():
    # the store's wait only covers reading the tile: Y's later reads would race its writes
    src, remarks = lower(store_then_read(256, 256, 64, 64), **AUTO)
    assert "tl::tma_store" not in src.code and not any("TMA store" in r for r in remarks), remarks


def test_explicit_store_and_wait():
    src, remarks = lower(gemm_epilogue(1024, 1024, 1024, explicit=True))
    code = src.code
    assert code.count("tl::tma_store_2d(") == 2 and "tl::tma_store_arrive();" in code
    # the issuing thread's own wait, then the user's T.tma_store_wait() (read=True by default)
    assert code.count("tl::tma_store_wait<0, true>();") == 2
    # the request itself leaves nothing in the code
    assert "tl.tma_store" not in code


def tma_store_wait_only(read):
    @T.prim_func
    def main(X: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            T.tma_store_arrive()
            T.tma_store_wait(read=read)
            X[T.get_thread_binding()] = 1.0

    return main


def test_store_wait_instructions():
    assert "tl::tma_store_wait<0, false>();" in lower(tma_store_wait_only(False))[0].code
    code = lower(tma_store_wait_only(True))[0].code
    assert "tl::tma_store_arrive();" in code and "tl::tma_store_wait<0, true>();" in code
    with pytest.raises(tilelang.errors.TileLangCompileError, match="count must be a non-negative int"):
        @T.prim_func
        def bad(X: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128) as _:
                T.tma_store_wait(-1)


@pytest.mark.parametrize("explicit", [False, True])
def test_gemm_epilogue_results(rng, explicit):
    M, N, K = 192, 256, 96
    k = compile_cpu(gemm_epilogue(M, N, K, explicit=explicit), out_idx=[2])
    a, b = rand(rng, (M, K), "float16"), rand(rng, (K, N), "float16")
    ref = a.astype(np.float64) @ b.astype(np.float64)
    c = k(a, b).astype(np.float64)
    assert np.abs(c - ref).max() <= 2e-3 * np.abs(ref).max()


@pytest.mark.parametrize("dtype,bm,bn", [("float16", 64, 128), ("float32", 64, 16), ("float32", 32, 64)])
@pytest.mark.parametrize("explicit", [False, True])
def test_round_trip_results(rng, dtype, bm, bn, explicit):
    # 200 x 240 is not a multiple of the tiles: the boxes past the edge store nothing there
    M, N = 200, 240
    k = compile_cpu(round_trip(M, N, bm, bn, dtype, explicit=explicit))
    x = rand(rng, (M, N), dtype)
    y = np.full((M, N), np.nan, dtype=x.dtype)
    k(x, y)
    np.testing.assert_array_equal(y, (x.astype(np.float64) + 1).astype(x.dtype))
