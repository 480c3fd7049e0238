"""Kernels that program Hopper's barriers themselves: T.alloc_barrier, `with T.ws(i):`,
T.mbarrier_wait_parity / T.mbarrier_arrive (and upstream's T.barrier_wait / _arrive),
T.tma_copy. On the CPU target the lockstep emulation runs them in program order with
mbarriers as counters (checked against numpy), T.ws blocks that wait on each other as roles
at the same time (test_warpgroup_roles_cpu.py); a wait that can never be released is an
error naming its line. On sm_90a the generated code is checked compile-only: the
warpgroups split into a producer and the consumer threads, mbarriers initialized once, TMA
loads expected on the program's barriers."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangCompileError, TileLangRuntimeError
from tilelang.jit.cuda_backend import _search_dirs

from conftest import assert_close, compile_cpu, f64, marker_line, poison, rand, refusal

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


def cuda_source(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def staged_gemm(M, N, K, bM=64, bN=64, bK=32, stages=2, dtype="float32", accum="float32"):
    """C = A @ B with `stages` stages: warpgroup 1 loads each stage by TMA onto a "full"
    barrier after waiting on its "empty" one, warpgroup 0 waits on "full", multiplies and
    arrives on "empty" (upstream's barrier-pipelined warp-specialized GEMM, in our words)."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((stages, bM, bK), dtype)
            B_s = T.alloc_shared((stages, bK, bN), dtype)
            acc = T.alloc_fragment((bM, bN), accum)
            bars = T.alloc_barrier([128] * (2 * stages))  # full[0..s), then empty[0..s)
            with T.ws(0):
                T.clear(acc)
            for k in range(T.ceildiv(K, bK)):
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


def handoff_gemm(M, N, K, loader=0, bM=64, bN=64, bK=32, num_stages=0, dtype="float32", wait_after_loop=False):
    """C = A @ B through one A/B tile pair handed between the warpgroups by two barriers,
    `loader` loading and the other multiplying (upstream's copy_X_gemm_Y examples), in a
    T.Pipelined loop: as written with num_stages 0 or 1, with num_stages >= 2 one tile pair
    and barrier pair per stage (test_ws_staged_pipelines.py). With `wait_after_loop` the
    loader waits once more on "consumed" after the loop."""
    mma = 1 - loader

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=256) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            acc = T.alloc_fragment((bM, bN), "float32")
            loaded = T.alloc_barrier(arrive_count=128)
            consumed = T.alloc_barrier(arrive_count=128)
            with T.ws(mma):
                T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=num_stages):
                with T.ws(loader):
                    T.barrier_wait(consumed, (k + 1) % 2)
                    T.tma_copy(A[by * bM, k * bK], A_s, barrier=loaded)
                    T.tma_copy(B[k * bK, bx * bN], B_s, barrier=loaded)
                    T.barrier_arrive(loaded)
                with T.ws(mma):
                    T.barrier_wait(loaded, k % 2)
                    T.gemm(A_s, B_s, acc)
                    T.barrier_arrive(consumed)
            if wait_after_loop:  # a compile-time branch
                with T.ws(loader):
                    T.barrier_wait(consumed, (T.ceildiv(K, bK) + 1) % 2)
            with T.ws(mma):
                T.copy(acc, C[by * bM, bx * bN])

    return main


# float32 GEMMs run as tf32 mma.sync on CUDA, whose ldmatrix-swizzled operands TMA does not
# write (refused there, with that reason): CPU only. float16 runs on both (the suite's CUDA
# run compiles these for the GPU); its tensors' rows must be multiples of 16 bytes for TMA.
F32_CPU = pytest.mark.cpu_target
GEMM_DTYPES = [pytest.param("float32", marks=F32_CPU), "float16"]


@pytest.mark.parametrize("M,N,K,stages,dtype", [
    pytest.param(128, 192, 96, 2, "float32", marks=F32_CPU), pytest.param(64, 64, 160, 3, "float32", marks=F32_CPU),
    pytest.param(100, 70, 50, 2, "float32", marks=F32_CPU),
    (128, 192, 96, 2, "float16"), (64, 64, 160, 3, "float16"), (100, 72, 56, 2, "float16")])
