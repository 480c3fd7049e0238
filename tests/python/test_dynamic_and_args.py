"""T.dynamic dimensions (one kernel, many sizes), scalar parameters, run-time loop counts,
argument checking (every error names the parameter), torch tensors, target aliases."""
import re
import sys

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, cpu_target_only, f64, poison, rand


@tilelang.jit(out_idx=[-1], target="c")
def dyn_kernel(N, bm):
    m = T.dynamic("m")

    @T.prim_func
    def main(A: T.Tensor((m, N), "float32"), Bias: T.Tensor((m,), "float32"), alpha: T.float32,
             n_iter: T.int32, Out: T.Tensor((m, N), "float32")):
        with T.Kernel(T.ceildiv(m, bm), threads=32) as bx:
            f = T.alloc_fragment((bm, N), "float32")
            b = T.alloc_fragment((bm,), "float32")
            T.copy(A[bx * bm, 0], f)
            T.copy(Bias[bx * bm:(bx + 1) * bm], b)
            for _ in T.Pipelined(n_iter, num_stages=3):  # a run-time trip count
                for i, j in T.Parallel(bm, N):
                    f[i, j] = f[i, j] + alpha
            for i, j in T.Parallel(bm, N):
                f[i, j] = f[i, j] * b[i]
            T.copy(f, Out[bx * bm, 0])
    return main


def test_dynamic_dims_scalars_runtime_trip_count(rng):
    N, bm = 5, 8
    kernel = dyn_kernel(N, bm)
    src = kernel.get_kernel_source()
    for m, alpha, n_iter in [(3, 0.5, 0), (8, -1.25, 2), (21, 2.0, 5), (1, 3.0, 1)]:
        a, bias = rand(rng, (m, N)), rand(rng, (m,))
        out = kernel(a, bias, alpha, n_iter)
        assert out.shape == (m, N)
        assert_close(out, (f64(a) + n_iter * alpha) * f64(bias)[:, None], rtol=1e-5)
    assert dyn_kernel(N, bm) is kernel and kernel.get_kernel_source() == src
    # numpy scalars are accepted for scalar parameters
    a, bias = rand(rng, (4, N)), rand(rng, (4,))
    assert_close(kernel(a, bias, np.float32(1.0), np.int64(3)), (f64(a) + 3) * f64(bias)[:, None], rtol=1e-5)


def test_symbolic_alias_and_dynamic_in_two_dims(rng):
    m, n = T.symbolic("m"), T.dynamic("n")

    @T.prim_func
    def transpose_add(A: T.Tensor((m, n), "float16"), B: T.Tensor((n, m), "float16"), C: T.Tensor((m, n), "float32")):
        with T.Kernel(T.ceildiv(n, 4), T.ceildiv(m, 4)) as (bx, by):
            for i, j in T.Parallel(4, 4):
                if by * 4 + i < m and bx * 4 + j < n:
                    C[by * 4 + i, bx * 4 + j] = A[by * 4 + i, bx * 4 + j] + T.cast(B[bx * 4 + j, by * 4 + i], "float32")

    kernel = compile_cpu(transpose_add, out_idx=-1)
    for shape in [(3, 7), (9, 2), (4, 4)]:
        a, b = rand(rng, shape, "float16"), rand(rng, shape[::-1], "float16")
        assert_close(kernel(a, b), f64(a) + f64(b).T, rtol=1e-6)


def _raises(exc_type, pattern, fn, *args, param=None):
    with pytest.raises(exc_type, match=pattern) as info:
        fn(*args)
    if param is not None:
        assert f"'{param}'" in str(info.value), str(info.value)
    return info


