"""T.vectorized copies as one 4-, 8- or 16-byte access per group of elements
(cuda-vectorize-loops), tvm_thread_allreduce within a warp as shuffles, and a scalar
assigned once per loop body as an immutable binding. Results are checked against numpy on
the CPU target; the CUDA code is checked compile-only (source, and PTX where NVRTC is
installed)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


def cuda_source(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def gemv(N=16, K=512, lanes=32, parts=4, a_offset=0, b_step=1, combine="sum", reduce_y=False):
    """C[n] = sum_k A[k] * B[n, k]: each thread loads 8 halves of A and 8 int8 of B with
    T.vectorized loops, then its `lanes` threads (threadIdx.x) combine through
    tvm_thread_allreduce. a_offset shifts A's groups off their 16-byte boundary; b_step
    reads every b_step-th element of B (not consecutive). With reduce_y the reduced threads
    are threadIdx.y (threads=(parts, lanes): a group's lanes `parts` apart)."""
    micro = 8
    block_k = lanes * micro
    ident = 0.0 if combine == "sum" else -3.0e38

    @T.prim_func
    def main(A: T.Tensor((K + 8,), "float16"), B: T.Tensor((N, K * b_step), "int8"), C: T.Tensor((N,), "float32")):
        with T.Kernel(N // parts, threads=(parts, lanes) if reduce_y else (lanes, parts)) as bx:
            a_local = T.alloc_local((micro,), "float16")
            b_local = T.alloc_local((micro,), "int8")
            acc = T.alloc_local((1,), "float32")
            red = T.alloc_local((1,), "float32")
            kr = T.thread_binding(0, lanes, thread="threadIdx.y" if reduce_y else "threadIdx.x")
            ni = T.thread_binding(0, parts, thread="threadIdx.x" if reduce_y else "threadIdx.y")
            acc[0] = ident
            for ko in T.serial(K // block_k):
                for v in T.vectorized(micro):
                    a_local[v] = A[ko * block_k + kr * micro + v + a_offset]
                for v in T.vectorized(micro):
                    b_local[v] = B[bx * parts + ni, (ko * block_k + kr * micro + v) * b_step]
                for j in T.serial(micro):
                    if combine == "sum":
                        acc[0] += T.cast(a_local[j], "float32") * T.cast(b_local[j], "float32")
                    else:
                        acc[0] = T.max(acc[0], T.cast(a_local[j], "float32") * T.cast(b_local[j], "float32"))
            with T.attr(T.comm_reducer((lambda x, y: x + y) if combine == "sum" else (lambda x, y: T.max(x, y)),
                                       [T.cast(ident, "float32")]),
                        "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
                T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, red[0], kr, dtype="handle"))
            if kr == 0:
                C[bx * parts + ni] = red[0]

    return main


def gemv_reference(a, b, N, K, a_offset, b_step, combine):
    x = a[a_offset:a_offset + K].astype(np.float64)
    w = b[:, ::b_step][:, :K].astype(np.float64)
    return w @ x if combine == "sum" else (w * x).max(axis=1)


@pytest.mark.parametrize("lanes, a_offset, b_step, combine, reduce_y", [
    (32, 0, 1, "sum", False), (32, 0, 1, "max", False), (16, 0, 1, "sum", False), (8, 0, 1, "max", False),
    (32, 1, 1, "sum", False), (32, 0, 2, "sum", False), (12, 0, 1, "sum", False),
    # groups over two warps: 64 lanes in a row, or 32 lanes 4 apart (threads=(4, 32))
    (64, 0, 1, "sum", False), (32, 0, 1, "max", True), (32, 0, 1, "sum", True),
])
def test_gemv_matches_float64(lanes, a_offset, b_step, combine, reduce_y):
    N, K = 16, lanes * 8 * 2
    rng = np.random.default_rng(7)
    a = rng.standard_normal(K + 8).astype(np.float16)
    b = rng.integers(-8, 8, (N, K * b_step)).astype(np.int8)
    c = np.full(N, np.nan, np.float32)
    parts = 4 if lanes != 12 else 8  # 12 x 8 = 96 threads: whole warps, groups not a power of two
    tilelang.compile(gemv(N, K, lanes, parts, a_offset, b_step, combine, reduce_y))(a, b, c)
    np.testing.assert_allclose(c, gemv_reference(a, b, N, K, a_offset, b_step, combine), rtol=1e-5, atol=1e-4)


def count_shuffles(code):
    """xor shuffles: CUDA's own for 32-bit values, tl::'s for narrower ones."""
    return code.count("__shfl_xor_sync(") + code.count("tl::shfl_xor(")


def test_aligned_vectorized_copies_are_single_accesses_and_the_allreduce_shuffles():
    code, remarks = cuda_source(gemv())
    # 8 halves, 8 int8 (the loop's step ko * 256 apart: tl.loop_terms_apart)
    assert "tl::copy<16>((&a_local[0]), ((&A[" in code and "]) + (ko * 256)));" in code, code
    assert "tl::copy<8>((&b_local[0]), ((&B[" in code, code
    assert "alignas(8) int8_t b_local[8];" in code
    assert count_shuffles(code) == 5 and "__syncthreads" not in code, code
    assert any("(A -> a_local): 16-byte accesses" in r for r in remarks), remarks
    assert any("(B -> b_local): 8-byte accesses" in r for r in remarks), remarks
    assert not any("element by element" in r or "through shared memory" in r for r in remarks), remarks


def test_a_group_of_lanes_below_a_warp_shuffles_within_it():
    code, _ = cuda_source(gemv(lanes=8))
    assert all(f", {o}, 32)" in code for o in (4, 2, 1)), code
    assert count_shuffles(code) == 3 and "__syncthreads" not in code, code


@pytest.mark.parametrize("kwargs, why", [
    (dict(a_offset=1), "A's groups start one half past a 16-byte boundary"),
    (dict(b_step=2), "B's elements are two apart"),
])
def test_unprovable_groups_stay_element_by_element_with_a_remark(kwargs, why):
    code, remarks = cuda_source(gemv(**kwargs))
    name = "A -> a_local" if "a_offset" in kwargs else "B -> b_local"
    assert not any(name in r and "byte accesses" in r for r in remarks), (why, remarks)
    assert any("element by element (no 4-, 8- or 16-byte group" in r for r in remarks), (why, remarks)


@pytest.mark.parametrize("lanes, reduce_y, shuffles, warps", [(64, False, 5, 2), (32, True, 3, 4)])
def test_a_group_over_several_warps_shuffles_in_each_then_adds_the_warps(lanes, reduce_y, shuffles, warps):
    """64 lanes in a row (2 warps: 5 shuffle steps each), or 32 lanes 4 apart (threads=(4, 32):
    8 of a group per warp, 3 steps, over 4 warps): then one shared-memory read per warp."""
    code, remarks = cuda_source(gemv(K=lanes * 16, lanes=lanes, reduce_y=reduce_y))
    assert count_shuffles(code) == shuffles, code
    assert any(f"over {lanes} threads: warp shuffles within each warp, then {warps} warp partials" in r
               for r in remarks), remarks
    assert f"r < {warps}; ++r)" in code, code


def test_an_allreduce_over_groups_that_are_not_a_power_of_two_says_so():
    code, remarks = cuda_source(gemv(lanes=12, parts=8))
    assert "__syncthreads" in code and "shfl_xor" not in code
    assert any("T.tvm_thread_allreduce over 12 threads: through shared memory" in r for r in remarks), remarks


def dequant_store(threads=64, rows=16, cols=64, steps=2):
    """The store pattern of upstream's fp4 dequantization: each thread writes 8 values held
    in registers to a 2-D shared tile through a flat `index`, split into row and column.
    `index` is assigned in two sibling loops: once per loop body, so an immutable binding."""
    per = 8

    @T.prim_func
    def main(X: T.Tensor((rows * cols,), "float16"), Y: T.Tensor((rows, cols), "float16")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            s = T.alloc_shared((rows, cols), "float16")
            loc = T.alloc_local((per,), "float16")
            for i in T.serial(steps):
                for v in T.vectorized(per):
                    index = i * threads * per + tx * per + v
                    loc[v] = X[index] * T.cast(2, "float16")
                for v in T.vectorized(per):
                    index = i * threads * per + tx * per + v
                    s[index // cols, index % cols] = loc[v]
            T.copy(s, Y)

    return main


def test_dequant_style_store_matches_numpy_and_is_one_16_byte_store():
    x = (np.arange(16 * 64) % 97).astype(np.float16)
    y = np.zeros((16, 64), np.float16)
    tilelang.compile(dequant_store())(x, y)
    np.testing.assert_array_equal(y, (x * 2).reshape(16, 64))
    code, remarks = cuda_source(dequant_store())
    assert "int32_t index[1]" not in code and "const int32_t index = " in code, code
    assert "tl::copy<16>(((&s[" in code and "]) + (i * 512)), (&loc[0]));" in code, code
    # the first loop computes its values: it stays element by element, and says why
    assert any("element by element (its body is not a copy" in r for r in remarks), remarks


def test_a_name_reassigned_within_one_loop_body_is_still_mutable():
    @T.prim_func
    def main(A: T.Tensor((8,), "int32"), B: T.Tensor((8,), "int32")):
        with T.Kernel(1, threads=1):
            for i in T.serial(8):
                t = A[i]
                t = t * 3
                B[i] = t
            for i in T.serial(8):
                t = A[i] + 1  # a sibling loop: a binding of its own
                B[i] = B[i] + t

    a = np.arange(8, dtype=np.int32)
    b = np.zeros(8, np.int32)
    tilelang.compile(main)(a, b)
    np.testing.assert_array_equal(b, a * 3 + a + 1)


@needs_cuda_compiler
def test_ptx_has_vector_loads_and_butterfly_shuffles():
    k = tilelang.compile(gemv(N=64, K=1024), target="cuda -arch=sm_90a")
    ptx = k.get_ptx()
    assert "ld.global.nc.v4.u32" in ptx and "ld.global.nc.v2.u32" in ptx, ptx
    assert "ld.global.nc.u16" not in ptx and "ld.global.nc.u8" not in ptx and "ld.global.nc.s8" not in ptx
    assert ptx.count("shfl.sync.bfly.b32") == 5 and "bar.sync" not in ptx
    assert "ld.local" not in ptx and "st.local" not in ptx  # the register arrays stay in registers


def let_indexed_copy(shift):
    """Each thread copies 4 int8 from a shared tile through an index let bound before the
    loop (upstream's mxfp4 dequantize: index_base = i * threads * 4 + tx * 4)."""

    @T.prim_func
    def main(A: T.Tensor((8, 64), "int8"), B: T.Tensor((128, 4), "int8")):
        with T.Kernel(1, threads=128):
            s = T.alloc_shared((8, 64), "int8")
            loc = T.alloc_local((4,), "int8")
            T.copy(A, s)
            tx = T.get_thread_binding()
            base = tx * 4 + shift
            for v in T.vectorized(4):
                index = base + v
                loc[v] = s[(index // 64) % 8, index % 64]
            for v in T.serial(4):
                B[tx, v] = loc[v]

    return main


@pytest.mark.parametrize("shift, vectorized", [(0, True), (1, False)])
def test_copy_through_a_let_before_the_loop(shift, vectorized):
    a = np.arange(512, dtype=np.int64).astype(np.int8).reshape(8, 64)
    b = np.zeros((128, 4), np.int8)
    tilelang.compile(let_indexed_copy(shift))(a, b)
    np.testing.assert_array_equal(b, np.roll(a.ravel(), -shift)[np.arange(512)].reshape(128, 4))
    _, remarks = cuda_source(let_indexed_copy(shift))
    assert any("(s -> loc): 4-byte accesses" in r for r in remarks) == vectorized, remarks


def two_copy_dot(rows=8, k=1024, lanes=8, parts=32, alias=False):
    """Y[r] = X . W[r]: each step every thread loads `lanes` halves of X and of W[r] in one
    T.vectorized loop holding both copies (the split-K GEMV's pattern), then its partial
    sums meet in shared memory. With `alias`, the second copy reads what the first wrote."""

    @T.prim_func
    def main(X: T.Tensor((k,), "float16"), W: T.Tensor((rows, k), "float16"), Y: T.Tensor((rows,), "float32")):
        with T.Kernel(rows, threads=parts) as r:
            t = T.get_thread_binding()
            xv = T.alloc_local((lanes,), "float16")
            wv = T.alloc_local((lanes,), "float16")
            acc = T.alloc_local((1,), "float32")
            part = T.alloc_shared((parts,), "float32")
            acc[0] = 0
            for s in T.serial(k // (lanes * parts)):
                for v in T.vectorized(lanes):
                    xv[v] = X[(s * parts + t) * lanes + v]
                    if alias:
                        wv[v] = xv[v]
                    else:
                        wv[v] = W[r, (s * parts + t) * lanes + v]
                for v in T.serial(lanes):
                    acc[0] += xv[v].astype("float32") * wv[v].astype("float32")
            part[t] = acc[0]
            if t == 0:
                total = T.alloc_var("float32")
                for j in T.serial(parts):
                    total += part[j]
                Y[r] = total

    return main


def test_two_copies_in_one_vectorized_loop_each_become_vector_accesses(rng):
    x = rng.standard_normal(1024).astype(np.float16)
    w = rng.standard_normal((8, 1024)).astype(np.float16)
    y = np.full(8, np.nan, np.float32)
    tilelang.compile(two_copy_dot(), target="cpu")(x, w, y)
    ref = w.astype(np.float64) @ x.astype(np.float64)
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-3 * max(1.0, np.abs(ref).max()))
    code, remarks = cuda_source(two_copy_dot())
    assert any("(X -> xv, W -> wv): 16-byte accesses" in r for r in remarks), remarks
    assert code.count("tl::copy<16>(") == 2, code


def test_copies_that_read_what_another_writes_stay_element_by_element():
    code, remarks = cuda_source(two_copy_dot(alias=True))
    assert "tl::copy<16>(" not in code, code
    assert any("its copies write a buffer another of them reads or writes" in r for r in remarks), remarks


def _rows_of_dynamic_width():
    N = T.dynamic("N")

    @T.prim_func
    def main(A: T.Tensor((32, N), "float32"), B: T.Tensor((32, N), "float32")):
        with T.Kernel(1, threads=32):
            tid = T.get_thread_binding()
            for i in T.vectorized(4):
                T.assume(tid * 4 + i < N)
                B[tid, tid * 4 + i] = A[tid, tid * 4 + i]

    return main


def test_dynamic_row_width_vectorizes_under_the_jits_alignment_promise():
    # Row tid starts at tid * N: aligned to 4 floats only when N is; the variant the JIT
    # compiles for N a multiple of 16 (tl.dynamic_alignment) may count on it, the general one not.
    func = _rows_of_dynamic_width()
    for config, want in (({"tl.dynamic_alignment": "16:N"}, "16-byte accesses"), ({}, "element by element")):
        lowered, remarks, _ = _tl.lower_cuda(func.node, dict(config, **{"tl.target_arch": "sm_90a"}), False)
        assert any("T.vectorized loop" in r and want in r for r in remarks), remarks


def test_dynamic_row_width_copy_runs_on_the_cpu():
    rng = np.random.default_rng(3)
    for n in (128, 130):
        a = rng.standard_normal((32, n)).astype(np.float32)
        b = np.full((32, n), -7.0, np.float32)
        tilelang.compile(_rows_of_dynamic_width(), target="cpu")(a, b)
        want = np.full((32, n), -7.0, np.float32)
        for t in range(32):
            want[t, t * 4:t * 4 + 4] = a[t, t * 4:t * 4 + 4]
        np.testing.assert_array_equal(b, want)