def test_staged_gemm_on_cpu(rng, M, N, K, stages, dtype):
    a, b = rand(rng, (M, K), dtype), rand(rng, (K, N), dtype)
    c = poison((M, N), dtype)
    compile_cpu(staged_gemm(M, N, K, stages=stages, dtype=dtype))(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype)


@pytest.mark.parametrize("dtype", GEMM_DTYPES)
@pytest.mark.parametrize("loader", [0, 1])
@pytest.mark.parametrize("num_stages", [0, 2])
def test_handoff_gemm_on_cpu(rng, loader, num_stages, dtype):
    M, N, K = 128, 64, 96
    a, b = rand(rng, (M, K), dtype), rand(rng, (K, N), dtype)
    c = poison((M, N), dtype)
    k = compile_cpu(handoff_gemm(M, N, K, loader=loader, num_stages=num_stages, dtype=dtype))
    k(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype)
    # a second call starts from fresh barriers
    a2 = rand(rng, (M, K), dtype)
    k(a2, b, c)
    assert_close(c, f64(a2) @ f64(b), dtype)


def one_group_gemm(M, N, K, bM=64, bN=64, bK=32, threads=128, dtype="float32"):
    """C = A @ B on one set of threads without T.ws: each k-tile loaded by T.tma_copy onto a
    barrier every thread arrives on, then waited on (upstream's tma_copy GEMM test's
    pattern), in a T.Pipelined loop that runs as written."""

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), dtype)):
        with T.Kernel(T.ceildiv(N, bN), T.ceildiv(M, bM), threads=threads) as (bx, by):
            A_s = T.alloc_shared((bM, bK), dtype)
            B_s = T.alloc_shared((bK, bN), dtype)
            acc = T.alloc_fragment((bM, bN), "float32")
            bar_a = T.alloc_barrier(threads)
            bar_b = T.alloc_barrier(threads)
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, bK), num_stages=2):
                T.tma_copy(A[by * bM, k * bK], A_s, barrier=bar_a)
                T.barrier_arrive(bar_a)
                T.tma_copy(B[k * bK, bx * bN], B_s, barrier=bar_b)
                T.barrier_arrive(bar_b)
                T.mbarrier_wait_parity(bar_a, k % 2)
                T.mbarrier_wait_parity(bar_b, k % 2)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bM, bx * bN])

    return main


@pytest.mark.parametrize("dtype", GEMM_DTYPES)
def test_one_group_gemm_on_cpu(rng, dtype):
    M, N, K = 128, 128, 160
    a, b = rand(rng, (M, K), dtype), rand(rng, (K, N), dtype)
    c = poison((M, N), dtype)
    compile_cpu(one_group_gemm(M, N, K, dtype=dtype))(a, b, c)
    assert_close(c, f64(a) @ f64(b), dtype)


def _consumer_first():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float32"), C: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((64, 64), "float32")
            ready = T.alloc_barrier(128)
            with T.ws(1):
                T.mbarrier_wait_parity(ready, 0)
                T.copy(A_s, C)
            with T.ws(0):
                T.tma_copy(A, A_s, barrier=ready)
                T.mbarrier_arrive(ready)

    return main


@pytest.mark.cpu_target  # the CPU's roles; (not yet run as a T.ws kernel on a GPU)
def test_wait_released_later_in_program_order_runs():
    """The consumer's block comes first: on the CPU the two T.ws blocks run at the same time
    as warpgroup roles (cpu/emulate_roles.cc), as on a GPU; lockstep alone stopped at the wait."""
    a = np.arange(64 * 64, dtype=np.float32).reshape(64, 64)
    c = poison((64, 64))
    compile_cpu(_consumer_first())(a, c)
    assert_close(c, a)