def test_argument_errors(rng):
    kernel = dyn_kernel(4, 8)
    a, bias = rand(rng, (6, 4)), rand(rng, (6,))
    E = tilelang.TileLangArgumentError
    assert issubclass(E, TypeError)
    # wrong number of arguments: the message lists the parameters
    info = _raises(E, r"takes 4 argument", kernel, a, bias, 1.0)
    assert all(p in str(info.value) for p in ("A", "Bias", "alpha", "n_iter"))
    # wrong dtype
    _raises(E, r"dtype float32.*float64", kernel, a.astype(np.float64), bias, 1.0, 1, param="A")
    _raises(E, r"dtype float32.*int32", kernel, a, bias.astype(np.int32), 1.0, 1, param="Bias")
    # wrong static dimension
    _raises(E, r"shape.*dimension 1 is 5, expected 4", kernel, rand(rng, (6, 5)), bias, 1.0, 1, param="A")
    # wrong number of dimensions
    _raises(E, r"2-D", kernel, rand(rng, (6, 4, 1)), bias, 1.0, 1, param="A")
    # two dynamic dimensions that disagree
    _raises(E, r"dynamic dimension 'm' is 6 .* but 7", kernel, a, rand(rng, (7,)), 1.0, 1, param="Bias")
    # non-contiguous arrays
    _raises(E, r"contiguous", kernel, rand(rng, (4, 6)).T, bias, 1.0, 1, param="A")
    _raises(E, r"contiguous", kernel, a, rand(rng, (12,))[::2], 1.0, 1, param="Bias")
    # not an array
    _raises(E, r"must be a tensor.*list", kernel, a.tolist(), bias, 1.0, 1, param="A")
    # scalars: an array, a float for an int
    _raises(E, r"float32 scalar", kernel, a, bias, np.ones(2), 1, param="alpha")
    _raises(E, r"int32 scalar", kernel, a, bias, 1.0, 2.5, param="n_iter")
    _raises(E, r"out of the range of int32", kernel, a, bias, 1.0, 2**33, param="n_iter")
    # a byte order the kernel cannot read
    _raises(E, r"byte order", kernel, a.astype(">f4"), bias, 1.0, 1, param="A")
    # after all the refusals the kernel still works
    assert_close(kernel(a, bias, 1.0, 1), (f64(a) + 1) * f64(bias)[:, None], rtol=1e-5)


def test_eager_argument_errors(rng):
    @tilelang.jit
    def add(A, B):
        M, N = T.const("M N")
        A: T.Tensor((M, N), T.float32)
        B: T.Tensor((M, N), T.float32)
        C = T.empty((M, N), T.float32)
        with T.Kernel(M, threads=1) as i:
            for j in T.serial(N):
                C[i, j] = A[i, j] + B[i, j]
        return C

    a, b = rand(rng, (3, 4)), rand(rng, (3, 4))
    np.testing.assert_allclose(add(a, b), a + b)
    with pytest.raises(tilelang.TileLangArgumentError, match=re.escape("(3, 4)")) as info:
        add(a, rand(rng, (3, 5)))  # M, N are bound from A; B disagrees
    assert "'B'" in str(info.value)
    with pytest.raises(tilelang.TileLangCompileError, match=r"'A'.*2-D"):
        add(rand(rng, (3,)), b)
    with pytest.raises(tilelang.TileLangArgumentError, match=r"'B'.*float32"):
        add(a, b.astype(np.float16))
    with pytest.raises(TypeError, match=r"add\(\)"):
        add(a)
    with pytest.raises(ValueError, match="out_idx"):
        tilelang.jit(out_idx=[-1])(add.func)


def test_torch_tensors(rng):
    torch = pytest.importorskip("torch")
    kernel = dyn_kernel(4, 8)
    a, bias = torch.randn(10, 4), torch.randn(10)
    out = kernel(a, bias, 0.5, 2)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (10, 4)
    ref = (a.double() + 1.0) * bias.double()[:, None]
    assert torch.allclose(out.double(), ref, rtol=1e-5, atol=1e-5)
    # outputs passed as parameters, mixed with numpy
    m = T.dynamic("m")

    @T.prim_func
    def neg(A: T.Tensor((m,), "bfloat16"), B: T.Tensor((m,), "bfloat16")):
        with T.Kernel(1, threads=1):
            for i in T.serial(m):
                B[i] = -A[i]

    k2 = compile_cpu(neg)
    x = torch.randn(7, dtype=torch.bfloat16)
    y = torch.full((7,), float("nan"), dtype=torch.bfloat16)
    k2(x, y)
    assert torch.equal(y, -x)
    with pytest.raises(tilelang.TileLangArgumentError, match="'A'.*contiguous"):
        k2(torch.randn(14, dtype=torch.bfloat16)[::2], y)


