"""T.StridedTensor parameters of the packed 4-bit types (float4_e2m1fn, int4, uint4), by
upstream's rule: the argument is a byte tensor whose last dimension holds two values per
byte, so the logical shape doubles the last dimension, and the logical strides (in 4-bit
values) are the byte strides times two except the last, which must be 1. Element (i, j) is
value i * s0 + j of the byte array: byte (that) // 2, low nibble when even. Symbolic sizes
and strides bind from these logical values. Results on the CPU target against a numpy model
of the bytes; the CUDA code compile-only."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.errors import TileLangArgumentError, TileLangCompileError
from tilelang.jit.cuda_backend import _search_dirs
from tilelang.utils.tensor import unpack_4bit

from conftest import compile_cpu

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())
needs_cuda_compiler = pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")

F4 = ml_dtypes.float4_e2m1fn
SENTINEL = -12345


def _random_bytes(rng, shape):
    return rng.integers(0, 256, shape).astype(np.uint8)


def _codes_of_view(view):
    """The 4-bit codes (0..15) of a byte view, read the way the kernel must: element (i, j)
    is nibble j % 2 (low first) of byte (i, j // 2) of the view."""
    return unpack_4bit(np.ascontiguousarray(view))


def _decode(codes, dtype):
    """Logical values of 4-bit codes as float64 (fp4 by ml_dtypes; int4 sign-extended)."""
    if dtype == "float4_e2m1fn":
        return codes.view(F4).astype(np.float64)
    if dtype == "int4":
        return ((codes.astype(np.int16) ^ 8) - 8).astype(np.float64)
    return codes.astype(np.float64)


# ---------------------------------------------------------------- binding sizes and strides


def _bind_kernel():
    """Writes the bound m and s (and reads one element, so the parameter is used)."""
    m, s = T.dynamic("m"), T.dynamic("s")

    @T.prim_func
    def bind(X: T.StridedTensor((m, 16), (s, 1), T.float4_e2m1fn), Out: T.Tensor((3,), T.int32)):
        with T.Kernel(1, threads=1):
            Out[0] = m
            Out[1] = s
            Out[2] = T.cast(T.cast(X[0, 1], T.float32) * 2.0, T.int32)

    return bind


@pytest.mark.parametrize("every", [1, 2, 4])
@pytest.mark.parametrize("m", [1, 4, 8])
def test_row_stride_binds_twice_the_byte_stride(rng, m, every):
    """Runtime (m, 8) bytes, rows `every` apart: logical shape (m, 16), stride 16 * every."""
    k = compile_cpu(_bind_kernel())
    base = _random_bytes(rng, (m * every, 8))
    view = base[::every]
    out = np.full(3, SENTINEL, np.int32)
    k(view, out)
    x01 = _decode(_codes_of_view(view), "float4_e2m1fn")[0, 1]
    assert list(out) == [m, 16 * every, int(x01 * 2)]


def test_symbolic_last_dimension_binds_the_logical_size(rng):
    n, s = T.dynamic("n"), T.dynamic("s")

    @T.prim_func
    def last(X: T.StridedTensor((4, n), (s, 1), T.float4_e2m1fn), Y: T.Tensor((4, n), T.uint4),
             Out: T.Tensor((2,), T.int32)):
        with T.Kernel(1, threads=1):
            Out[0] = n
            Out[1] = s

    k = compile_cpu(last)
    for width in (4, 8, 16, 32):
        out = np.full(2, SENTINEL, np.int32)
        k(_random_bytes(rng, (4, width)), _random_bytes(rng, (4, width)), out)
        assert list(out) == [2 * width, 2 * width]
        out[:] = SENTINEL
        k(_random_bytes(rng, (8, width))[::2], _random_bytes(rng, (4, width)), out)  # rows 2 * width bytes apart
        assert list(out) == [2 * width, 4 * width]


def _shared_stride_kernel():
    """Two packed tensors sharing m and the row stride s (upstream's shared symbolic case)."""
    m, s = T.dynamic("m"), T.dynamic("s")

    @T.prim_func
    def shared(X: T.StridedTensor((m, 16), (s, 1), T.float4_e2m1fn),
               Y: T.StridedTensor((m * 2, 16), (s, 1), T.float4_e2m1fn), Out: T.Tensor((2,), T.int32)):
        with T.Kernel(1, threads=1):
            Out[0] = m
            Out[1] = s

    return shared


@pytest.mark.parametrize("m", [2, 4, 8])
def test_shared_symbolic_size_and_stride(rng, m):
    k = compile_cpu(_shared_stride_kernel())
    out = np.full(2, SENTINEL, np.int32)
    k(_random_bytes(rng, (m, 8)), _random_bytes(rng, (2 * m, 8)), out)
    assert list(out) == [m, 16]
    out[:] = SENTINEL
    k(_random_bytes(rng, (2 * m, 8))[::2], _random_bytes(rng, (4 * m, 8))[::2], out)  # both 16 bytes apart
    assert list(out) == [m, 32]


def test_shared_stride_disagreement_names_the_parameter(rng):
    k = compile_cpu(_shared_stride_kernel())
    out = np.zeros(2, np.int32)
    with pytest.raises(TileLangArgumentError,
                       match=r"stride 's' of argument 'Y' \(dimension 0\) is 32, but s = 16 .*storage strides "
                             r"\(16, 1\) the logical strides \(32, 1\)"):
        k(_random_bytes(rng, (4, 8)), _random_bytes(rng, (16, 8))[::2], out)
    with pytest.raises(TileLangArgumentError, match=r"'Y' dimension 0 is 6, but m \* 2 = 8"):
        k(_random_bytes(rng, (4, 8)), _random_bytes(rng, (6, 8)), out)


def test_shared_symbolic_size_of_packed_tensors(rng):
    """Plain packed T.Tensors sharing m (x (m, 16), y (m * 4, 16)) and an affine last size."""
    m, n = T.dynamic("m"), T.dynamic("n")

    @T.prim_func
    def sizes(X: T.Tensor((m, 16), T.float4_e2m1fn), Y: T.Tensor((m * 4, 16), T.float4_e2m1fn),
              Z: T.Tensor((m * 2, n), T.int4), Out: T.Tensor((2,), T.int32)):
        with T.Kernel(1, threads=1):
            Out[0] = m
            Out[1] = n

    k = compile_cpu(sizes)
    for mv in (1, 2, 8):
        out = np.full(2, SENTINEL, np.int32)
        k(_random_bytes(rng, (mv, 8)), _random_bytes(rng, (4 * mv, 8)), _random_bytes(rng, (2 * mv, 8)), out)
        assert list(out) == [mv, 16]


# ---------------------------------------------------------------- loads and stores


def _widen_kernel(dtype, M=8, N=32):
    """B = float(A) for a packed A with a symbolic row stride; a block per row."""
    s = T.dynamic("s")

    @T.prim_func
    def widen(A: T.StridedTensor((M, N), (s, 1), dtype), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(M, threads=32) as bx:
            for j in T.Parallel(N):
                B[bx, j] = T.cast(A[bx, j], T.float32)

    return widen


@pytest.mark.parametrize("dtype", ["float4_e2m1fn", "int4", "uint4"])
def test_loads_read_the_strided_nibbles(rng, dtype):
    M, N = 8, 32
    k = compile_cpu(_widen_kernel(dtype, M, N))
    storage = np.int8 if dtype == "int4" else np.uint8
    for view in (_random_bytes(rng, (2 * M, 24))[::2, 4:4 + N // 2],   # rows 48 bytes apart, 4 bytes in
                 _random_bytes(rng, (M, N // 2))):                      # contiguous
        view = view.view(storage)
        b = np.full((M, N), np.nan, np.float32)
        k(view, b)
        np.testing.assert_array_equal(b.astype(np.float64), _decode(_codes_of_view(view.view(np.uint8)), dtype))


def _narrow_kernel(M=8, N=32, strides=None):
    """C = fp4(A) into a packed T.StridedTensor, every other row skipped by the view."""
    strides = strides or (T.dynamic("s"), 1)

    @T.prim_func
    def narrow(A: T.Tensor((M, N), T.float32), C: T.StridedTensor((M, N), strides, T.float4_e2m1fn)):
        with T.Kernel(M, threads=32) as bx:
            for j in T.Parallel(N):
                C[bx, j] = T.cast(A[bx, j], T.float4_e2m1fn)

    return narrow


@pytest.mark.parametrize("static", [False, True])
def test_stores_write_only_their_nibbles(rng, static):
    """Each store lands in its nibble of the strided view; the bytes between rows and the
    padding after each row keep their values."""
    M, N, pitch = 8, 32, 20  # 16 bytes of values + 4 of padding per row
    k = compile_cpu(_narrow_kernel(M, N, (2 * pitch, 1) if static else None))
    a = (rng.standard_normal((M, N)) * 3).astype(np.float32)
    back = _random_bytes(rng, (M, pitch))
    before = back.copy()
    k(a, back[:, :N // 2])
    assert (back[:, N // 2:] == before[:, N // 2:]).all(), "padding untouched"
    assert (unpack_4bit(back[:, :N // 2]) == a.astype(F4).view(np.uint8)).all()


def _scatter_kernel(block, strides):
    """Upstream's scalar-store case: each block copies one row of src (128 fp4) to a slot of
    a 3-D packed strided tensor chosen through an index tensor, element by element."""
    nv, nb = T.dynamic("n"), T.dynamic("num_blocks")

    @T.prim_func
    def scatter(Src: T.Tensor((nv, 128), T.float4_e2m1fn),
                Dst: T.StridedTensor((nb, block, 128), strides, T.float4_e2m1fn),
                Slots: T.Tensor((nv,), T.int32)):
        with T.Kernel(nv, threads=32) as i:
            for k in T.serial(128):
                Dst[Slots[i] // block, Slots[i] % block, k] = Src[i, k]

    return scatter


@pytest.mark.parametrize("block", [8, 16])
def test_scalar_scatter_with_static_and_dynamic_strides(rng, block):
    num_blocks, n, row_bytes, pad = 10, 40, 64, 4
    src = _random_bytes(rng, (n, row_bytes))
    slots = rng.permutation(num_blocks * block)[:n].astype(np.int32)

    def buffers():
        back = np.full((num_blocks, block * (row_bytes + pad)), 0xA5, np.uint8)
        return back, back[:, :block * row_bytes].reshape(num_blocks, block, row_bytes)

    # expected: row i of src at slot slots[i]; everything else keeps the fill
    ref, ref_view = buffers()
    ref_view[slots // block, slots % block] = src
    for strides in ((2 * block * (row_bytes + pad), 2 * row_bytes, 1),
                    (T.dynamic("ds0"), T.dynamic("ds1"), 1)):
        back, view = buffers()
        assert view.strides == (block * (row_bytes + pad), row_bytes, 1)
        compile_cpu(_scatter_kernel(block, strides))(src, view, slots)
        assert (back == ref).all(), f"{(back != ref).sum()} bytes differ with strides {strides}"


def test_torch_style_int8_storage_and_the_eager_style(rng):
    """Upstream passes int8 views of the bytes; the eager style binds T.const strides from
    the argument's logical strides."""

    @tilelang.jit
    def widen(A):
        M, N, sM = T.const("M, N, sM")
        A: T.StridedTensor[[M, N], [sM, 1], T.float4_e2m1fn]
        B = T.empty((M, N), T.float32)
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(M, N):
                B[i, j] = T.cast(A[i, j], T.float32)
        return B

    view = _random_bytes(rng, (12, 10))[::3, 2:8].view(np.int8)  # (4, 6) bytes, rows 30 bytes apart
    got = widen(view)
    assert got.shape == (4, 12)
    np.testing.assert_array_equal(got.astype(np.float64), _decode(_codes_of_view(view.view(np.uint8)), "float4_e2m1fn"))


# ---------------------------------------------------------------- what is refused


def test_argument_errors_name_the_parameter(rng):
    k = compile_cpu(_widen_kernel("float4_e2m1fn"))
    b = np.zeros((8, 32), np.float32)
    with pytest.raises(TileLangArgumentError,
                       match=r"'A' \(float4_e2m1fn, 2 per byte along the last dimension\) must have storage stride 1 "
                             r"in its last dimension, got storage strides \(32, 2\)"):
        k(_random_bytes(rng, (8, 32))[:, ::2], b)  # every other byte: the pairs are not packed
    with pytest.raises(TileLangArgumentError, match=r"'A' must have dtype float4_e2m1fn \(stored as .*got float32"):
        k(np.zeros((8, 16), np.float32), b)
    with pytest.raises(TileLangArgumentError, match=r"'A' .*logical shape \(8, 32\), got storage shape \(8, 16, 1\)"):
        k(np.zeros((8, 16, 1), np.uint8), b)
    with pytest.raises(TileLangArgumentError, match=r"'A' must have shape \(8, 32\).*storage shape \(8, 8\)"):
        k(np.zeros((8, 8), np.uint8), b)


@pytest.mark.parametrize("strides, message", [
    ((33, 1), r"stride 33 of dimension 0 of a float4_e2m1fn T.StridedTensor is odd"),
    ((64, 2), r"the last stride of a float4_e2m1fn T.StridedTensor must be 1 .*got 2"),
])
def test_strides_that_split_a_byte_are_compile_errors(strides, message):
    with pytest.raises(TileLangCompileError, match=message):
        compile_cpu(_narrow_kernel(8, 32, strides))


def test_static_stride_mismatch_is_in_logical_values(rng):
    k = compile_cpu(_narrow_kernel(8, 32, (48, 1)))
    a = np.zeros((8, 32), np.float32)
    with pytest.raises(TileLangArgumentError,
                       match=r"'C' must have strides \(48, 1\) \(in elements\), got \(32, 1\).*storage strides "
                             r"\(16, 1\) the logical strides \(32, 1\)"):
        k(a, _random_bytes(rng, (8, 16)))
    k(a, _random_bytes(rng, (8, 24))[:, :16])  # 24 bytes apart: 48 values


# ---------------------------------------------------------------- the CUDA code


@needs_cuda_compiler
@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_cuda_code_addresses_values_by_the_stride(arch):
    k = tilelang.compile(_scatter_kernel(8, (T.dynamic("ds0"), T.dynamic("ds1"), 1)), target=f"cuda -arch={arch}")
    src = k.get_kernel_source()
    assert "uint8_t* __restrict__ Dst" in src and "tl::store_packed(Dst" in src and "tl::load_packed<" in src
    assert "ds0" in src and "ds1" in src  # the strides bound at the call, in values
    assert "atom" in k.get_ptx()
    kw = tilelang.compile(_widen_kernel("int4"), target=f"cuda -arch={arch}")
    assert "tl::load_packed<" in kw.get_kernel_source() and kw.get_ptx()
    assert any("strides count 4-bit values" in r for r in kw.get_remarks())
