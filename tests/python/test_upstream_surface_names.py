"""The rest of upstream TileLang 0.1.15's ``tilelang.language`` names: T.fmul, T.inc_max_nreg /
T.dec_max_nreg, T.named_barrier_arrive, T.WarpSpecialize, T.get_mma_micro_size work as
upstream's; the names this compiler does not build (Blackwell instructions, clusters, the
instruction-level API, sparse GEMMs) are refused at the user's line with the reason.
Results checked against numpy (on the CPU target, and on CUDA in the suite's CUDA run);
CUDA code read from the sm_90a source (no GPU needed)."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangCompileError

from conftest import assert_close, compile_cpu, marker_line, poison, rand


def cuda_source(func):
    lowered, _, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered).code


def names_upstream_exports():
    """Every name of upstream 0.1.15's T surface that earlier sessions found missing here."""
    return ["fmul", "inc_max_nreg", "dec_max_nreg", "named_barrier_arrive", "WarpSpecialize", "WarpSpecializeFrame",
            "get_mma_micro_size", "tcgen05_gemm", "alloc_tmem", "ClusterKernel", "cluster_sync", "TensorCoreIntrinEmitter",
            "ptx_wgmma_ss", "warpgroup_arrive", "gemm_sp", "wgmma_gemm_sp", "tma_load", "copy_cluster",
            # the forty-third session's comparison with the wheel's whole surface
            "add2", "sub2", "mul2", "fma2", "max2", "min2", "abs2", "extract_lane", "inline", "meta_class",
            "make_tensor_from_addr", "PrimFunc", "JITFunc", "Shuffle", "WSRole", "KernelLaunchFrame", "allocate",
            "ptx_wait_barrier", "mma_fill", "vscale"]


def test_every_name_is_there():
    missing = [n for n in names_upstream_exports() if not hasattr(T, n)]
    assert not missing


def fmul_then_add(n=256, dtype="float32"):
    @T.prim_func
    def main(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype), Z: T.Tensor((n,), dtype), O: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=128):
            for i in T.Parallel(n):
                O[i] = T.fmul(X[i], Y[i]) + Z[i]

    return main


def test_fmul_rounds_the_product_before_the_add(rng):
    """Under fast math (-ffp-contract=fast on the CPU) a * b + c may become one fma; T.fmul's
    product is rounded first, so the result is the two-rounding one bit for bit."""
    x, y, z = (rng.standard_normal(256).astype(np.float32) for _ in range(3))
    o = poison((256,))
    kernel = tilelang.compile(fmul_then_add(), target="cpu", compile_flags=["--use_fast_math"])
    kernel(x, y, z, o)
    two_roundings = (x * y).astype(np.float32) + z
    fused = (x.astype(np.float64) * y + z).astype(np.float32)
    assert (two_roundings != fused).any()  # the inputs tell the two apart
    assert np.array_equal(o, two_roundings)


def test_fmul_of_half_values(rng):
    x, y, z = (rand(rng, (256,), "float16") for _ in range(3))
    o = poison((256,), "float16")
    compile_cpu(fmul_then_add(dtype="float16"))(x, y, z, o)
    assert_close(o, (x.astype(np.float32) * y.astype(np.float32)).astype(np.float16).astype(np.float64) + z, "float16")


def test_fmul_on_cuda_is_an_unfused_multiply():
    src = cuda_source(fmul_then_add())
    assert "tl::fmul(" in src


def test_fmul_takes_floats():
    def build():
        @T.prim_func
        def main(X: T.Tensor((128,), "int32")):
            with T.Kernel(1, threads=128):
                for i in T.Parallel(128):
                    X[i] = T.fmul(X[i], X[i])  # ERR-HERE

        return main

    with pytest.raises(TileLangCompileError, match="T.fmul: takes floating-point values, got int32") as e:
        compile_cpu(build())
    assert e.value.line == marker_line(build)