def _bytes_never_arrive():
    @T.prim_func
    def main(C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            bar = T.alloc_barrier(128)
            T.mbarrier_expect_tx(bar, 512)  # nothing ever delivers these bytes
            T.mbarrier_arrive(bar)
            T.mbarrier_wait_parity(bar, 0)  # ERR-HERE
            tx = T.get_thread_binding()
            C[tx] = 1.0

    return main


@pytest.mark.cpu_target  # the lockstep emulation's diagnosis; on a GPU the wait would hang
def test_expected_bytes_that_never_arrive_fail_the_wait():
    k = compile_cpu(_bytes_never_arrive())
    with pytest.raises(TileLangRuntimeError, match=rf"line {marker_line(_bytes_never_arrive)} can never complete"):
        k(poison((128,)))


def test_phases_and_elected_thread_on_cpu():
    """Arrivals of every thread that runs them count; a phase completes at its count;
    T.shuffle_elect picks one thread per group."""

    @T.prim_func
    def main(C: T.Tensor((4,), "int32")):
        with T.Kernel(1, threads=256):
            bar = T.alloc_barrier([256, 64])
            cnt = T.alloc_shared((4,), "int32")
            tx = T.get_thread_binding()
            if tx == 0:
                for i in T.serial(4):
                    cnt[i] = 0
            T.mbarrier_arrive(bar[0])  # 256 arrivals: phase 0 completes
            T.mbarrier_wait_parity(bar[0], 0)
            if tx < 64:
                T.mbarrier_arrive(bar[1])
            T.mbarrier_wait_parity(bar[1], 0)
            T.mbarrier_wait_parity(bar[1], 1 - 1)  # the same completed phase again
            if T.shuffle_elect(128):
                T.atomic_add(cnt[0], 1)
            if T.shuffle_elect(0):
                T.atomic_add(cnt[1], 1)
            T.sync_threads()
            if tx == 0:
                for i in T.serial(4):
                    C[i] = cnt[i]

    c = np.full((4,), -1, np.int32)
    compile_cpu(main)(c)
    assert c.tolist() == [2, 1, 0, 0]


# ---- front-end errors, at the user's line


def _expect_error(build, match):
    with pytest.raises(TileLangCompileError, match=match) as e:
        compile_cpu(build())
    return e


def test_arrive_count_must_be_positive():
    def build():
        @T.prim_func
        def main(C: T.Tensor((128,), "float32")):
            with T.Kernel(1, threads=128):
                bars = T.alloc_barrier([128, 0])  # noqa: F841
        return main

    _expect_error(build, r"arrive count must be in \[1, ")


def test_tma_load_needs_a_barrier():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64, 64), "float32")):
            with T.Kernel(1, threads=256):
                A_s = T.alloc_shared((64, 64), "float32")
                with T.ws(1):
                    T.tma_copy(A, A_s)
        return main

    _expect_error(build, "needs barrier=")


def test_barrier_ops_take_barriers():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                S = T.alloc_shared((2,), "uint64")
                T.mbarrier_arrive(S[0])
        return main

    _expect_error(build, "must come from T.alloc_barrier")


def test_whole_barrier_array_needs_an_index():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=128):
                bars = T.alloc_barrier([128, 128])
                T.mbarrier_wait_parity(bars, 0)
        return main

    _expect_error(build, r"holds 2 barriers; name one as bars\[i\]")


def test_ws_group_must_exist():
    def build():
        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=256):
                with T.ws(2):
                    A[0] = 1.0
        return main

    _expect_error(build, r"warpgroups 0..1")


# ---- CUDA, compile-only


@pytest.mark.parametrize("stages", [2, 3])
def test_staged_gemm_for_hopper(stages):
    src, remarks = cuda_source(staged_gemm(512, 512, 512, bM=128, bN=128, bK=64, stages=stages, dtype="float16"))
    assert src.count("tl::mbarrier_init(") == 2 * stages
    assert "tl::mbarrier_init_fence()" in src
    assert "tl::mbarrier_wait_parity(" in src and "tl::mbarrier_arrive(" in src
    assert src.count("tl::mbarrier_expect_tx(") == 2
    assert "tl::tma_load_3d(" in src or "tl::tma_load_2d(" in src
    assert "threadIdx.x >= 128" in src  # the producer warpgroup above the consumer threads
    assert any("programs its barriers (T.ws): automatic pipelining and warp specialization are off" in r
               for r in remarks), remarks
    assert not any("warp-specialized, " in r for r in remarks), remarks


