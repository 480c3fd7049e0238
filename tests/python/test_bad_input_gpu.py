"""docs/bad-input.md's CUDA rows with real torch tensors on a real GPU (test_bad_input.py
checks the same messages on stand-ins without one): each mistake gives its documented
message, a faulting kernel names itself and says the context is lost, and kernels called
from several threads on several streams at once stay correct. Skipped without a GPU."""
import os
import subprocess
import sys
import textwrap
import threading

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import TileLangArgumentError, TileLangRuntimeError
from test_bad_input import _documented, _message, huge, mat, saxpy


def _cuda_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    return torch


@pytest.fixture(scope="module")
def cuda_saxpy():
    _cuda_torch()
    return tilelang.compile(saxpy, target="cuda")


def _gpu_cases(torch):
    dev = "cuda"
    x, y = torch.randn(10, device=dev), torch.zeros(10, device=dev)
    big = torch.randn(12, device=dev)
    return {
        # docs/bad-input.md, "CUDA target": tensor checks
        "numpy array": ((np.zeros(10, np.float32), y, 1.0, 1),
                        "saxpy(): argument 'X' is a numpy array, in host memory, but this kernel runs on CUDA "
                        "(cuda:0); pass a CUDA tensor, e.g. torch.from_numpy(X).to('cuda:0')"),
        "CPU tensor": ((torch.zeros(10), y, 1.0, 1),
                       "saxpy(): argument 'X' is on cpu but this kernel runs on CUDA (cuda:0); move it with "
                       "X.to('cuda:0')"),
        "misaligned view": ((big[1:11], y, 1.0, 1),
                            "saxpy(): argument 'X' starts at an address that is not 16-byte aligned (a view into "
                            "another tensor?); pass X.clone()"),
        "not a tensor": (([1.0, 2.0], y, 1.0, 1),
                         "saxpy(): argument 'X' must be a torch CUDA tensor on cuda:0, got list: [1.0, 2.0]"),
        # "Both targets" rows, through the CUDA call path
        "too few arguments": ((x, y), "saxpy() takes 4 argument(s) (X, Y, alpha, reps), got 2"),
        "too many arguments": ((x, y, 1.0, 1, 5), "saxpy() takes 4 argument(s) (X, Y, alpha, reps), got 5"),
        "wrong dtype": ((x.double(), y, 1.0, 1), "saxpy(): argument 'X' must have dtype float32, got float64"),
        "wrong number of dimensions": ((torch.zeros(2, 5, device=dev), y, 1.0, 1),
                                       "saxpy(): argument 'X' must be 1-D with shape (n), got shape (2, 5)"),
        "dynamic sizes disagree": ((x, torch.zeros(11, device=dev), 1.0, 1),
                                   "saxpy(): dynamic dimension 'n' is 10 from an earlier argument but 11 in 'Y' "
                                   "(dimension 0)"),
        "float for an integer scalar": ((x, y, 1.0, 2.5), "saxpy(): argument 'reps' expects an int32 scalar, got "
                                                          "float: 2.5"),
        "scalar out of range": ((x, y, 1.0, 2**33), "saxpy(): argument 'reps' is 8589934592, out of the range of "
                                                    "int32 [-2147483648, 2147483647]"),
    }


CASE_NAMES = ["numpy array", "CPU tensor", "misaligned view", "not a tensor", "too few arguments",
              "too many arguments", "wrong dtype", "wrong number of dimensions", "dynamic sizes disagree",
              "float for an integer scalar", "scalar out of range"]


@pytest.mark.parametrize("case", CASE_NAMES)
def test_gpu_bad_argument(cuda_saxpy, case):
    torch = _cuda_torch()
    args, expected = _gpu_cases(torch)[case]
    y = args[1] if len(args) > 1 else None
    before = y.clone() if isinstance(y, torch.Tensor) else None
    # the public call, without the suite's CUDA mode moving numpy arrays to the GPU first
    call = getattr(type(cuda_saxpy), "_call_unconverted", type(cuda_saxpy).__call__)
    assert _message(TileLangArgumentError, call, cuda_saxpy, *args) == expected
    _documented(expected)
    if before is not None:  # refused before the launch: nothing was written
        torch.cuda.synchronize()
        assert torch.equal(y, before)