@cpu_target_only
def test_outputs_of_a_kernel_without_tensor_inputs(monkeypatch):
    """With no tensor argument to follow, outputs are torch tensors once the process has
    imported torch (as upstream returns them), numpy arrays otherwise."""

    @T.prim_func
    def iota(A: T.Tensor((16,), "int32")):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                A[i] = i * 3

    kernel = tilelang.compile(iota, out_idx=[-1], target="cpu")
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    out = kernel()
    assert isinstance(out, np.ndarray) and out.dtype == np.int32
    assert np.array_equal(out, np.arange(16) * 3)
    monkeypatch.undo()
    torch = pytest.importorskip("torch")
    out = kernel()
    assert isinstance(out, torch.Tensor) and out.dtype == torch.int32 and out.device.type == "cpu"
    assert torch.equal(out, torch.arange(16, dtype=torch.int32) * 3)


@pytest.mark.parametrize("target", ["cpu", "llvm", "c", "llvm -mcpu=native", {"kind": "c"}])
def test_target_aliases(target):
    @T.prim_func
    def one(A: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=1):
            A[0] = 41
            A[1] = A[0] + 1

    k = tilelang.compile(one, target=target)
    a = poison((2,), "int32")
    k(a)
    np.testing.assert_array_equal(a, [41, 42])
    assert k.target == "cpu"
    with pytest.raises(ValueError, match="unknown target"):
        tilelang.compile(one, target="vulkan")