@needs_cuda_compiler
@pytest.mark.parametrize("loader", [0, 1])
@pytest.mark.parametrize("num_stages", [0, 2])
def test_handoff_gemm_compiles_for_hopper(loader, num_stages):
    k = tilelang.compile(handoff_gemm(1024, 1024, 1024, loader=loader, bM=128, bN=128, bK=64, num_stages=num_stages,
                                      dtype="float16"),
                         target="cuda -arch=sm_90a")
    src, ptx = k.get_kernel_source(), k.get_ptx()
    assert "mbarrier.try_wait.parity" in ptx and "mbarrier.expect_tx" in ptx and "cp.async.bulk.tensor.2d" in ptx
    assert "wgmma.mma_async" in ptx
    # two barriers, one copy per stage with num_stages=2
    assert src.count("tl::mbarrier_init(") == (4 if num_stages == 2 else 2)
    assert "tl::mbarrier_wait_parity(" in src and "tl::mbarrier_arrive(" in src
    assert "tl::tma_load_" in src and "tl::mbarrier_expect_tx(" in src
    assert "wgmma" in src


@needs_cuda_compiler
def test_staged_gemm_compiles_for_hopper():
    k = tilelang.compile(staged_gemm(1024, 1024, 1024, bM=128, bN=128, bK=64, dtype="float16"),
                         target="cuda -arch=sm_90a")
    assert "tl::tma_load_" in k.get_kernel_source()
    assert "cp.async.bulk.tensor" in k.get_ptx()


@needs_cuda_compiler
def test_mbarriers_alone_compile_for_sm80():
    @T.prim_func
    def main(C: T.Tensor((256,), "float32")):
        with T.Kernel(2, threads=128) as bx:
            bar = T.alloc_barrier(128)
            tx = T.get_thread_binding()
            T.mbarrier_arrive(bar)
            T.mbarrier_wait_parity(bar, 0)
            C[bx * 128 + tx] = 1.0

    k = tilelang.compile(main, target="cuda -arch=sm_80")
    ptx = k.get_ptx()
    assert "mbarrier.init" in ptx and "mbarrier.arrive" in ptx and "mbarrier.test_wait.parity" in ptx
    assert "trap" not in ptx
    assert any("programs its own mbarriers" in r for r in k.get_remarks())


def test_one_group_tma_copy_waits_for_every_reader_first():
    src, remarks = cuda_source(one_group_gemm(1024, 1024, 1024, bM=128, bN=128, bK=32, dtype="float16"))
    loop = src[src.index("for (int32_t k"):]
    # each load: after the fence and a block barrier (the previous GEMM's readers), by one thread
    assert loop.count("tl::fence_proxy_async_shared();\n    __syncthreads();\n    if ((tx == 0)) {\n"
                      "      tl::mbarrier_expect_tx(") == 2, loop
    assert any("programs its own mbarriers" in r for r in remarks), remarks


def test_tma_copy_needs_hopper():
    func = handoff_gemm(256, 256, 256, dtype="float16")
    with pytest.raises(Exception, match="T.tma_copy needs TMA"):
        cuda_source(func, arch="sm_80")


def test_tile_ops_outside_ws_are_refused_on_cuda():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((64, 64), "float16")
            bar = T.alloc_barrier(128)
            T.copy(A, A_s)
            with T.ws(0):
                T.mbarrier_arrive(bar)
                T.copy(A_s, C)

    with pytest.raises(Exception, match="tile operations go inside one"):
        cuda_source(main)


