"""The C++ call path of CUDA kernels (python/src/bind_cuda_call.cc): after a kernel's first
call, its ordinary calls run in one C++ call. Each test compares that path with the Python
path it replaces (the plan taken away): the same results, computed against float64, and the
same error for every argument the plan hands back. Skipped without a GPU."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import TileLangArgumentError
from tilelang.jit import kernel as kernel_module

n = T.dynamic("n")


@T.prim_func
def scaled_sum(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), Z: T.Tensor((n,), "float32"),
               alpha: T.float32, offset: T.int64):
    with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
        for i in T.Parallel(128):
            if bx * 128 + i < n:
                Z[bx * 128 + i] = X[bx * 128 + i] * alpha + Y[bx * 128 + i] + T.cast(offset, "float32")


@T.prim_func
def two_outputs(A: T.Tensor((32, 64), "float16"), S: T.Tensor((32, 64), "float32"),
                D: T.Tensor((32, 64), "float16")):
    with T.Kernel(32, threads=64) as bx:
        for j in T.Parallel(64):
            S[bx, j] = T.cast(A[bx, j], "float32") * 3.0
            D[bx, j] = A[bx, j] + A[bx, j]


def _torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return torch


def _unconverted(k):
    """The public call without the suite's CUDA mode (which moves numpy arrays to the GPU)."""
    call = getattr(type(k), "_call_unconverted", type(k).__call__)
    return lambda *args: call(k, *args)


def _without_plan(k, fn):
    plan, k._call_plan = k._call_plan, None
    try:
        return fn()
    finally:
        k._call_plan = plan


def _outcome(fn):
    try:
        return "ok", fn()
    except TileLangArgumentError as e:
        return "error", str(e)


def test_dynamic_sizes_and_scalars_through_the_plan():
    torch = _torch()
    k = tilelang.compile(scaled_sum, out_idx=[2], target="cuda")
    call = _unconverted(k)
    plans = []
    # The first call prepares the plan; the others use it. n is the innermost size, so the
    # kernel is compiled for multiples of 16 (tl.dynamic_alignment): 77 and 1000 are handed
    # back and run the general variant, whose own plan must not replace the kernel's.
    for size in (1024, 77, 4096, 1000, 16):
        x, y = torch.randn(size, device="cuda"), torch.randn(size, device="cuda")
        z = call(x, y, 0.25, 3)
        want = x.double() * 0.25 + y.double() + 3
        torch.testing.assert_close(z.double(), want, rtol=1e-6, atol=1e-6)
        assert z.shape == (size,) and z.dtype == torch.float32
        plans.append(k._call_plan)
    assert plans[0] is not None and all(p is plans[0] for p in plans)
    assert k._cuda.general() is not k._cuda  # (the alignment promise is in force)


