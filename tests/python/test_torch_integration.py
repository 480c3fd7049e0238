"""Kernels inside PyTorch: as custom ops in torch.compile graphs (no graph break), captured
in CUDA graphs, on the current stream, and fed DLPack tensors of other frameworks.

The CUDA tests need torch with a GPU (the GPU script runs them); the CPU ones need torch
only. Without torch everything here skips, except the schema analysis, which is pure."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def _torch():
    # imported per test: CI has no torch, and the schema tests need none
    return pytest.importorskip("torch")


def _cuda_torch():
    t = _torch()
    if not t.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return t


def _axpy(n, block=128, dtype="float32"):
    @T.prim_func
    def axpy(X: T.Tensor((n,), dtype), Y: T.Tensor((n,), dtype), Z: T.Tensor((n,), dtype)):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Z[bx * block + i] = X[bx * block + i] * 2.0 + Y[bx * block + i]

    return axpy


def _scale_in_place(n, block=128):
    @T.prim_func
    def scale(X: T.Tensor((n,), "float32"), S: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    S[bx * block + i] = S[bx * block + i] * X[bx * block + i]

    return scale


def _rowsum_dynamic(block_n=64):
    m = T.dynamic("m")

    @T.prim_func
    def rowsum(A: T.Tensor((m, block_n), "float32"), R: T.Tensor((m,), "float32")):
        with T.Kernel(m, threads=64) as bx:
            tile = T.alloc_fragment((1, block_n), "float32")
            acc = T.alloc_fragment((1,), "float32")
            T.copy(A[bx:bx + 1, :], tile)
            T.reduce_sum(tile, acc, dim=1)
            T.copy(acc, R[bx:bx + 1])

    return rowsum


def test_written_params_names_every_kind_of_write():
    @T.prim_func
    def f(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((8,), "float32"),
          D: T.Tensor((8,), "float32"), E: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8):
            t = T.alloc_fragment((8,), "float32")
            T.copy(A, t)
            for i in T.Parallel(8):
                B[i] = t[i]
            T.atomic_add(C[0], 1.0)
            T.copy(t, E)

    assert _tl.written_params(f.node) == ["B", "C", "E"]


def test_schema_marks_written_inputs_as_mutated():
    from tilelang.jit.torch_op import _schema

    k = tilelang.compile(_scale_in_place(100), target="cpu")
    assert _schema(k, set(_tl.written_params(k.func.node))) == "(Tensor X, Tensor(a!) S) -> ()"
    k = tilelang.compile(_axpy(100), out_idx=[2], target="cpu")
    assert _schema(k, set()) == "(Tensor X, Tensor Y) -> Tensor"


@pytest.mark.cpu_target
def test_custom_op_in_torch_compile_cpu_without_graph_break():
    torch = _torch()
    k = tilelang.compile(_axpy(1000), out_idx=[2], target="cpu")

    def model(x, y):
        return torch.relu(k(x, y)) + 1

    x, y = torch.randn(1000), torch.randn(1000)
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    got = compiled(x, y)
    ref = torch.relu(x.double() * 2 + y.double()) + 1
    torch.testing.assert_close(got.double(), ref, rtol=1e-5, atol=1e-5)
    explained = torch._dynamo.explain(model)(x, y)
    assert explained.graph_break_count == 0


@pytest.mark.cpu_target
def test_custom_op_runs_eagerly_and_in_place():
    torch = _torch()
    k = tilelang.compile(_scale_in_place(300), target="cpu")
    op = k.as_torch_op()
    assert k.as_torch_op() is op  # registered once
    x, s = torch.randn(300), torch.randn(300)
    want = s.double() * x.double()
    op(x, s)
    torch.testing.assert_close(s.double(), want)

    def model(x, s):
        s2 = s.clone()
        k(x, s2)  # in place on an intermediate: functionalized by torch.compile
        return s2 * 3

    s = torch.randn(300)
    got = torch.compile(model, backend="aot_eager", fullgraph=True)(x, s)
    torch.testing.assert_close(got.double(), s.double() * x.double() * 3, rtol=1e-5, atol=1e-5)


@pytest.mark.cpu_target
def test_custom_op_dynamic_sizes_in_fake_mode():
    torch = _torch()
    k = tilelang.compile(_rowsum_dynamic(), out_idx=[1], target="cpu")

    def model(a):
        return k(a) * 2

    compiled = torch.compile(model, backend="aot_eager", fullgraph=True, dynamic=True)
    for m in (3, 17, 64):
        a = torch.randn(m, 64)
        torch.testing.assert_close(compiled(a).double(), a.double().sum(1) * 2, rtol=1e-5, atol=1e-4)


def test_as_torch_op_rejects_a_bad_name():
    _torch()
    k = tilelang.compile(_axpy(10), out_idx=[2], target="cpu")
    with pytest.raises(ValueError, match="namespace::op"):
        k.as_torch_op("no_namespace")


# ---------------------------------------------------------------------------- CUDA


def test_cuda_kernel_in_torch_compile_inductor():
    torch = _cuda_torch()
    k = tilelang.compile(_axpy(4096), out_idx=[2], target="cuda")

    def model(x, y):
        return torch.sin(k(x, y)) * 2

    x, y = torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")
    got = torch.compile(model, fullgraph=True)(x, y)
    ref = torch.sin(x.double() * 2 + y.double()) * 2
    torch.testing.assert_close(got.double(), ref, rtol=1e-5, atol=1e-5)
    assert torch._dynamo.explain(model)(x, y).graph_break_count == 0


def test_cuda_graph_capture_and_replay():
    torch = _cuda_torch()
    k = tilelang.compile(_axpy(5000), out_idx=[2], target="cuda")
    x, y = torch.randn(5000, device="cuda"), torch.randn(5000, device="cuda")
    k(x, y)  # warm up (module load) outside the capture
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        k(x, y)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        z = k(x, y)
    for _ in range(3):
        x.copy_(torch.randn(5000, device="cuda"))
        y.copy_(torch.randn(5000, device="cuda"))
        z.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(z.double(), x.double() * 2 + y.double(), rtol=1e-6, atol=1e-6)


def test_cuda_graph_of_a_warp_specialized_gemm():
    """TMA descriptors are built on the host at capture: the replay must reuse them."""
    torch = _cuda_torch()
    if torch.cuda.get_device_capability() < (9, 0):
        pytest.skip("Hopper")
    M = N = K = 256

    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            a = T.alloc_shared((128, 64), "float16")
            b = T.alloc_shared((64, 128), "float16")
            c = T.alloc_fragment((128, 128), "float32")
            T.clear(c)
            for ko in T.Pipelined(K // 64, num_stages=3):
                T.copy(A[by * 128, ko * 64], a)
                T.copy(B[ko * 64, bx * 128], b)
                T.gemm(a, b, c)
            T.copy(c, C[by * 128, bx * 128])

    k = tilelang.compile(gemm, out_idx=[2], target="cuda")
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    k(a, b)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = k(a, b)
    a.copy_(torch.randn(M, K, device="cuda", dtype=torch.float16))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(c.double(), a.double() @ b.double(), rtol=1e-3, atol=1e-2)


def test_cuda_kernel_runs_on_the_current_stream():
    """On a side stream, x is rewritten after a long sleep and then the kernel reads it: a
    launch on any other stream would run before the rewrite and see the old x."""
    torch = _cuda_torch()
    n = 1 << 20
    k = tilelang.compile(_axpy(n), out_idx=[2], target="cuda")
    x, y = torch.zeros(n, device="cuda"), torch.randn(n, device="cuda")
    new_x = torch.randn(n, device="cuda")
    k(x, y)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        x.copy_(new_x)
        z = k(x, y)
    s.synchronize()
    torch.testing.assert_close(z.double(), new_x.double() * 2 + y.double(), rtol=1e-6, atol=1e-6)


class _ForeignCudaTensor:
    """Stands in for a CuPy or JAX array: only the DLPack protocol, no torch type."""

    def __init__(self, t):
        self._t = t

    def __dlpack__(self, stream=None, **kw):
        return self._t.__dlpack__(stream=stream, **kw) if stream is not None else self._t.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._t.__dlpack_device__()


def test_dlpack_tensors_from_other_frameworks_on_cuda():
    torch = _cuda_torch()
    k = tilelang.compile(_axpy(777), out_idx=[2], target="cuda")
    x, y = torch.randn(777, device="cuda"), torch.randn(777, device="cuda")
    z = k(_ForeignCudaTensor(x), _ForeignCudaTensor(y))
    torch.cuda.synchronize()
    torch.testing.assert_close(z.double(), x.double() * 2 + y.double(), rtol=1e-6, atol=1e-6)
    cupy = None
    try:
        import cupy  # noqa: F401
    except ImportError:
        pass
    if cupy is not None:
        cx, cy = cupy.asarray(x.cpu().numpy()), cupy.asarray(y.cpu().numpy())
        z = k(cx, cy)
        torch.testing.assert_close(z.cpu().double(), x.cpu().double() * 2 + y.cpu().double())


class _ForeignCpuArray:
    def __init__(self, a):
        self._a = a

    def __dlpack__(self, **kw):
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self._a.__dlpack_device__()


@pytest.mark.cpu_target
def test_dlpack_arrays_on_the_cpu_target():
    rng = np.random.default_rng(7)
    k = tilelang.compile(_axpy(333), target="cpu")
    x, y = rng.standard_normal(333).astype(np.float32), rng.standard_normal(333).astype(np.float32)
    z = np.full(333, np.nan, np.float32)
    k(_ForeignCpuArray(x), _ForeignCpuArray(y), z)
    np.testing.assert_allclose(z.astype(np.float64), x.astype(np.float64) * 2 + y, rtol=1e-6, atol=1e-6)


@pytest.mark.cpu_target
def test_dropping_a_kernel_unregisters_its_automatic_op():
    """The op registered when a kernel is compiled (with torch loaded) lives as long as the
    kernel: dropping the kernel frees it and its module (a server that builds thousands of
    kernels kept every one of them: 126 KiB and a loaded module per kernel on the H200). An
    op asked for with as_torch_op() keeps its kernel alive."""
    import gc
    import weakref

    torch = _torch()
    k = tilelang.compile(_axpy(64, block=64), out_idx=[2], target="cpu")
    name = k._torch_op[0]
    ns, op = name.split("::")
    assert hasattr(getattr(torch.ops, ns), op)
    ref = weakref.ref(k)
    del k
    gc.collect()
    assert ref() is None, "the kernel is freed"
    with pytest.raises((AttributeError, RuntimeError)):
        getattr(getattr(torch.ops, ns), op)  # and its op is gone
    k2 = tilelang.compile(_axpy(64, block=64), out_idx=[2], target="cpu")
    kept = k2.as_torch_op()
    ref2 = weakref.ref(k2)
    del k2
    gc.collect()
    assert ref2() is not None, "as_torch_op() keeps the kernel"
    x, y = torch.randn(64), torch.randn(64)
    torch.testing.assert_close(kept(x, y), x * 2 + y)


@pytest.mark.cpu_target
def test_a_dropped_kernels_op_name_is_reused_and_the_namespace_stays_listable():
    """torch keeps bookkeeping per op name for the life of the process, so a dropped kernel's
    name goes to the next kernel of the same name (memory bounded by the kernels alive, not
    the kernels ever built). torch before 2.12 also left the dropped op cached in torch.ops,
    and listing the namespace (inductor does, on its first compile) then failed."""
    import gc

    torch = _torch()
    k = tilelang.compile(_axpy(64, block=64), out_idx=[2], target="cpu")
    name = k._torch_op[0]
    del k
    gc.collect()
    ns = getattr(torch.ops, name.split("::")[0])
    for op in list(ns):  # what torch.export / inductor do when they list custom ops
        getattr(ns, op)
    k2 = tilelang.compile(_axpy(96, block=32), out_idx=[2], target="cpu")
    assert k2._torch_op[0] == name
    x, y = torch.randn(96), torch.randn(96)
    torch.testing.assert_close(torch.compile(lambda a, b: k2(a, b), backend="aot_eager", fullgraph=True)(x, y),
                               x * 2 + y)
    torch.testing.assert_close(k2._torch_op[1](x, y), x * 2 + y)
