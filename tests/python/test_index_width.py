"""Index width ("legalize-index-width"): offsets into tensors that may hold 2^31 elements
or more are computed in 64 bits, on the CPU and in CUDA source; small static tensors keep
32-bit index math. The last test really crosses 2^31 elements on the CPU (about 4.4 GB of
memory, a few seconds)."""
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVRTC, _ = _tl.find_cuda_compiler(_search_dirs())
TARGETS = ["cpu", pytest.param("cuda -arch=sm_90a", marks=pytest.mark.skipif(not HAVE_NVRTC, reason="no CUDA compiler"))]
I64 = "static_cast<int64_t>"


def add_one(shape, bm=64):
    """B = A + 1 over a 2-D int8 tensor, by row blocks, one T.copy each way."""
    @T.prim_func
    def main(A: T.Tensor(shape, "int8"), B: T.Tensor(shape, "int8")):
        with T.Kernel(T.ceildiv(shape[0], bm), threads=128) as by:
            s = T.alloc_shared((bm, shape[1]), "int8")
            T.copy(A[by * bm, 0], s)
            for i, k in T.Parallel(bm, shape[1]):
                s[i, k] = s[i, k] + T.int8(1)
            T.copy(s, B[by * bm, 0])
    return main


def accesses(src, name):
    """The index expressions of every access to `name` in generated source."""
    return re.findall(rf"\b{name}\[([^\]]*)\]", src)


@pytest.mark.parametrize("target", TARGETS)
def test_dynamic_rows_give_64_bit_offsets(target):
    kernel = tilelang.compile(add_one((T.dynamic("m"), 1024)), target=target)
    src = kernel.get_kernel_source()
    for name in ("A", "B"):
        offs = accesses(src, name)
        assert offs and all(I64 in o for o in offs), (name, offs)
    # the row index provably fits in int32 (m does), so it is widened once, then scaled
    assert re.search(r"static_cast<int64_t>\(\(*\(?by \* 64\)", src), src
    # shared memory stays 32-bit
    assert all(I64 not in o for o in accesses(src, "s"))
    assert any("offsets into A computed in 64 bits" in r for r in kernel.get_remarks())


@pytest.mark.parametrize("target", TARGETS)
def test_small_static_kernel_stays_32_bit(target):
    kernel = tilelang.compile(add_one((256, 1024)), target=target)
    src = kernel.get_kernel_source()
    assert "int64_t(" not in src and I64 not in src, src
    assert not any("index width" in r for r in kernel.get_remarks())


@pytest.mark.parametrize("target", TARGETS)
def test_huge_static_dimension_widens_terms_and_guards(target):
    n = 2**31 + 5  # one dimension past int32: bx * 1024 + i itself overflows

    @T.prim_func
    def main(A: T.Tensor((n,), "int8"), B: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, 1024), threads=128) as bx:
            for i in T.Parallel(1024):
                B[bx * 1024 + i] = A[bx * 1024 + i] + T.int8(1)

    kernel = tilelang.compile(main, target=target)
    src = kernel.get_kernel_source()
    # bx is widened before it is scaled, not after
    assert "static_cast<int64_t>(bx) * int64_t(1024LL)" in src, src
    # the edge guard compares in 64 bits too
    guards = re.findall(r"if \((.*)\) \{", src)
    assert guards and all(I64 in g for g in guards if "bx" in g), guards
    assert any("comparison" in r for r in kernel.get_remarks())


# Source-text checks of the CPU printer: under TILELANG_TEST_CUDA=1 a "cpu" target
# compiles for CUDA, whose source differs.
cpu_text_only = pytest.mark.skipif(os.environ.get("TILELANG_TEST_CUDA") == "1",
                                   reason="checks the CPU target's own source")