def nreg(kind):
    @T.prim_func
    def main(X: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            with T.ws(0):
                if kind == "short":
                    T.dec_max_nreg(40)
                else:
                    T.set_max_nreg(40, 0)
                X[T.get_thread_binding()] = 1.0
            with T.ws(1):
                if kind == "short":
                    T.inc_max_nreg(232)
                else:
                    T.set_max_nreg(232, 1)
                X[T.get_thread_binding()] = 2.0

    return main


def test_inc_and_dec_max_nreg_are_set_max_nreg():
    assert cuda_source(nreg("short")) == cuda_source(nreg("long"))
    x = poison((256,))
    compile_cpu(nreg("short"))(x)
    assert x.tolist() == [1.0] * 128 + [2.0] * 128


def arrive_then_sync():
    """Warpgroup 1 writes its half and arrives; warpgroup 0 waits for it, then reads it."""

    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding()
            if tx >= 128:
                s[tx - 128] = X[tx] * 2.0
                T.named_barrier_arrive(1, 256)  # ERR-HERE
            else:
                T.sync_threads(1, 256)
                Y[tx] = s[127 - tx]

    return main


def test_named_barrier_arrive_is_bar_arrive_on_cuda():
    src = cuda_source(arrive_then_sync())
    assert "tl::__named_barrier_arrive(1, 256)" in src
    # the consumers' wait stays the program's (1, 256), not a barrier of their own 128
    assert "tl::named_barrier_sync(1, 256)" in src and "named_barrier_sync(1, 128)" not in src


@pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") != "1", reason="runs on the CUDA target only")
def test_named_barrier_arrive_hands_over_on_cuda(rng):
    """The consumers' T.sync_threads(1, 256) waits for the producer's 128 arrivals (kept as
    written: it is not the consumers' own barrier), so they read what the producer wrote."""
    x, y = rand(rng, (256,)), poison((128,))
    compile_cpu(arrive_then_sync())(x, y)
    assert_close(y, 2.0 * x[128:][::-1])


@pytest.mark.cpu_target
def test_named_barrier_arrive_hands_over_on_the_cpu(rng):
    """On the CPU the two branches meet at the named barrier, so they run as roles at the
    same time (the consumer branch, second in the program, waits for the producer's arrivals)."""
    x, y = rand(rng, (256,)), poison((128,))
    compile_cpu(arrive_then_sync())(x, y)
    assert_close(y, 2.0 * x[128:][::-1])


def arrive_in_a_loop():
    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding()
            for r in T.serial(2):
                if tx >= 128:
                    s[tx - 128] = X[tx] * r
                    T.named_barrier_arrive(1, 256)  # ERR-HERE
                else:
                    T.sync_threads(1, 256)
                    Y[tx] = s[127 - tx]

    return main


@pytest.mark.cpu_target
def test_named_barrier_arrive_outside_roles_is_refused_on_the_cpu():
    """Inside a loop the branches are not roles (they would join at every round): the
    arrival is refused at its line, not run in an order that may be wrong."""
    with pytest.raises(TileLangCompileError, match="T.named_barrier_arrive outside warpgroup roles") as e:
        compile_cpu(arrive_in_a_loop())
    assert e.value.line == marker_line(arrive_in_a_loop)


@pytest.mark.parametrize("bad,match", [("T.named_barrier_arrive(0, 128)", r"barrier_id must be in \[1, 15\]"),
                                       ("T.named_barrier_arrive(1, 100)", "positive multiple of 32")])
def test_named_barrier_arrive_checks_its_arguments(tmp_path, bad, match):
    from conftest import refusal

    src = f'''
import tilelang.language as T

@T.prim_func
def main(X: T.Tensor((128,), "float32")):
    with T.Kernel(1, threads=128):
        {bad}
'''
    err = refusal(tmp_path, src, match)
    assert err.line == 7


def test_warp_specialize_is_ws():
    assert T.WarpSpecialize is T.ws


def test_mma_micro_size():
    assert T.get_mma_micro_size("float16") == (16, 16, 16)
    assert T.get_mma_micro_size("bfloat16") == (16, 16, 16)
    assert T.get_mma_micro_size("int8") == (16, 16, 32)
    assert T.get_mma_micro_size("float8_e4m3") == (16, 16, 32)


@pytest.mark.parametrize("call,reason", [
    ("T.tcgen05_gemm(A_s, A_s, C)", "Blackwell"),
    ("T.alloc_tmem([128, 128], 'float32')", "Blackwell"),
    ("T.copy_cluster(A_s, A_s)", "cluster API"),
    ("T.warpgroup_arrive()", "instruction-level API"),
    ("T.wgmma_gemm_sp(A_s, A_s, A_s, C)", "2:4 sparse"),
    ("T.sync_grid()", "cooperative launch"),
    ("T.tvm_mma_sync(A_s, 0, A_s, 0, A_s, 0, C, 0)", "TVM-internal"),
    ("T.annotate_ws_schedule(None)", "warp-specialization schedule"),
    ("T.ptx_arrive_barrier(0)", "by barrier id"),
    ("T.KernelLaunchFrame.Current()", "front-end frames"),
])
def test_names_not_built_here_say_why_at_the_line(tmp_path, call, reason):
    from conftest import refusal

    src = f'''
import tilelang.language as T

@T.prim_func
def main(A: T.Tensor((64, 64), "float16"), C: T.Tensor((64, 64), "float32")):
    with T.Kernel(1, threads=128):
        A_s = T.alloc_shared((64, 64), "float16")
        {call}
'''
    name = call.split("(")[0]
    err = refusal(tmp_path, src, f"{name} .*{reason}")
    assert err.line == 8


def test_compiler_barriers_keep_off_the_programs_ids():
    """The program meets at named barrier 2 itself; the barrier the compiler adds inside the
    `tx < 64` branch (its threads exchange data through s) takes another id."""

    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((64,), "float32")
            tx = T.get_thread_binding()
            T.sync_threads(2, 256)
            if tx < 64:
                s[tx] = X[tx] + 1.0
                Y[tx] = s[63 - tx]
            else:
                Y[tx] = X[tx]

    src = cuda_source(main)
    assert "tl::named_barrier_sync(2, 256)" in src
    inside = [ln.strip() for ln in src.splitlines() if "named_barrier_sync(" in ln and ", 64)" in ln]
    assert inside and all("named_barrier_sync(2," not in ln for ln in inside), inside
    x, y = np.arange(256, dtype=np.float32), poison((256,))
    compile_cpu(main)(x, y)
    assert_close(y, np.concatenate([x[:64][::-1] + 1.0, x[64:]]))


def meet_at_block_barrier(consumers_first=False):
    """Both branches meet at barrier 1 of the whole block (T.sync_threads(1)): the producer
    after writing, the consumers before reading."""

    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=256):
            s = T.alloc_shared((128,), "float32")
            tx = T.get_thread_binding()
            if consumers_first:
                if tx < 128:
                    T.sync_threads(1)  # ERR-HERE
                    Y[tx] = s[127 - tx]
                else:
                    s[tx - 128] = X[tx] * 2.0
                    T.sync_threads(1)
            else:
                if tx >= 128:
                    s[tx - 128] = X[tx] * 2.0
                    T.sync_threads(1)
                else:
                    T.sync_threads(1)
                    Y[tx] = s[127 - tx]

    return main


