"""tl.loop_terms_apart (on by default; 0 turns it off): an address inside loops keeps
its loop terms apart, so that nvcc folds an unrolled loop's steps into immediate offsets.
CUDA prints a shared or global element's address as the address the loops start from plus
the loop terms (src/codegen/cuda/loop_addresses.h), and a 64-bit global offset widens its loop
terms and its other terms as two values (legalize-index-width). The gather below is the
shape of upstream's sparse MLA producers (rows picked by an index tensor, copied 16 bytes per
thread with T.ptx_cp_async in an unrolled loop). Results checked against numpy with the key
on and off (the CUDA run of the suite checks the CUDA code); the printed form read from the
sm_90a source; with a CUDA compiler, the source compiles."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

from conftest import compile_cpu, poison, rand

ON = {}  # (the default)
OFF = {"tl.loop_terms_apart": False}
HAVE_NVRTC, _ = _tl.find_cuda_compiler(_search_dirs())


def gather(rows=64, cols=576, dtype="bfloat16"):
    """Out[i, :] = KV[Idx[i], :], staged through shared memory by cp.async (KV has a dynamic
    row count, so its offsets are 64-bit)."""
    m = T.dynamic("m")

    @T.prim_func
    def main(KV: T.Tensor((m, cols), dtype), Idx: T.Tensor((rows,), "int32"), Out: T.Tensor((rows, cols), dtype)):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((rows, cols), dtype)
            tx = T.get_thread_binding()
            for r in T.serial(rows // 16):
                for u in T.serial(cols // 64):
                    T.ptx_cp_async(T.access_ptr(S[r * 16 + tx // 8, 64 * u + tx % 8 * 8], "w"),
                                   T.access_ptr(KV[Idx[r * 16 + tx // 8], 64 * u + tx % 8 * 8], "r"), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.copy(S, Out)

    return main


def cp_async_line(configs=None):
    src = tilelang.lower(gather(), target="cuda -arch=sm_90a", pass_configs=configs or {}).kernel_source
    (line,) = [ln.strip() for ln in src.splitlines() if "ptx_cp_async(" in ln]
    return src, line


def test_addresses_keep_loop_terms_apart_by_default():
    _, line = cp_async_line(ON)
    # shared: (&S[<the thread's offset>]) + (<the loops' terms>); global: (&KV[<the row read
    # from Idx, the thread's column>]) + (the loop's column)
    m = re.match(r"tl::ptx_cp_async\(\(\(&S\[([^\]]*)\]\) \+ \((.*)\)\), \(\(&KV\[(.*)\]\) \+ (.*)\), 16\);$", line)
    assert m, line
    shared_base, shared_loops, global_base, global_loops = m.groups()
    assert "tx" in shared_base and not re.search(r"\b[ru]\b", shared_base), line
    assert sorted(re.findall(r"\((\w) \* \d+\)", shared_loops)) == ["r", "u"] and "tx" not in shared_loops, line
    assert "Idx[" in global_base and "(tx & 7)" in global_base and "(u * 64)" not in global_base, line
    assert global_loops == "static_cast<int64_t>((u * 64))", line


def test_addresses_are_one_offset_with_the_key_off():
    _, line = cp_async_line(OFF)
    assert line.startswith("tl::ptx_cp_async((&S[") and "]) + (" not in line, line


@pytest.mark.skipif(not HAVE_NVRTC, reason="no CUDA compiler")
def test_split_addresses_compile():
    src, _ = cp_async_line(ON)
    from tilelang.jit.cuda_backend import _templates_root
    from tilelang import env
    path, _, _, log, _ = _tl.build_cuda(src, "sm_90a", env.kernel_cache_dir(), [_templates_root()], [],
                                         _search_dirs(), "")
    assert path.endswith(".cubin"), log


@pytest.mark.parametrize("configs", [ON, OFF], ids=["apart", "one-offset"])
def test_gathered_rows_match_numpy(rng, configs):
    kv = rand(rng, (300, 576), "bfloat16")
    idx = rng.integers(0, 300, 64).astype(np.int32)
    out = poison((64, 576), "bfloat16")
    compile_cpu(gather(), pass_configs=configs)(kv, idx, out)
    np.testing.assert_array_equal(out.astype(np.float32), kv[idx].astype(np.float32))


def outer_and_inner(inner_kind="unroll", outer_trips=32):
    """A serial loop k around a loop l: the element's address has l's step split by a
    division (not a constant once l unrolls) and k's step as a plain term."""

    @T.prim_func
    def main(A: T.Tensor((outer_trips, 24, 128), "float32"), B: T.Tensor((outer_trips, 24, 128), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            for k in T.serial(outer_trips):
                loop = T.unroll(24) if inner_kind == "unroll" else T.serial(24)
                for l in loop:
                    B[k, l // 12 * 12 + l % 12, tx] = A[k, l // 12 * 12 + l % 12, tx] * 2.0

    return main


def b_address(src):
    (line,) = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("B[")]
    return line


def test_an_outer_loop_stays_in_a_base_that_varies_with_an_inner_loop():
    # (l's terms stay in the base, so k's do too: one base per l step hoisted out of k
    # would take registers; upstream's gqa backward spilled)
    src = tilelang.lower(outer_and_inner(), target="cuda -arch=sm_90a").kernel_source
    line = b_address(src)
    assert "k * 3072" in line and "]) + (" not in line, line


def test_a_rolled_loop_keeps_its_term_and_stops_the_split():
    # the unrolled inner loop's term goes apart, the rolled outer loop's (more than 16
    # trips) stays with the base
    @T.prim_func
    def main(A: T.Tensor((64, 8, 1024), "float16"), B: T.Tensor((64, 8, 1024), "float16")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((8, 1024), "float16")
            tx = T.get_thread_binding()
            for k in T.serial(64):
                for u in T.unroll(8):
                    T.ptx_cp_async(T.access_ptr(S[u, tx * 8], "w"), T.access_ptr(A[k, u, tx * 8], "r"), 8)
                T.ptx_commit_group()
                T.ptx_wait_group(0)
                T.copy(S, B[k, :, :])

    src = tilelang.lower(main, target="cuda -arch=sm_90a").kernel_source
    (line,) = [ln.strip() for ln in src.splitlines() if "ptx_cp_async(" in ln]
    src_part = line[line.index("(&A["):]
    assert src_part.startswith("(&A[((k * 8192) + (tx * 8))]) + (u * 1024))"), line


@pytest.mark.parametrize("inner_kind", ["unroll", "serial"])
def test_nests_match_numpy(rng, inner_kind):
    a = rand(rng, (32, 24, 128), "float32")
    b = poison((32, 24, 128), "float32")
    compile_cpu(outer_and_inner(inner_kind))(a, b)
    np.testing.assert_array_equal(b, a * 2.0)
