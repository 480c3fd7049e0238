"""Pointers: T.ptr parameters, int64 pointer tables (T.Tensor([n], T.ptr)) and the tensors
T.make_tensor builds over an address, as upstream's grouped GEMM uses them. Results on the
CPU target against float64 numpy (tables hold host addresses there, so these tests are of
the CPU target: the CUDA run of the suite skips them); the CUDA code compile-only."""
import ctypes
import math

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangArgumentError, TileLangCompileError
from tilelang.jit.cuda_backend import _search_dirs

from conftest import assert_close, compile_cpu, poison, rand

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")


def addresses(arrays):
    """A pointer table: the int64 addresses of the arrays' first elements."""
    return np.array([a.ctypes.data for a in arrays], dtype=np.int64)


def gather_rows(G, N, dtype):
    @T.prim_func
    def main(tables: T.Tensor([G], T.ptr), out: T.Tensor([G, N], dtype)):
        with T.Kernel(G, threads=1) as g:
            row = T.make_tensor(tables[g], (N,), dtype)
            for i in T.serial(N):
                out[g, i] = row[i] * 2

    return main


def grouped_gemm(sizes, N, K, bm, bn, bk, dtype, accum="float32"):
    """One launch for several GEMMs of different M: block bx finds its group from the
    groups' first tile numbers, then reads A, B and C through that group's addresses."""
    groups = len(sizes)
    tiles = sum(math.ceil(m / bm) for m in sizes)
    max_m = max(sizes)

    @T.prim_func
    def main(a_ptrs: T.Tensor([groups], T.ptr), b_ptrs: T.Tensor([groups], T.ptr),
             c_ptrs: T.Tensor([groups], T.ptr), first_tile: T.Tensor([groups], T.int32)):
        with T.Kernel(tiles, T.ceildiv(N, bn), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bk, bn), dtype)
            C_f = T.alloc_fragment((bm, bn), accum)
            g = T.alloc_var(T.int32)
            start = T.alloc_var(T.int32)
            g = 0
            start = 0
            for i in range(groups):
                mine = bx >= first_tile[i]
                g = T.if_then_else(mine, i, g)
                start = T.if_then_else(mine, first_tile[i], start)
            row0 = (bx - start) * bm
            A = T.make_tensor(a_ptrs[g], (max_m, K), dtype)
            B = T.make_tensor(b_ptrs[g], (K, N), dtype)
            C = T.make_tensor(c_ptrs[g], (max_m, N), accum)
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(K, bk), num_stages=1):
                T.copy(A[row0, ko * bk], A_s)
                T.copy(B[ko * bk, by * bn], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[row0, by * bn])

    return main


def pointer_matmul(bm, bn, bk, dtype="float32"):
    @T.prim_func
    def main(a: T.ptr, b: T.ptr, c: T.handle, m: T.int32, n: T.int32, k: T.int32):
        A = T.make_tensor(a, (m, k), dtype)
        B = T.make_tensor(b, (n, k), dtype)
        C = T.make_tensor(c, (m, n), "float32")
        with T.Kernel(T.ceildiv(n, bn), T.ceildiv(m, bm), threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), dtype)
            B_s = T.alloc_shared((bn, bk), dtype)
            C_f = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_f)
            for ko in T.Pipelined(T.ceildiv(k, bk), num_stages=2):
                T.copy(A[by * bm, ko * bk], A_s)
                T.copy(B[bx * bn, ko * bk], B_s)
                T.gemm(A_s, B_s, C_f, transpose_B=True)
            T.copy(C_f, C[by * bm, bx * bn])

    return main


def test_pointer_table_is_an_int64_tensor_parameter():
    prog = gather_rows(4, 8, "float16")
    table = prog.buffer_map[prog.params[0]]
    assert table.dtype == "int64"
    assert [int(d) for d in table.shape] == [4]


