"""T.alloc_reducer / reducer_init / reducer_update / finalize_reducer (upstream's reducers):
every contribution of a T.Parallel loop is combined exactly once."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu
from tilelang.errors import TileLangCompileError


def _v1(M, N, dtype, op):
    @T.prim_func
    def kernel(A: T.Tensor((M, N), dtype), B: T.Tensor((M,), dtype)):
        with T.Kernel(1, threads=256):
            acc = T.alloc_reducer(M, dtype, op=op, replication="all")
            T.clear(acc)
            A_frag = T.alloc_fragment((M, N), dtype)
            T.copy(A, A_frag)
            for i, j in T.Parallel(M, N):
                if op == "sum":
                    acc[i] += A_frag[i, j]
                elif op == "max":
                    acc[i] = T.max(acc[i], A_frag[i, j])
                else:
                    acc[i] = T.min(acc[i], A_frag[i, j])
            T.finalize_reducer(acc)
            T.copy(acc, B)
    return kernel


@pytest.mark.parametrize("op", ["sum", "max", "min"])
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_reducer_clear_then_update(rng, op, dtype):
    M, N = 64, 48
    k = compile_cpu(_v1(M, N, dtype, op))
    a = (rng.standard_normal((M, N)) * 4).astype(dtype)
    b = np.zeros(M, dtype)
    k(a, b)
    a64 = a.astype(np.float64)
    ref = {"sum": a64.sum(1), "max": np.maximum(a64.max(1), 0), "min": np.minimum(a64.min(1), 0)}[op]
    np.testing.assert_allclose(b.astype(np.float64), ref, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op,init", [("sum", None), ("sum", 10.0), ("max", None), ("min", None), ("max", 3.0)])
def test_reducer_init_update_finalize_into_dst(rng, op, init):
    E, threads = 8, 128

    @T.prim_func
    def kernel(A: T.Tensor((E,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=threads):
            src = T.alloc_fragment((E,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((2,), "float32", op=op)
            if init is None:
                T.reducer_init(acc)
            else:
                T.reducer_init(acc, init)
            for i in T.Parallel(E):
                T.reducer_update(acc[i % 2], src[i])
            out = T.alloc_fragment((2,), "float32")
            T.finalize_reducer(acc, out)
            T.copy(out, B)

    k = compile_cpu(kernel)
    a = rng.standard_normal(E).astype(np.float32) * 5
    b = np.full(2, np.nan, np.float32)
    k(a, b)
    a64 = a.astype(np.float64).reshape(-1, 2)
    f = {"sum": np.sum, "max": np.max, "min": np.min}[op]
    ref = f(a64, axis=0)
    if init is not None:
        ref = ref + init if op == "sum" else (np.maximum(ref, init) if op == "max" else np.minimum(ref, init))
    np.testing.assert_allclose(b.astype(np.float64), ref, rtol=1e-6, atol=1e-5)
    if op == "sum" and init is None:
        a2 = np.arange(1, E + 1, dtype=np.float32)  # upstream's regression: 1..8 sums to 36, once each
        k(a2, b)
        assert b.tolist() == [16.0, 20.0]


def test_reducer_updated_from_one_loop_shape_accumulates_in_registers_on_cuda():
    """acc[i] += A_frag[i, j] over T.Parallel(M, N): each thread adds into its registers of a
    64 x 32 fragment (A_frag's layout), combined once by finalize_reducer: no atomics."""
    k = tilelang.lower(_v1(64, 32, "float32", "sum"), target="cuda -arch=sm_80")
    body = k.kernel_source[k.kernel_source.find("__global__"):]
    assert "atomic" not in body, body
    remarks = "\n".join(k.remarks)
    assert "T.alloc_reducer acc: each thread accumulates its part in registers (acc_partial, 64 x 32)" in remarks
    assert "fragment acc_partial: registers" in remarks, remarks


def test_other_reducer_updates_stay_atomic_and_fenced_with_a_remark():
    @T.prim_func
    def pairs(A: T.Tensor((256,), "float32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((256,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((2,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(256):
                T.reducer_update(acc[i % 2], src[i])  # not indexed by a loop variable itself
            T.finalize_reducer(acc)
            T.copy(acc, B)

    k = tilelang.lower(pairs, target="cuda -arch=sm_80")
    body = k.kernel_source[k.kernel_source.find("__global__"):]
    assert "tl::atomic_add((&acc[" in body
    assert body.count("__syncthreads()") >= 2
    assert any("T.alloc_reducer acc: atomic updates of the shared tile (an update indexes it by other than the "
               "loop's own variables" in r for r in k.remarks), k.remarks


def test_reducer_misuse_is_an_error_at_its_line():
    with pytest.raises(TileLangCompileError, match="is a 'sum' reducer: update it with `acc\\[...\\] \\+= value`"):
        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), "float32", op="sum")
                T.reducer_init(acc)
                for i in T.Parallel(8):
                    acc[0] = A[i]
    with pytest.raises(AssertionError, match="needs an integer dtype"):
        @T.prim_func
        def bad2(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                acc = T.alloc_reducer((1,), "float32", op="bitand")
    with pytest.raises(TileLangCompileError, match="is not a reducer"):
        @T.prim_func
        def bad3(A: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=32):
                T.reducer_update(A[0], 1.0)


@pytest.mark.parametrize("op", ["bitand", "bitor", "bitxor"])
def test_bitwise_reducers(op, rng):
    """Integer reducers combining with and / or / xor (T.reducer_update and the augmented
    assignments), checked against numpy."""
    M, K = 16, 64

    @T.prim_func
    def rows(A: T.Tensor((M, K), "int32"), B: T.Tensor((M,), "int32"), C: T.Tensor((M,), "int32")):
        with T.Kernel(1, threads=128):
            src = T.alloc_fragment((M, K), "int32")
            T.copy(A, src)
            acc = T.alloc_reducer((M,), "int32", op=op)
            acc2 = T.alloc_reducer((M,), "int32", op=op)
            T.reducer_init(acc)
            # the augmented assignments update a reduction opened by T.fill (upstream's v1);
            # in one opened by T.reducer_init they are refused (test below)
            T.fill(acc2, -1 if op == "bitand" else 0)
            for i, k in T.Parallel(M, K):
                T.reducer_update(acc[i], src[i, k])
                if op == "bitand":
                    acc2[i] &= src[i, k]
                elif op == "bitor":
                    acc2[i] |= src[i, k]
                else:
                    acc2[i] ^= src[i, k]
            result = T.alloc_fragment((M,), "int32")
            T.finalize_reducer(acc, result)
            T.copy(result, B)
            T.finalize_reducer(acc2, C)

    a = rng.integers(0, 2**31 - 1, (M, K)).astype(np.int32)
    b, c = np.zeros(M, np.int32), np.zeros(M, np.int32)
    compile_cpu(rows)(a, b, c)
    fold = {"bitand": np.bitwise_and, "bitor": np.bitwise_or, "bitxor": np.bitwise_xor}[op]
    want = fold.reduce(a, axis=1)
    assert np.array_equal(b, want) and np.array_equal(c, want)


@pytest.mark.parametrize("batch, message", [(0, "batch must be >= 1"), (128, "exceeds total output elements"),
                                            (3, "must evenly divide")])
def test_finalize_batch_must_fit_the_output(batch, message):
    with pytest.raises(ValueError, match=message):
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                r = T.alloc_reducer(64, "float32", op="sum", replication="all")
                T.clear(r)
                for i, j in T.Parallel(64, 64):
                    r[i] += A[i, j]
                T.finalize_reducer(r, batch=batch)
                T.copy(r, B)


def test_a_reducer_never_finalized_keeps_its_atomic_updates(rng):
    """Read without T.finalize_reducer, the tile must already hold every update: the atomic
    path, said in the remarks, and the sums right."""

    @T.prim_func
    def unfinalized(A: T.Tensor((32, 16), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=64):
            a = T.alloc_fragment((32, 16), "float32")
            T.copy(A, a)
            acc = T.alloc_reducer((32,), "float32", op="sum")
            T.clear(acc)  # (upstream's v1 form: a reduction opened by T.reducer_init must be finalized)
            for i, j in T.Parallel(32, 16):
                acc[i] += a[i, j]
            T.sync_threads()
            T.copy(acc, B)

    k = tilelang.lower(unfinalized, target="cuda -arch=sm_80")
    assert any("atomic updates of the shared tile (it is never finalized" in r for r in k.remarks), k.remarks
    a = rng.standard_normal((32, 16)).astype(np.float32)
    b = np.full(32, np.nan, np.float32)
    compile_cpu(unfinalized)(a, b)
    np.testing.assert_allclose(b, a.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)



def _epoch_kernel(body):
    """A kernel whose reducer `acc` the given body string uses; `src` holds A's 8 values."""
    src = f"""
import tilelang.language as T


@T.prim_func
def kernel(A: T.Tensor((8,), T.float32), B: T.Tensor((1,), T.float32)):
    with T.Kernel(1, threads=32):
        src = T.alloc_fragment((8,), T.float32)
        T.copy(A, src)
        acc = T.alloc_reducer((1,), T.float32, op="sum")
{body}
"""
    return src


@pytest.mark.parametrize("body, message", [
    ("        for i in T.Parallel(8):\n            T.reducer_update(acc[0], src[i])\n        T.finalize_reducer(acc)",
     "T.reducer_update of acc before T.reducer_init"),
    ("        T.reducer_init(acc)\n        for i in T.Parallel(8):\n            T.reducer_update(acc[0], src[i])",
     "never finalized"),
    ("        T.reducer_init(acc)\n        for i in T.Parallel(8):\n            acc[0] += src[i]\n"
     "        T.finalize_reducer(acc)", "illegal store to reducer acc"),
    ("        T.reducer_init(acc)\n        for i in T.Parallel(8):\n            T.reducer_update(acc[0], src[i])\n"
     "        B[0] = acc[0]\n        T.finalize_reducer(acc)", "illegal read of reducer acc before T.finalize_reducer"),
    ("        T.clear(acc)\n        for i in T.Parallel(8):\n            T.reducer_update(acc[0], src[i])\n"
     "        T.finalize_reducer(acc)", "illegal T.reducer_update of reducer acc"),
    ("        T.reducer_init(acc)\n        T.reducer_update(acc[0], src[0])\n        T.finalize_reducer(acc)",
     "outside any T.Parallel loop"),
    ("        T.reducer_init(acc)\n        T.reducer_init(acc)\n        T.finalize_reducer(acc)",
     "double T.reducer_init of reducer acc"),
    ("        T.reducer_init(acc, T.float16(0))\n        T.finalize_reducer(acc)",
     "starting value is float16, which does not match reducer dtype float32"),
    ("        T.reducer_init(acc)\n        for i in T.Parallel(8):\n            T.reducer_update(acc[0], src[i])\n"
     "        for r in T.serial(1):\n            T.finalize_reducer(acc)", "not in the scope of its T.reducer_init"),
])
def test_reductions_opened_by_reducer_init_follow_upstreams_rules(tmp_path, body, message):
    import importlib.util

    path = tmp_path / "epoch_kernel.py"
    path.write_text(_epoch_kernel(body))
    spec = importlib.util.spec_from_file_location("epoch_kernel", path)
    with pytest.raises(TileLangCompileError, match=message):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def _steps_through_a_shared_tile(op="min", threads=256):
    """Each step copies a 64x8 tile to shared memory (by 128 of the threads, 16 bytes each)
    and folds it into a register reducer (each thread reads elements others copied)."""

    @T.prim_func
    def main(X: T.Tensor((128, 24), "float32"), O: T.Tensor((128,), "float32")):
        with T.Kernel(2, threads=threads) as bx:
            acc = T.alloc_reducer((64,), "float32", op=op)
            T.reducer_init(acc)
            for s in T.serial(3):
                x = T.alloc_shared((64, 8), "float32")
                T.copy(X[bx * 64, s * 8], x)
                for i, j in T.Parallel(64, 8):
                    T.reducer_update(acc[i], x[i, j] * 2.0)
            T.finalize_reducer(acc)
            T.copy(acc, O[bx * 64])

    return main


def test_a_tile_copied_each_step_is_fenced_before_and_after_its_reads(rng):
    """The H200 fuzz run found this (seed 33 of the reducers kind): once the updates went to
    registers, the loop held no block-level work and no plain shared store, so it was one
    unit without barriers inside, and threads read the tile before the copy had landed."""
    x = rng.standard_normal((128, 24)).astype(np.float32)
    o = np.full(128, np.nan, np.float32)
    compile_cpu(_steps_through_a_shared_tile())(x, o)
    np.testing.assert_allclose(o, (x.astype(np.float64) * 2.0).min(axis=1), rtol=1e-6)
    src = tilelang.lower(_steps_through_a_shared_tile(), target="cuda -arch=sm_90a").kernel_source
    loop = src[src.find("for (int32_t s = 0"):]
    loop = loop[:loop.find("acc_1")]
    copy_at, read_at = loop.find("tl::copy<16>((&x["), loop.find("x[(l_2")
    assert 0 < copy_at < read_at, loop
    assert "__syncthreads()" in loop[:copy_at], loop  # the next step's copy waits for the reads
    assert "__syncthreads()" in loop[copy_at:read_at], loop  # the reads wait for the copy


def _finalize_in_branch(cond_on_thread=False):
    @T.prim_func
    def kernel(A: T.Tensor((8,), "float32"), S: T.Tensor((2,), "int32"), B: T.Tensor((2,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            src = T.alloc_fragment((8,), "float32")
            T.copy(A, src)
            acc = T.alloc_reducer((1,), "float32", op="sum")
            T.reducer_init(acc)
            for i in T.Parallel(8):
                T.reducer_update(acc[0], src[i])
            if (T.get_thread_binding() < 64) if cond_on_thread else (S[bx] >= 0):
                result = T.alloc_fragment((1,), "float32")
                T.finalize_reducer(acc, result)
                if T.get_thread_binding() == 0:
                    B[bx] = result[0]
            else:
                if T.get_thread_binding() == 0:
                    B[bx] = 0.0

    return kernel


def test_a_finalize_in_a_block_uniform_branch_is_upstreams_refinement(rng):
    """Upstream's rule: a finalize inside a branch on block-uniform values, nested in the
    init's block, runs 0 or 1 times per init (its sum_smaller_probs pattern)."""
    a = rng.standard_normal(8).astype(np.float32)
    b = np.full(2, np.nan, np.float32)
    compile_cpu(_finalize_in_branch())(a, np.array([-1, 1], np.int32), b)
    np.testing.assert_allclose(b, [0.0, a.astype(np.float64).sum()], rtol=1e-6)
    tilelang.lower(_finalize_in_branch(), target="cuda -arch=sm_90a")  # lowers there too


def test_a_finalize_under_a_thread_dependent_branch_is_refused():
    with pytest.raises(Exception, match="under a condition that may differ between threads"):
        compile_cpu(_finalize_in_branch(cond_on_thread=True))