@cpu_text_only
def test_int64_dynamic_dimension_guard_is_widened_inside_the_cast():
    n = T.dynamic("n", "int64")

    @T.prim_func
    def main(A: T.Tensor((n,), "int8"), B: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, 1024), threads=128) as bx:
            for i in T.Parallel(1024):
                B[bx * 1024 + i] = A[bx * 1024 + i] + T.int8(1)

    src = tilelang.compile(main, target="cpu").get_kernel_source()
    # the front end writes int64(bx * 1024 + i) < n: the sum must not wrap first
    assert "static_cast<int64_t>(((bx * 1024) + i))" not in src, src
    assert "((static_cast<int64_t>(bx) * int64_t(1024LL)) + static_cast<int64_t>(i)) < n" in src, src


def test_config_index_bitwidth_overrides():
    key = tilelang.PassConfigKey.TL_CONFIG_INDEX_BITWIDTH
    forced = tilelang.compile(add_one((256, 1024)), target="cpu", pass_configs={key: 64})
    assert all(I64 in o for o in accesses(forced.get_kernel_source(), "A"))
    assert any("tl.config_index_bitwidth=64" in r for r in forced.get_remarks())
    narrow = tilelang.compile(add_one((T.dynamic("m"), 1024)), target="cpu", pass_configs={key: 32})
    assert I64 not in narrow.get_kernel_source()
    with pytest.raises(tilelang.TileLangCompileError, match="must be 32 or 64"):
        tilelang.compile(add_one((256, 1024)), target="cpu", pass_configs={key: 48})


def gather_rows():
    """Thread tx copies the columns c of row Idx[tx] of A (a tensor with a dynamic row
    count) with c % 8 == tx % 8, in 8 steps of an unrolled loop: the column index
    `u * 8 + tx % 8` is a sum of a loop term and a thread term."""
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((m, 64), "float32"), Idx: T.Tensor((128,), "int32"), B: T.Tensor((128, 64), "float32")):
        with T.Kernel(1, threads=128) as bx:
            tx = T.get_thread_binding()
            row = Idx[tx]
            for u in T.unroll(8):
                B[tx, u * 8 + tx % 8] = A[row, u * 8 + tx % 8]
    return main


def a_offset(kernel):
    """The offset expression of the one load of A (its brackets may nest)."""
    line = next(ln for ln in kernel.get_kernel_source().splitlines() if " A[" in ln)
    return line[line.index(" A[") + 3:]


@pytest.mark.skipif(not HAVE_NVRTC, reason="no CUDA compiler")
def test_loop_terms_are_widened_apart_and_last_in_cuda_source():
    # tl.loop_terms_apart (on by default): base + int64(tx & 7) + int64(u * 8), each unrolled
    # step's address the first one plus a constant (nvcc folds it into the instruction)
    target = "cuda -arch=sm_90a"
    key = "tl.loop_terms_apart"
    a = a_offset(tilelang.compile(gather_rows(), target=target))
    assert re.match(r"\(*static_cast<int64_t>\(row\) \* int64_t\(64LL\)\) \+ static_cast<int64_t>\(\(tx & 7\)\)\) "
                    r"\+ static_cast<int64_t>\(\(u \* 8\)\)\)\]", a), a
    # with the key off the 32-bit sum is widened as one value
    grouped = a_offset(tilelang.compile(gather_rows(), target=target, pass_configs={key: 0}))
    assert "static_cast<int64_t>(((u * 8) + (tx & 7)))" in grouped, grouped


def test_gather_with_loop_terms_apart_runs_on_the_cpu():
    # On the CPU the thread index is a loop of its own (every term uses a loop): the same
    # program, one widening, checked against numpy
    rng = np.random.default_rng()
    src = rng.standard_normal((300, 64)).astype(np.float32)
    idx = rng.integers(0, 300, 128).astype(np.int32)
    out = np.full((128, 64), np.nan, np.float32)
    tilelang.compile(gather_rows(), target="cpu", pass_configs={"tl.loop_terms_apart": 1})(src, idx, out)
    copied = (np.arange(64)[None, :] % 8) == (np.arange(128)[:, None] % 8)
    np.testing.assert_array_equal(out, np.where(copied, src[idx], np.nan))


