"""Warps with different jobs, written as `if tx < 32: ... else: ...` (DeepSeek's mHC kernels):
the threads of each branch exchange data through shared memory among themselves, so on CUDA
each branch over whole warps synchronizes with a named barrier of its own (never
__syncthreads, which would wait for the other branch's threads); and a fragment used as a
per-thread scalar (`s[0] += ...` outside T.Parallel loops) is held by every thread, as
upstream's replicated fragments are, not shared by the block (where every thread would add
into one word). Results against numpy in float64 on whichever target the suite runs; the
CUDA choices from the generated code (compile-only, sm_90a)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, marker_line, poison
from tilelang.errors import TileLangCompileError

TOKENS, HIDDEN, BLOCK, SPLITS = 8, 1024, 256, 4


def roles_kernel():
    """Per token: warp 0 scales 16 mixing weights by an rms factor and normalizes them;
    warps 1-2 stream the token's hidden row through a pipelined loop, scaled by the factor."""

    @T.prim_func
    def main(parts: T.Tensor((SPLITS, TOKENS), "float32"), w: T.Tensor((TOKENS, 16), "float32"),
             x: T.Tensor((TOKENS, HIDDEN), "float32"), w_out: T.Tensor((TOKENS, 16), "float32"),
             y: T.Tensor((TOKENS, HIDDEN), "float32")):
        with T.Kernel(TOKENS, threads=96) as t:
            rms = T.alloc_fragment(1, "float32")
            rms[0] = 0
            for s in T.serial(SPLITS):
                rms[0] += parts[s, t]
            rms[0] = T.rsqrt(rms[0] / HIDDEN + 1e-6)
            factor = T.alloc_shared(1, "float32")
            if T.get_thread_binding() == 0:
                factor[0] = rms[0]
            if T.get_thread_binding() < 32:
                ws = T.alloc_shared(16, "float32")
                total = T.alloc_shared(1, "float32")
                for j in T.Parallel(16):
                    ws[j] = w[t, j] * factor[0]
                if T.get_thread_binding() == 0:  # reads what the other lanes wrote
                    total[0] = 0
                    for j in T.serial(16):
                        total[0] += ws[j]
                for j in T.Parallel(16):
                    w_out[t, j] = ws[j] / total[0]
            else:
                for k in T.Pipelined(HIDDEN // BLOCK, num_stages=2):
                    xs = T.alloc_shared(BLOCK, "float32")
                    T.copy(x[t, k * BLOCK], xs)
                    for j in T.Parallel(BLOCK):
                        y[t, k * BLOCK + j] = xs[j] * factor[0]

    return main


def test_warp_roles_match_numpy(rng):
    parts = rng.uniform(0.5, 2.0, (SPLITS, TOKENS)).astype(np.float32)
    w = rng.uniform(0.1, 1.0, (TOKENS, 16)).astype(np.float32)
    x = rng.standard_normal((TOKENS, HIDDEN)).astype(np.float32)
    w_out, y = poison((TOKENS, 16)), poison((TOKENS, HIDDEN))
    compile_cpu(roles_kernel())(parts, w, x, w_out, y)
    factor = 1 / np.sqrt(f64(parts).sum(0) / HIDDEN + 1e-6)
    ws = f64(w) * factor[:, None]
    assert_close(w_out, ws / ws.sum(1, keepdims=True))
    assert_close(y, f64(x) * factor[:, None])


def _sm90(func):
    k = tilelang.lower(func, target="cuda -arch=sm_90a")
    return k.kernel_source, "\n".join(getattr(k, "remarks", []) or [])


def test_each_warp_range_has_its_own_named_barrier():
    src, _ = _sm90(roles_kernel())
    head, _, branches = src.partition("if ((tx < 32))")
    ids = {m.group(1): m.group(2) for m in re.finditer(r"named_barrier_sync\((\d+), (\d+)\)", branches)}
    # warp 0 (32 threads) and warps 1-2 (64 threads): two barriers, by different ids
    assert sorted(ids.values()) == ["32", "64"], ids
    assert "__syncthreads" not in branches, "a block-wide barrier inside a branch taken by some warps"
    # the scalar fragment is a register of each thread, not one shared word
    assert re.search(r"float rms\[1\];", head), head


def test_pipelined_copies_in_a_branch_use_the_ranges_thread_numbers():
    """The else-branch's threads are 32..95: its staged copies are spread over them as
    numbers 0..63 (tx - 32), every element loaded once (a copy spread over the block's
    numbers loaded only what threads 32..63 would, the first half stayed unloaded)."""
    src, _ = _sm90(roles_kernel())
    _, _, other = src.partition("} else {")
    copies = re.findall(r"cp_async_zfill_16\(\(&xs\[([^\]]*)\]\)", other)
    assert copies and all("tx_in_range" in c for c in copies), copies
    assert "if ((tx < 64))" not in other, other


def test_a_pipelined_loop_on_part_of_a_warp_is_refused():
    @T.prim_func
    def main(x: T.Tensor((HIDDEN,), "float32"), y: T.Tensor((HIDDEN,), "float32")):
        with T.Kernel(1, threads=64):
            if T.get_thread_binding() < 16:  # ERR-HERE
                for k in T.Pipelined(HIDDEN // BLOCK, num_stages=2):
                    xs = T.alloc_shared(BLOCK, "float32")
                    T.copy(x[k * BLOCK], xs)
                    for j in T.Parallel(BLOCK):
                        y[k * BLOCK + j] = xs[j] * 2.0

    with pytest.raises(TileLangCompileError) as e:
        tilelang.compile(main, target="cuda -arch=sm_90a")
    assert "barrier among its 16 thread(s) 0..15" in str(e.value) and "whole warps" in str(e.value)
    assert e.value.line == marker_line(test_a_pipelined_loop_on_part_of_a_warp_is_refused)


def scalar_fragment_kernel(n=64, rows=4):
    @T.prim_func
    def main(A: T.Tensor((rows, n), "float32"), B: T.Tensor((rows, n), "float32")):
        with T.Kernel(rows, threads=128) as r:
            acc = T.alloc_fragment(1, "float32")
            acc[0] = 0
            for k in T.serial(n):
                acc[0] += A[r, k] * A[r, k]
            acc[0] = T.sqrt(acc[0])  # every thread rescales its own copy once
            for j in T.Parallel(n):
                B[r, j] = A[r, j] / acc[0]

    return main


def test_scalar_fragment_read_modify_write(rng):
    a = rng.standard_normal((4, 64)).astype(np.float32)
    b = poison((4, 64))
    compile_cpu(scalar_fragment_kernel())(a, b)
    assert_close(b, f64(a) / np.sqrt((f64(a) ** 2).sum(1, keepdims=True)))
    src, _ = _sm90(scalar_fragment_kernel())
    assert re.search(r"float acc\[1\];", src), src


def test_range_branches_in_a_warp_specialized_kernels_consumers():
    """In a warp-specialized kernel the epilogue runs on the consumer threads (the producers
    are launched above them): a branch over consumer warps there gets its own named barrier,
    counting only its threads. (Outside the role split a range would also hold for the
    producer threads: such branches get none, KernelBarriers::producers_above.)"""
    M = N = K = 256

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            row = T.alloc_shared((128,), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // 64, num_stages=2):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 128, bx * 128])
            if T.get_thread_binding() >= 64:
                for i in T.Parallel(128):
                    row[i] = A[by * 128 + i, 0]
                for i in T.Parallel(128):
                    C[by * 128 + i, bx * 128] = row[127 - i]

    k = tilelang.lower(main, target="cuda -arch=sm_90a")
    assert any("warp-specialized" in r for r in k.remarks), k.remarks
    src = k.kernel_source
    branch = src[src.index("if ((tx >= 64))"):]
    assert "tl::named_barrier_sync(2, 64);" in branch and "__syncthreads" not in branch, branch