@pytest.mark.cpu_target
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_pointer_table_reads_each_groups_array(rng, dtype):
    G, N = 3, 40
    k = compile_cpu(gather_rows(G, N, dtype))
    rows = [rand(rng, (N,), dtype) for _ in range(G)]
    out = poison((G, N), dtype)
    k(addresses(rows), out)
    assert_close(out, np.stack([r.astype(np.float64) * 2 for r in rows]), dtype)


@pytest.mark.cpu_target
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_grouped_gemm_through_pointer_tables(rng, dtype):
    sizes, N, K, bm, bn, bk = [8, 37, 20], 48, 40, 16, 16, 8
    k = compile_cpu(grouped_gemm(sizes, N, K, bm, bn, bk, dtype))
    max_m = max(sizes)
    a_groups = [rand(rng, (m, K), dtype) for m in sizes]
    b_groups = [rand(rng, (K, N), dtype) for _ in sizes]
    # each group's A and C are max_m rows (the kernel's view); rows past the group's size pad
    a_full = [np.concatenate([a, np.zeros((max_m - a.shape[0], K), a.dtype)]) for a in a_groups]
    c_full = [poison((max_m, N)) for _ in sizes]
    first = np.cumsum([0] + [math.ceil(m / bm) for m in sizes[:-1]]).astype(np.int32)
    k(addresses(a_full), addresses(b_groups), addresses(c_full), first)
    for a, b, c, m in zip(a_groups, b_groups, c_full, sizes):
        ref = a.astype(np.float64) @ b.astype(np.float64)
        assert_close(c[:m], ref, "float16" if dtype == "float16" else "float32", rtol=1e-2 if dtype == "float16"
                     else None)


@pytest.mark.cpu_target
def test_pointer_parameters_take_addresses_and_tensors(rng):
    M, N, K = 48, 40, 32
    k = compile_cpu(pointer_matmul(16, 16, 8))
    a, b = rand(rng, (M, K)), rand(rng, (N, K))
    ref = a.astype(np.float64) @ b.astype(np.float64).T
    c = poison((M, N))
    k(a.ctypes.data, b.ctypes.data, c.ctypes.data, M, N, K)  # plain ints (t.data_ptr())
    assert_close(c, ref)
    c2 = poison((M, N))
    k(a, b, c2, M, N, K)  # arrays: their addresses
    assert_close(c2, ref)
    torch = pytest.importorskip("torch")
    ta, tb, tc = torch.from_numpy(a), torch.from_numpy(b), torch.full((M, N), float("nan"))
    k(ta, tb, tc.data_ptr(), M, N, K)
    assert_close(tc.numpy(), ref)


@pytest.mark.cpu_target
def test_make_tensor_with_strides_reads_a_transposed_view(rng):
    M, N = 12, 20

    @T.prim_func
    def main(src: T.ptr, out: T.Tensor((M, N), "float32")):
        with T.Kernel(1, threads=1):
            At = T.make_tensor(src, (M, N), "float32", strides=(1, M))  # src holds N x M
            for i, j in T.grid(M, N):
                out[i, j] = At[i, j]

    k = compile_cpu(main)
    src = rand(rng, (N, M))
    out = poison((M, N))
    k(src, out)
    assert_close(out, src.T)


@pytest.mark.cpu_target
def test_pointer_argument_errors_name_the_parameter():
    k = compile_cpu(pointer_matmul(16, 16, 8))
    a = np.zeros((16, 8), np.float32)
    with pytest.raises(TileLangArgumentError, match=r"argument 'b' is a pointer \(T\.ptr\).*got float"):
        k(a, 1.5, a, 16, 16, 8)
    with pytest.raises(TileLangArgumentError, match=r"argument 'a' is a pointer; -4 is no address"):
        k(-4, a, a, 16, 16, 8)
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        with pytest.raises(TileLangArgumentError, match="argument 'c' is on cuda"):
            k(a, a, torch.zeros(4, device="cuda"), 16, 16, 8)