@pytest.mark.parametrize("consumers_first", [False, True])
def test_a_block_wide_named_barrier_in_both_branches_is_kept(consumers_first):
    """Neither side becomes a barrier of its own half (the hand-over would be lost)."""
    src = cuda_source(meet_at_block_barrier(consumers_first))
    assert src.count("tl::named_barrier_sync_all(1)") == 2, src


@pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") != "1", reason="runs on the CUDA target only")
@pytest.mark.parametrize("consumers_first", [False, True])
def test_a_block_wide_named_barrier_hands_over_on_cuda(rng, consumers_first):
    x, y = rand(rng, (256,)), poison((128,))
    compile_cpu(meet_at_block_barrier(consumers_first))(x, y)
    assert_close(y, 2.0 * x[128:][::-1])


@pytest.mark.cpu_target
def test_a_named_barrier_across_branches_is_refused_on_the_cpu():
    """Lockstep runs the branches one after the other: with the consumers first they would
    read before the producer wrote. Refused at the barrier's line, whichever the order."""
    with pytest.raises(TileLangCompileError, match="a named barrier that this branch on the thread index meets "
                                                   "with threads outside it") as e:
        compile_cpu(meet_at_block_barrier(consumers_first=True))
    assert e.value.line == marker_line(meet_at_block_barrier)