def test_two_outputs_and_a_side_stream():
    torch = _torch()
    k = tilelang.compile(two_outputs, out_idx=[1, 2], target="cuda")
    call = _unconverted(k)
    a = torch.randn(32, 64, device="cuda").half()
    call(a)
    assert k._call_plan is not None
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a2 = torch.randn(32, 64, device="cuda").half()
        s, d = call(a2)
    side.synchronize()
    torch.testing.assert_close(s.double(), a2.double() * 3, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(d.double(), a2.double() * 2, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("exchange", [True, False])
def test_arguments_the_plan_hands_back_get_the_python_paths_answer(exchange):
    # (exchange: tensors and the stream read through torch's DLPack C exchange API, or
    # through attribute reads)
    torch = _torch()
    k = tilelang.compile(scaled_sum, target="cuda")
    call = _unconverted(k)
    x, y = torch.randn(300, device="cuda"), torch.randn(300, device="cuda")
    z = torch.full((300,), float("nan"), device="cuda")
    call(x, y, z, 1.0, 0)
    plan = k._call_plan
    assert plan is not None
    plan.exchange = exchange
    big = torch.randn(600, device="cuda")
    cases = {
        "wrong dtype": (x.double(), y, z, 1.0, 0),
        "sizes disagree": (x, y[:200], z, 1.0, 0),
        "CPU tensor": (x.cpu(), y, z, 1.0, 0),
        "misaligned view": (big[1:301], y, z, 1.0, 0),
        "non-contiguous": (big[::2], y, z, 1.0, 0),
        "too few": (x, y, z, 1.0),
        "float for int64": (x, y, z, 1.0, 2.5),
        "int64 out of range": (x, y, z, 1.0, 2**70),
        "numpy scalar": (x, y, z, np.float32(2.0), np.int64(5)),
        "bool for int64": (x, y, z, 1.0, True),
        "int for float": (x, y, z, 2, 1),
        "requires grad": (x.clone().requires_grad_(), y, z, 1.0, 0),
        "aligned view": (big[64:364], y, z, 1.0, 0),
    }
    for name, args in cases.items():
        z.fill_(float("nan"))
        got = _outcome(lambda: call(*args))
        got_z = z.clone()
        z.fill_(float("nan"))
        want = _outcome(lambda: _without_plan(k, lambda: call(*args)))
        assert got == want, name
        torch.cuda.synchronize()
        assert torch.equal(got_z.isnan(), z.isnan()), name
        if got[0] == "ok":
            assert torch.equal(got_z, z), name
    assert k._call_plan is plan  # (still there)


def test_a_kernel_with_strided_arguments_has_no_plan():
    torch = _torch()
    m = T.dynamic("m")

    @T.prim_func
    def strided(A: T.StridedTensor((m, 8), (T.dynamic("s"), 1), "float32"), B: T.Tensor((m, 8), "float32")):
        with T.Kernel(m, threads=8) as bx:
            for j in T.Parallel(8):
                B[bx, j] = A[bx, j] + 1.0

    k = tilelang.compile(strided, target="cuda")
    a = torch.randn(10, 16, device="cuda")[:, :8]
    b = torch.zeros(10, 8, device="cuda")
    _unconverted(k)(a, b)
    torch.cuda.synchronize()
    torch.testing.assert_close(b, a + 1)
    assert k._call_plan is None


def test_the_exchange_api_reads_what_attribute_reads_do():
    # torch 2.10 and later publish the DLPack C exchange table; where they do, the plan reads
    # each tensor's address, shape and strides in one call, and the current stream in another
    torch = _torch()
    k = tilelang.compile(two_outputs, out_idx=[1, 2], target="cuda")
    call = _unconverted(k)
    base = torch.randn(4, 32, 64, device="cuda").half()
    call(base[0])
    plan = k._call_plan
    assert plan.exchange == hasattr(torch.Tensor, "__dlpack_c_exchange_api__")
    side = torch.cuda.Stream()
    for a in (base[1], base[2:3].squeeze(0), base[3].T.contiguous().T.contiguous()):
        results = []
        for on in (True, False):
            plan.exchange = on
            with torch.cuda.stream(side):  # (the kernel runs on the current stream)
                results.append(call(a))
            side.synchronize()
        (s1, d1), (s2, d2) = results
        torch.testing.assert_close(s1.double(), a.double() * 3, rtol=1e-6, atol=1e-6)
        assert torch.equal(s1, s2) and torch.equal(d1, d2)
    assert k._call_plan is plan


def test_returned_outputs_are_ordinary_torch_tensors_that_free_their_memory():
    # returned outputs come from torch.empty on both paths: compact tensors of the declared
    # dtype on the kernel's device, sized by the call's dynamic dimensions, with resizable
    # caching-allocator storage (record_stream works on it), given back once dropped. (torch's
    # DLPack exchange allocator was tried and not taken: its tensors sit on from_blob storage,
    # not resizable, on which record_stream does nothing.)
    torch = _torch()
    k = tilelang.compile(scaled_sum, out_idx=[2], target="cuda")
    call = _unconverted(k)
    for size in (1000, 4096, 77):
        x = torch.randn(size, device="cuda")
        y = torch.randn(size, device="cuda")
        results = []
        for on in (True, False):
            if k._call_plan is not None:
                k._call_plan.exchange = on
            results.append(call(x, y, 2.5, 3))
        for z in results:
            assert z.dtype == torch.float32 and z.device == x.device and z.shape == (size,)
            assert z.is_contiguous() and not z.requires_grad and z.untyped_storage().resizable()
            torch.testing.assert_close(z.double(), x.double() * 2.5 + y.double() + 3, rtol=1e-6, atol=1e-5)
        assert torch.equal(results[0], results[1])
    assert k._call_plan is not None
    k._call_plan.exchange = True
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    for _ in range(200):
        z = call(x, y, 1.0, 0)
    del z
    torch.cuda.synchronize()
    assert torch.cuda.memory_allocated() == before