def test_eager_scalars_order_and_outputs(rng):
    """Eager style: a run-time scalar declared in the body (`alpha: T.float32`) does not
    specialise the kernel; annotations in any order keep the signature's parameter order;
    two outputs; T.empty with a varargs shape; .compile(N=...) then a call with a scalar."""
    @tilelang.jit
    def axpby(X, Y, alpha, block=4):
        N = T.const("N")
        Y: T.Tensor((N,), T.float32)  # annotated before X on purpose
        X: T.Tensor((N,), T.float32)
        alpha: T.float32
        Out = T.empty(N, dtype=T.float32)
        Sum = T.empty((1,), T.float32)
        with T.Kernel(T.ceildiv(N, block)) as bx:
            for i in T.Parallel(block):
                if bx * block + i < N:
                    Out[bx * block + i] = alpha * X[bx * block + i] - Y[bx * block + i]
        with T.Kernel(1):
            acc = T.alloc_var(T.float32, 0)
            for i in T.serial(N):
                acc += X[i]
            Sum[0] = acc
        return Out, Sum

    x, y = rand(rng, (9,)), rand(rng, (9,))
    for alpha in (2.0, -0.5, 3):
        out, s = axpby(x, y, alpha)
        np.testing.assert_allclose(out, alpha * f64(x) - f64(y), rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(s, [f64(x).sum()], rtol=1e-5)
    assert len({id(k) for k in axpby._kernels.values()}) == 1  # one kernel for every alpha
    kernel = axpby.compile(N=9)
    assert [p.name for p in kernel.params[:3]] == ["X", "Y", "alpha"]
    out, s = kernel(x, y, 1.5)
    np.testing.assert_allclose(out, 1.5 * f64(x) - f64(y), rtol=1e-5, atol=1e-6)


def test_dynamic_size_tile(rng):
    @T.prim_func
    def k(A: T.Tensor((16,), "float32"), n: T.int32, B: T.Tensor((16,), "float32")):
        with T.Kernel(1):
            s = T.alloc_shared((n,), "float32")
            for i in T.serial(n):
                s[i] = A[i] * 2
            for i in T.serial(16):
                B[i] = T.if_then_else(i < n, s[T.min(i, n - 1)], -1.0)

    kernel = compile_cpu(k, out_idx=-1)
    a = rand(rng, (16,))
    np.testing.assert_allclose(kernel(a, 5), np.where(np.arange(16) < 5, a * 2, -1.0))


@tilelang.jit(out_idx=[-1], target="c")
def varlen_scale(block):
    total = T.dynamic("total")

    @T.prim_func
    def main(A: T.Tensor((total,), "float32"), cu: T.Tensor((3,), "int32"), max_len: T.int32,
             Out: T.Tensor((total,), "float32")):
        # the grid reads a scalar argument, as upstream's varlen attention does with max_seqlen_q
        with T.Kernel(T.ceildiv(max_len, block), 2, threads=block) as (bx, by):
            start, end = cu[by], cu[by + 1]
            for i in T.Parallel(block):
                if start + bx * block + i < end:
                    Out[start + bx * block + i] = A[start + bx * block + i] * (by + 2)
    return main


def test_grid_from_a_scalar_argument(rng):
    kernel = varlen_scale(16)
    for lens in [(5, 40), (33, 1), (16, 16)]:
        cu = np.array([0, lens[0], lens[0] + lens[1]], "int32")
        a = rand(rng, (int(cu[-1]),))
        out = kernel(a, cu, max(lens))
        want = np.concatenate([f64(a[:lens[0]]) * 2, f64(a[lens[0]:]) * 3])
        assert_close(out, want, rtol=1e-6)


def dynamic_k_gemm():
    M, N, K = T.dynamic("m"), T.dynamic("n"), T.dynamic("k")

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 64), T.ceildiv(M, 64), threads=128) as (bx, by):
            a_s = T.alloc_shared((64, 32), "float16")
            b_s = T.alloc_shared((32, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.clear(acc)
            for k in T.Pipelined(T.ceildiv(K, 32), num_stages=2):
                T.copy(A[by * 64, k * 32], a_s)
                T.copy(B[k * 32, bx * 64], b_s)
                T.gemm(a_s, b_s, acc)
            T.copy(acc, C[by * 64, bx * 64])

    return main


ALIGNED = {}  # the default: tl.enable_dynamic_alignment is on unless set to False
UNALIGNED = {"tl.enable_dynamic_alignment": False}


@pytest.mark.parametrize("configs", [ALIGNED, UNALIGNED], ids=["aligned_variant", "turned_off"])
def test_dynamic_row_lengths_aligned_and_not(rng, configs):
    """By default, on CUDA the kernel is compiled for row lengths that
    are multiples of 16 (vector copies, TMA) and a call with others (K = 40, 100; N = 72)
    runs the general variant; the CPU target has one variant. Every size must be right."""
    kernel = compile_cpu(dynamic_k_gemm(), pass_configs=configs)
    for m, n, k in [(64, 64, 64), (96, 128, 160), (70, 72, 40), (64, 64, 100)]:
        a, b = (rng.standard_normal(s).astype(np.float16) for s in ((m, k), (k, n)))
        c = poison((m, n))
        kernel(a, b, c)
        assert_close(c, f64(a) @ f64(b), rtol=1e-3)


def test_dynamic_row_lengths_get_an_aligned_cuda_variant():
    # turned off: one variant, no promise
    plain = tilelang.compile(dynamic_k_gemm(), target="cuda -arch=sm_90a", pass_configs=UNALIGNED)
    assert plain._cuda.general() is plain._cuda
    assert not any("compiled for multiples" in r for r in plain.get_remarks())
    k = tilelang.compile(dynamic_k_gemm(), target="cuda -arch=sm_90a", pass_configs=ALIGNED)
    remarks = "\n".join(k.get_remarks())
    assert "dynamic size(s) k, n: compiled for multiples of 16 elements" in remarks, remarks
    assert "warp-specialized" in remarks, remarks  # TMA can take the rows now
    general = k._cuda.general()
    assert general is not k._cuda and general.general() is general
    g = "\n".join(general.remarks)
    assert "innermost dimension is not static" in g and "compiled for multiples" not in g, g
    # dynamic rows only (static row length): no promise, one variant
    m = T.dynamic("m")

    @T.prim_func
    def rows(A: T.Tensor((m, 64), "float32"), B: T.Tensor((m, 64), "float32")):
        with T.Kernel(T.ceildiv(m, 4), threads=64) as bx:
            for i, j in T.Parallel(4, 64):
                B[bx * 4 + i, j] = A[bx * 4 + i, j] * 2

    static = tilelang.compile(rows, target="cuda -arch=sm_90a", pass_configs=ALIGNED)
    assert static._cuda.general() is static._cuda
    assert not any("compiled for multiples" in r for r in static.get_remarks())