def masked_rows(step):
    """Rows of a packed sequence, masked against its length read from `cu` (upstream's
    varlen attention pattern): the grid comes from the scalar `max_len`."""
    @T.prim_func
    def main(A: T.Tensor((4096,), "float32"), cu: T.Tensor((2,), "int32"), max_len: T.int32,
             Out: T.Tensor((4096,), "float32")):
        with T.Kernel(T.ceildiv(max_len, 128), threads=128) as bx:
            start = cu[0]
            length = cu[1] - start
            for i in T.Parallel(128):
                Out[i] = T.if_then_else(bx * step + i >= length, 0.0, A[i])
    return main


@pytest.mark.parametrize("target", TARGETS)
def test_scalar_arguments_and_lets_are_values_of_their_type(target):
    # bx < ceildiv(max_len, 128) <= 2^24 and `length` is an int32, so bx * 128 + i < 2^31:
    # the mask stays 32-bit; with a step of 2^20 per block it may not, and widens
    def mask(kernel):  # the line comparing with `length` (the grid size is 64-bit on the host anyway)
        lines = [ln for ln in kernel.get_kernel_source().splitlines() if "length" in ln and "?" in ln]
        assert len(lines) == 1, kernel.get_kernel_source()
        return lines[0]

    assert I64 not in mask(tilelang.compile(masked_rows(128), target=target))
    assert "(static_cast<int64_t>(bx) * int64_t(1048576LL))" in mask(tilelang.compile(masked_rows(1 << 20),
                                                                                      target=target))


def offset_mask():
    """A causal-style mask against a block offset read from memory (upstream's minference
    pattern `bx * 64 + i >= k + j`, k = block_offset[b]): k is any int32."""
    @T.prim_func
    def main(offsets: T.Tensor((4,), "int32"), Out: T.Tensor((4, 64, 16), "float32")):
        with T.Kernel(4, threads=64) as bx:
            k = offsets[bx]
            acc = T.alloc_fragment((64, 16), "float32")
            for i, j in T.Parallel(64, 16):
                acc[i, j] = T.if_then_else(bx * 64 + i >= k + j, 1.0, 0.0)
            T.copy(acc, Out[bx, :, :])
    return main


@pytest.mark.parametrize("target", TARGETS)
def test_comparison_with_a_loaded_term_is_moved_not_widened(target):
    # `bx * 64 + i >= k + j` may wrap as written (k near 2^31); `bx * 64 + i - j >= k` cannot,
    # and is computed in 32 bits instead of widening both sides
    kernel = tilelang.compile(offset_mask(), target=target)
    src = kernel.get_kernel_source()
    assert not any("comparison" in r for r in kernel.get_remarks()), kernel.get_remarks()
    assert I64 not in "\n".join(ln for ln in src.splitlines() if ">=" in ln), src
    if target != "cpu":
        return
    # exact at the ends of int32: k + j would wrap for the largest k, and bx * 64 + i - j
    # reaches below 0 against the smallest
    offsets = np.array([2**31 - 1, -2**31, 40, 100], np.int32)
    out = np.full((4, 64, 16), np.nan, np.float32)
    kernel(offsets, out)
    bx, i, j = np.meshgrid(np.arange(4), np.arange(64), np.arange(16), indexing="ij")
    ref = (bx * 64 + i >= offsets.astype(np.int64)[bx] + j).astype(np.float32)
    np.testing.assert_array_equal(out, ref)


def test_int32_dynamic_dimension_past_2_31_is_refused():
    m = T.dynamic("m")

    @T.prim_func
    def flat(A: T.Tensor((m,), "int8"), B: T.Tensor((m,), "int8")):
        with T.Kernel(T.ceildiv(m, 1024), threads=128) as bx:
            for i in T.Parallel(1024):
                B[bx * 1024 + i] = A[bx * 1024 + i]

    big = np.empty(2**31 + 1, np.int8)  # not touched: no memory is used
    with pytest.raises(tilelang.TileLangArgumentError, match=r"T.dynamic\('m', \"int64\"\)"):
        tilelang.compile(flat, out_idx=-1, target="cpu")(big)