def test_make_tensor_rejects_what_is_no_address():
    # (the front end reports these while it parses the kernel)
    with pytest.raises(TileLangCompileError, match=r"A is a tensor; pass a T.ptr parameter or an int64 address"):
        @T.prim_func
        def from_tensor(A: T.Tensor((4,), "float32"), out: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                V = T.make_tensor(A, (4,), "float32")
                for i in T.serial(4):
                    out[i] = V[i]

    with pytest.raises(TileLangCompileError, match=r"the address must be a T.ptr parameter or an int64 value"):
        @T.prim_func
        def float_address(x: T.float32, out: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=1):
                V = T.make_tensor(x, (4,), "float32")
                for i in T.serial(4):
                    out[i] = V[i]

    with pytest.raises(TileLangCompileError, match=r"must be inside `with T.Kernel"):
        @T.prim_func
        def table_outside_kernel(t: T.Tensor([2], T.ptr), out: T.Tensor((4,), "float32")):
            V = T.make_tensor(t[0], (4,), "float32")
            with T.Kernel(1, threads=1):
                for i in T.serial(4):
                    out[i] = V[i]


def test_ptr_annotations_follow_upstreams_signatures():
    assert repr(T.ptr) == "T.ptr" and T.handle is T.ptr
    assert repr(T.ptr(T.float16)) == "T.ptr(float16)"
    with pytest.raises(Exception, match="only global pointers"):
        T.ptr(T.float16, "shared")


@needs_cuda_compiler
def test_cuda_pointer_kernels_compile_without_vector_accesses_through_addresses():
    k = tilelang.compile(pointer_matmul(64, 64, 32, "float16"), target="cuda -arch=sm_90a")
    src = k.get_kernel_source()
    assert "void* a, void* b, void* c, int32_t m" in src
    # the address's alignment is unknown: element-wide copies, with a remark saying so
    assert "reinterpret_cast<tl::half*>(a)" in src
    assert "cp_async_zfill_16" not in src and "CUtensorMap" not in src
    assert any("2-byte accesses" in r for r in k.get_remarks())
    g = tilelang.compile(grouped_gemm([16, 33, 64], 96, 128, 32, 32, 32, "float16"), target="cuda -arch=sm_90a")
    gsrc = g.get_kernel_source()
    assert "const int64_t A_addr = " in gsrc and "a_ptrs[" in gsrc
    assert "reinterpret_cast<tl::half*>(A_addr)" in gsrc


@tilelang.jit
def scaled_through_pointers(A: T.ptr, B: T.ptr, M: int, N: int, dtype: T.dtype, factor: int = 2):
    A = T.make_tensor(A, (M, N), dtype)
    B = T.make_tensor(B, (M, N), dtype)
    with T.Kernel(1, threads=32) as bx:
        for i, j in T.Parallel(M, N):
            B[i, j] = A[i, j] * factor


def test_eager_pointer_parameters_are_runtime_addresses(rng):
    # upstream's eager style: `A: T.ptr` in the signature is an address at every call; par_compile
    # passes T.ptr() in its place, and calls with tensors then reuse those kernels
    kernels = scaled_through_pointers.par_compile(
        [{"A": T.ptr(), "B": T.ptr(), "M": 64, "N": 32, "dtype": T.float32, "factor": f} for f in (2, 3)])
    assert len(kernels) == 2 and kernels[0] is not kernels[1]
    for factor, kernel in zip((2, 3), kernels):
        a = rand(rng, (64, 32))
        b = poison((64, 32))
        scaled_through_pointers(a, b, 64, 32, T.float32, factor)
        np.testing.assert_array_equal(b, a * factor)
        # the same kernel for any tensors: the addresses are not part of its key
        assert scaled_through_pointers.compile(T.ptr(), T.ptr(), 64, 32, T.float32, factor) is kernel