def test_tile_work_in_both_warpgroups_is_refused_on_cuda():
    @T.prim_func
    def main(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float16")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((64, 64), "float16")
            with T.ws(0):
                T.copy(A, A_s)
            with T.ws(1):
                T.copy(A_s, C)

    with pytest.raises(Exception, match="both warpgroups"):
        cuda_source(main)


def test_stage_gemms_elsewhere_keep_mma_sync_until_checked():
    """A GEMM on a stage X[s, :, :] of a 3-D tile outside a kernel that programs its barriers
    keeps the mma.sync path (the one the H200 runs have checked); tl.enable_wgmma_stages
    opts in to wgmma there."""

    @T.prim_func
    def main(A: T.Tensor((128, 64), "float16"), B: T.Tensor((64, 128), "float16"), C: T.Tensor((128, 128), "float32")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((2, 128, 64), "float16")
            B_s = T.alloc_shared((2, 64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.copy(A, A_s[1, :, :])
            T.copy(B, B_s[1, :, :])
            T.clear(acc)
            T.gemm(A_s[1, :, :], B_s[1, :, :], acc)
            T.copy(acc, C)

    remarks = "\n".join(tilelang.lower(main, target="cuda -arch=sm_90a").remarks)
    assert "ldmatrix + mma.sync" in remarks, remarks
    remarks = "\n".join(tilelang.lower(main, target="cuda -arch=sm_90a",
                                       pass_configs={"tl.enable_wgmma_stages": True}).remarks)
    assert "wgmma" in remarks and "ldmatrix + mma.sync" not in remarks, remarks


def cp_async_handoff(M=64, N=64, K=256, bK=32, dtype="float16"):
    """C = A @ B with the loader warpgroup's threads copying each A/B tile pair 16 bytes (8
    elements, as upstream counts them) at a time with T.ptx_cp_async and signalling with T.cp_async_barrier_noinc (each arrival lands
    with its copies), as upstream's hand-pipelined sparse MLA forward loads its rows."""
    chunks_a, chunks_b = M * bK // 8, bK * N // 8  # 16-byte chunks of float16

    @T.prim_func
    def main(A: T.Tensor((M, K), dtype), B: T.Tensor((K, N), dtype), C: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=256):
            A_s = T.alloc_shared((M, bK), dtype)
            B_s = T.alloc_shared((bK, N), dtype)
            acc = T.alloc_fragment((M, N), "float32")
            loaded = T.alloc_barrier(arrive_count=128)
            consumed = T.alloc_barrier(arrive_count=128)
            tx = T.get_thread_binding()
            with T.ws(0):
                T.clear(acc)
            for k in T.serial(K // bK):
                with T.ws(1):
                    T.barrier_wait(consumed, (k + 1) % 2)
                    for c in T.serial(chunks_a // 128):
                        f = c * 128 + (tx - 128)
                        T.ptx_cp_async(T.access_ptr(A_s[f // (bK // 8), f % (bK // 8) * 8], "w"),
                                       T.access_ptr(A[f // (bK // 8), k * bK + f % (bK // 8) * 8], "r"), 8)
                    for c in T.serial(chunks_b // 128):
                        f = c * 128 + (tx - 128)
                        T.ptx_cp_async(T.access_ptr(B_s[f // (N // 8), f % (N // 8) * 8], "w"),
                                       T.access_ptr(B[k * bK + f // (N // 8), f % (N // 8) * 8], "r"), 8)
                    T.cp_async_barrier_noinc(loaded)
                with T.ws(0):
                    T.barrier_wait(loaded, k % 2)
                    T.gemm(A_s, B_s, acc)
                    T.barrier_arrive(consumed)
            with T.ws(0):
                T.copy(acc, C)

    return main


def test_cp_async_handoff_matches_numpy(rng):
    a, b = rand(rng, (64, 256), "float16"), rand(rng, (256, 64), "float16")
    c = poison((64, 64))
    compile_cpu(cp_async_handoff())(a, b, c)
    assert_close(c, f64(a) @ f64(b), "float16")


def predicated_cp_async(n_elems, dtype="float16"):
    """Each of 64 threads copies `n_elems` elements of X into S with T.ptx_cp_async, those with
    tx % 3 == 0 under a false predicate (zeros instead), then waits on the copies' barrier."""
    N = 64 * n_elems

    @T.prim_func
    def main(X: T.Tensor((N,), dtype), Y: T.Tensor((N,), dtype)):
        with T.Kernel(1, threads=64):
            S = T.alloc_shared((N,), dtype)
            landed = T.alloc_barrier(arrive_count=64)
            tx = T.get_thread_binding()
            T.ptx_cp_async(T.access_ptr(S[tx * n_elems], "w"), T.access_ptr(X[tx * n_elems], "r"), n_elems,
                           predicate=tx % 3 != 0)
            T.cp_async_barrier_noinc(landed)
            T.barrier_wait(landed, 0)
            for i in T.Parallel(N):
                Y[i] = S[i]

    return main


@pytest.mark.parametrize("n_elems,dtype", [(8, "float16"), (4, "float16"), (2, "float16"), (4, "float32")])
def test_ptx_cp_async_counts_elements_and_zero_fills(rng, n_elems, dtype):
    x = rand(rng, (64 * n_elems,), dtype)
    y = poison((64 * n_elems,), dtype)
    compile_cpu(predicated_cp_async(n_elems, dtype))(x, y)
    want = x.reshape(64, n_elems).copy()
    want[np.arange(64) % 3 == 0] = 0
    assert_close(y, want.reshape(-1), dtype)


def test_ptx_cp_async_source_has_the_bytes():
    src, _ = cuda_source(predicated_cp_async(8))
    assert "tl::ptx_cp_async(" in src and ", 16, ((tx % 3) != 0))" in src.replace("tl::floormod(tx, 3)", "(tx % 3)"), src


def test_cp_async_handoff_cuda_source():
    src, remarks = cuda_source(cp_async_handoff())
    assert src.count("tl::ptx_cp_async(") == 2 and "tl::mbarrier_cp_async_arrive((&loaded[0]));" in src, src


@pytest.mark.parametrize("body, message", [
    ("T.ptx_cp_async(T.access_ptr(S[0], 'w'), T.access_ptr(X[0], 'r'), 6)", "are 4, 8 or 16, got 6"),
    ("T.ptx_cp_async(T.access_ptr(S[0], 'w'), T.access_ptr(X[0], 'r'), 16)", "are 4, 8 or 16, got 16"),
    ("T.ptx_cp_async(S[0], T.access_ptr(X[0], 'r'), 8)", "dst must be an address"),
    ("T.cp_async_barrier_noinc(S[0])", "the barrier must come from T.alloc_barrier"),
])
def test_cp_async_refusals_point_at_the_line(tmp_path, body, message):
    error = refusal(tmp_path,
                    "import tilelang.language as T\n\n"
                    "@T.prim_func\n"
                    "def k(X: T.Tensor((64,), 'float16')):\n"
                    "    with T.Kernel(1, threads=128) as bx:\n"
                    "        S = T.alloc_shared((64,), 'float16')\n"
                    f"        {body}\n", message)
    assert error.line == 7


def two_barriers_in_a_row():
    """Barriers allocated one after another (no T.ws): a hand-over through shared memory."""

    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((128,), "float32")
            full = T.alloc_barrier(arrive_count=128)
            spare = T.alloc_barrier(arrive_count=[128, 128])
            tx = T.get_thread_binding()
            s[tx] = A[tx]
            T.barrier_arrive(full)
            T.barrier_wait(full, 0)
            B[tx] = s[127 - tx] * 2.0
            T.barrier_arrive(spare[1])

    return main


def test_barriers_allocated_together_are_initialized_together():
    # one thread's inits, one fence, one block barrier for the run (upstream's form), not one
    # fence and block barrier per T.alloc_barrier
    src = tilelang.lower(two_barriers_in_a_row(), target="cuda -arch=sm_90a").kernel_source
    assert src.count("tl::mbarrier_init(") == 3 and src.count("tl::mbarrier_init_fence()") == 1, src
    init = src[src.index("tl::mbarrier_init("):src.index("tl::mbarrier_init_fence()")]
    assert "spare" in init and "__syncthreads" not in init, src
    a = np.random.default_rng().standard_normal(128).astype(np.float32)
    b = np.full(128, np.nan, np.float32)
    compile_cpu(two_barriers_in_a_row())(a, b)
    np.testing.assert_allclose(b, a[::-1].astype(np.float64) * 2, rtol=0)


def gathered_rows_sum(rows=256, n_steps=6, prologue=True, epilogue=False):
    """Out = sum over the steps of X[offs[s]:offs[s] + 64, :], the offsets written into shared
    memory by all 256 threads before the role split (minference's index lists): the
    producer's TMA addresses read entries the consumers' threads wrote, and the other way
    round. With prologue=False the offsets come straight from the tensor; with epilogue=True
    the consumers leave the sum in a shared tile that all 256 threads store after the split."""

    @T.prim_func
    def main(Idx: T.Tensor((8,), "int32"), X: T.Tensor((rows, 64), "float32"), Out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            offs = T.alloc_shared((256,), "int32")
            Xs = T.alloc_shared((2, 64, 64), "float32")
            res = T.alloc_shared((64, 64), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            mbars = T.alloc_barrier([128] * 4)
            if prologue:
                for vi in T.Parallel(256):
                    offs[vi] = Idx[vi % 8]
            tid = T.get_thread_binding()
            if tid >= 128:
                for s in T.serial(n_steps):
                    k = offs[s] if prologue else Idx[s]
                    T.mbarrier_wait_parity(mbarrier=mbars[s % 2 + 2], parity=((s & 3) >> 1) ^ 1)
                    T.tma_copy(X[k:k + 64, :], Xs[s % 2, :, :], barrier=mbars[s % 2])
                    T.mbarrier_arrive(mbarrier=mbars[s % 2])
            else:
                T.fill(acc, 0)
                for s in T.serial(n_steps):
                    T.mbarrier_wait_parity(mbarrier=mbars[s % 2], parity=(s & 3) >> 1)
                    for i, j in T.Parallel(64, 64):
                        acc[i, j] += Xs[s % 2, i, j]
                    T.mbarrier_arrive(mbarrier=mbars[s % 2 + 2])
                if epilogue:
                    T.copy(acc, res)
                else:
                    T.copy(acc, Out)
            if epilogue:
                for i, j in T.Parallel(64, 64):
                    Out[i, j] = res[i, j]

    return main


@pytest.mark.parametrize("epilogue", [False, True])
def test_gathered_rows_sum_values(rng, epilogue):
    idx = np.array([0, 64, 192, 32, 128, 96, 160, 16], dtype=np.int32)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    out = poison((64, 64))
    tilelang.compile(gathered_rows_sum(epilogue=epilogue))(idx, x, out)
    ref = sum(x[k:k + 64].astype(np.float64) for k in idx[:6])
    assert_close(out, ref)


def test_shared_writes_before_the_role_split_reach_both_warpgroups():
    """The prologue's T.Parallel is the block's work: the consumer warpgroup (the kernel's
    threads) does all of it, and the producer, which reads the offsets for its TMA addresses,
    waits for it at a barrier over all 256 threads that both warpgroups meet (upstream: a
    __syncthreads before the split). Without the prologue there is nothing to publish."""
    src, remarks = cuda_source(gathered_rows_sum())
    producer, consumer = src.split("} else {", 1)
    producer = producer[producer.index("if ((threadIdx.x >= 128))"):]
    assert "offs[(" not in producer, producer  # (spread as the kernel's threads, it wrote past offs)
    assert producer.index("tl::named_barrier_sync(15, 256);") < producer.index("= offs[s]"), producer
    assert consumer.index("offs[(") < consumer.index("tl::named_barrier_sync(15, 256);"), consumer
    assert any("published to both warpgroups by a barrier over all 256 threads" in r for r in remarks), remarks
    assert any("runs on the consumer warpgroup's threads, which do all of its iterations" in r for r in remarks)
    src, remarks = cuda_source(gathered_rows_sum(prologue=False))
    assert ", 256);" not in src and not any("published to both" in r for r in remarks), src


def test_shared_writes_in_a_role_reach_statements_after_the_split():
    """The consumers' result tile, stored by the block after the T.ws blocks: the store is
    the consumers' (a T.Parallel), behind a second barrier over both warpgroups."""
    src, _ = cuda_source(gathered_rows_sum(epilogue=True))
    producer, consumer = src.split("} else {", 1)
    assert producer.count("tl::named_barrier_sync(15, 256);") == 2 and "Out[" not in producer, producer
    assert consumer.count("tl::named_barrier_sync(15, 256);") == 2, consumer
    assert consumer.rindex("tl::named_barrier_sync(15, 256);") < consumer.index("Out["), consumer
    assert consumer.index("res[") < consumer.rindex("tl::named_barrier_sync(15, 256);"), consumer


def rounds_of_gathered_rows(rounds=3, n_steps=2):
    """Out = sum over rounds r and steps s of X[offs_r[s]:...+64, :], each round's offsets
    written into shared memory by the block inside the loop that also holds the T.ws blocks:
    each round needs the barrier over both warpgroups after its offsets, and before the
    next round overwrites the offsets the producer may still be reading."""

    @T.prim_func
    def main(Idx: T.Tensor((rounds, 8), "int32"), X: T.Tensor((256, 64), "float32"), Out: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=256) as bx:
            offs = T.alloc_shared((8,), "int32")
            Xs = T.alloc_shared((2, 64, 64), "float32")
            acc = T.alloc_fragment((64, 64), "float32")
            mbars = T.alloc_barrier([128] * 4)
            tid = T.get_thread_binding()
            for r in T.serial(rounds):
                for vi in T.Parallel(8):
                    offs[vi] = Idx[r, vi]
                if tid >= 128:
                    for s in T.serial(n_steps):
                        t = r * n_steps + s
                        k = offs[s]
                        T.mbarrier_wait_parity(mbarrier=mbars[t % 2 + 2], parity=((t & 3) >> 1) ^ 1)
                        T.tma_copy(X[k:k + 64, :], Xs[t % 2, :, :], barrier=mbars[t % 2])
                        T.mbarrier_arrive(mbarrier=mbars[t % 2])
                else:
                    if r == 0:
                        T.fill(acc, 0)
                    for s in T.serial(n_steps):
                        t = r * n_steps + s
                        T.mbarrier_wait_parity(mbarrier=mbars[t % 2], parity=(t & 3) >> 1)
                        for i, j in T.Parallel(64, 64):
                            acc[i, j] += Xs[t % 2, i, j]
                        T.mbarrier_arrive(mbarrier=mbars[t % 2 + 2])
                    if r == rounds - 1:
                        T.copy(acc, Out)

    return main


def test_rounds_of_gathered_rows_values(rng):
    idx = rng.integers(0, 193, size=(3, 8)).astype(np.int32)
    x = rng.standard_normal((256, 64)).astype(np.float32)
    out = poison((64, 64))
    tilelang.compile(rounds_of_gathered_rows())(idx, x, out)
    ref = sum(x[k:k + 64].astype(np.float64) for r in range(3) for k in idx[r, :2])
    assert_close(out, ref)


def test_a_loop_holding_both_gets_the_barriers_inside():
    src, _ = cuda_source(rounds_of_gathered_rows())
    producer, consumer = src.split("} else {", 1)
    producer = producer[producer.index("if ((threadIdx.x >= 128))"):]
    # per round: one barrier before the offsets are overwritten (the last round's readers are
    # done), one after they are written
    for role in (producer, consumer):
        loop = role[role.index("for (int32_t r"):]
        assert loop.count("tl::named_barrier_sync(15, 256);") == 2, role
    assert producer.rindex("tl::named_barrier_sync(15, 256);") < producer.index("= offs[s]"), producer
    first, second = (i for i in range(len(consumer)) if consumer.startswith("tl::named_barrier_sync(15, 256);", i))
    assert first < consumer.index("offs[") < second, consumer