# A real run past 2^31 elements. It runs in a child process: without 64-bit offsets the
# kernel writes outside its tensors, and a crash there must fail this test, not pytest.
_LARGE_RUN = textwrap.dedent("""
    import numpy as np
    import tilelang
    import tilelang.language as T

    N = 2**31 + 2**20 + 3  # int8 elements: past 2^31, with a ragged last block
    BS, TAIL = 4096, 2**20

    @T.prim_func
    def inc_copy(A: T.Tensor((N,), "int8"), B: T.Tensor((N,), "int8")):
        with T.Kernel(64, T.ceildiv(N, BS * 64), threads=128) as (bx, by):
            s = T.alloc_shared((BS,), "int8")
            T.copy(A[(by * 64 + bx) * BS], s)
            for i in T.Parallel(BS):
                s[i] = s[i] + T.int8(1)
            T.copy(s, B[(by * 64 + bx) * BS])

    n = T.dynamic("n", "int64")

    @T.prim_func
    def inc_dynamic(A: T.Tensor((n,), "int8"), B: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, BS), threads=128) as bx:
            for i in T.Parallel(BS):
                B[bx * BS + i] = A[bx * BS + i] + T.int8(1)

    m = T.dynamic("m")  # int32: the grid's T.ceildiv(m, BS) passes 2^31 for m near it

    @T.prim_func
    def inc_int32_dim(A: T.Tensor((m,), "int8"), B: T.Tensor((m,), "int8")):
        with T.Kernel(T.ceildiv(m, BS), threads=128) as bx:
            for i in T.Parallel(BS):
                B[bx * BS + i] = A[bx * BS + i] + T.int8(1)

    TARGET = "@TARGET@"
    if TARGET == "cpu":
        A = np.zeros(N, np.int8)  # untouched pages read as zero for free
        A[-TAIL:] = np.arange(TAIL) % 101
    else:
        import torch
        A = torch.zeros(N, dtype=torch.int8, device="cuda")
        A[-TAIL:] = (torch.arange(TAIL, device="cuda") % 101).to(torch.int8)
    for f, a in ((inc_copy, A), (inc_dynamic, A), (inc_int32_dim, A[:2**31 - 10])):
        B = tilelang.compile(f, out_idx=-1, target=TARGET)(a)
        head = B[:-TAIL]
        assert int(head.min()) == 1 and int(head.max()) == 1, (f, head.min(), head.max())
        assert bool((B[-TAIL:] == a[-TAIL:] + 1).all()), f
        del B, head
    print("large run ok")
""")


def _run_large(tmp_path, target):
    script = tmp_path / "large_run.py"  # the front end reads kernels from a source file
    script.write_text(_LARGE_RUN.replace("@TARGET@", target))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=dict(os.environ), timeout=600)
    assert proc.returncode == 0 and "large run ok" in proc.stdout, (proc.returncode, proc.stdout, proc.stderr[-2000:])


def _cuda_usable():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


@pytest.mark.skipif(not _cuda_usable(), reason="needs a CUDA GPU and torch")
def test_large_tensor_past_2_31_elements_cuda(tmp_path):
    """LARGE: ~4.3 GB of GPU memory. The same three kernels as the CPU test, on the GPU."""
    _run_large(tmp_path, "cuda")


def test_large_tensor_past_2_31_elements_cpu(tmp_path):
    """LARGE: ~4.4 GB of host memory, a few seconds. int8 kernels over 2^31 + 2^20 + 3
    elements (a static shape through shared memory, an int64 dynamic dimension) and over
    2^31 - 10 (an int32 dynamic dimension, whose tiles pass 2^31)."""
    _run_large(tmp_path, "cpu")