def test_gpu_non_contiguous_and_wrong_static_shape():
    torch = _cuda_torch()
    k = tilelang.compile(mat, target="cuda")
    a = torch.randn(6, 4, device="cuda").t()  # shape (4, 6), strides (1, 4)
    msg = _message(TileLangArgumentError, k, a, torch.zeros(4, 6, device="cuda"))
    assert msg == ("mat(): argument 'A' must be contiguous (row-major); it has strides (1, 4) for shape (4, 6), "
                   "expected (6, 1); pass A.contiguous(), or declare it T.StridedTensor(shape, strides, dtype)")
    msg = _message(TileLangArgumentError, k, torch.randn(4, 5, device="cuda"), torch.zeros(4, 6, device="cuda"))
    assert msg == "mat(): argument 'A' must have shape (4, 6), got (4, 5) (dimension 1 is 5, expected 6)"
    _documented(msg)


def test_gpu_good_call_after_refusals(cuda_saxpy):
    """The refusals above leave the kernel usable: a correct call computes Y += alpha X."""
    torch = _cuda_torch()
    x, y = torch.randn(1000, device="cuda"), torch.randn(1000, device="cuda")
    want = y.double() + 0.5 * x.double()
    cuda_saxpy(x, y, 0.5, 1)
    torch.cuda.synchronize()
    assert torch.allclose(y.double(), want, atol=1e-5)


def test_gpu_shared_memory_beyond_the_device():
    torch = _cuda_torch()
    with pytest.raises(TileLangRuntimeError, match=r"^kernel 'huge' needs 262144 bytes of shared memory, the "
                                                   r"device( \(sm_\w+\))? has \d+; use smaller tiles"):
        k = tilelang.compile(huge, target="cuda")
        a = torch.randn(256, 256, device="cuda")
        k(a, torch.empty_like(a))


_FAULT = textwrap.dedent('''
    import torch, tilelang
    import tilelang.language as T
    from tilelang import TileLangRuntimeError

    # Every element access to a tensor is guarded, so an out-of-range index cannot fault;
    # a failed run-time assert traps, which loses the context as a real fault does.
    @T.prim_func
    def wild(I: T.Tensor((1,), "int64"), A: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32) as bx:
            assert I[0] < 4, "index in range"
            A[I[0]] = 1.0

    k = tilelang.compile(wild, target="cuda")
    far = torch.tensor([1 << 40], dtype=torch.int64, device="cuda")
    a = torch.zeros(4, device="cuda")
    for _ in range(3):
        try:
            k(far, a)
            torch.cuda.synchronize()
        except TileLangRuntimeError as e:
            print("OURS:", e)
            break
        except Exception as e:  # torch's synchronize saw the fault first; our next call must say so
            print("TORCH:", type(e).__name__)
''')


def test_gpu_faulting_kernel_names_itself_and_the_lost_context(tmp_path):
    """A kernel that traps (a failed run-time assert) loses the context. The fault is
    asynchronous; our next launch in that process reports it: the kernel's name, the
    driver's error, and that the context cannot be used again. In a subprocess: the
    context really is lost."""
    _cuda_torch()
    script = tmp_path / "fault.py"
    script.write_text(_FAULT)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TILELANG_PRINT_ON_COMPILATION="0"))
    out = r.stdout + r.stderr
    assert "OURS: CUDA kernel 'wild' failed" in out, out
    assert "CUDA_ERROR_" in out and "The CUDA context is no longer usable" in out, out
    assert "Segmentation fault" not in out and r.returncode in (0, 1), out


def test_gpu_kernels_from_many_threads_on_their_own_streams():
    """Four Python threads, each on its own CUDA stream, call one kernel 25 times on their
    own tensors at once; every result is checked against torch in float64."""
    torch = _cuda_torch()
    n = 1 << 16

    @T.prim_func
    def axpby(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), Z: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=256) as bx:
            for i in T.Parallel(256):
                Z[bx * 256 + i] = X[bx * 256 + i] * 2.0 - Y[bx * 256 + i]

    k = tilelang.compile(axpby, target="cuda")
    errors = []

    def worker(seed):
        try:
            s = torch.cuda.Stream()
            g = torch.Generator(device="cuda").manual_seed(seed)
            with torch.cuda.stream(s):
                for _ in range(25):
                    x = torch.randn(n, device="cuda", generator=g)
                    y = torch.randn(n, device="cuda", generator=g)
                    z = torch.full((n,), float("nan"), device="cuda")
                    k(x, y, z)
                    want = x.double() * 2 - y.double()
                    if not torch.allclose(z.double(), want, atol=1e-5):
                        errors.append(f"thread {seed}: wrong result")
            s.synchronize()
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(f"thread {seed}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
