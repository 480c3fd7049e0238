"""Bad input gives a clear Python error naming the parameter and what was expected. Each
case's exact message is listed in docs/bad-input.md (checked here). CPU cases run for
real; CUDA argument checks run on stand-ins for torch tensors (no GPU or torch needed);
CUDA compile-time checks and the argument count run with NVRTC when it is found."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import TileLangArgumentError, TileLangRuntimeError, _tl
from tilelang.jit import arguments

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "bad-input.md")

n = T.dynamic("n")


@T.prim_func
def saxpy(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), alpha: T.float32, reps: T.int32):
    with T.Kernel(T.ceildiv(n, 64), threads=64) as bx:
        for i in T.Parallel(64):
            if bx * 64 + i < n:
                Y[bx * 64 + i] = Y[bx * 64 + i] + alpha * X[bx * 64 + i]


@T.prim_func
def mat(A: T.Tensor((4, 6), "float32"), B: T.Tensor((4, 6), "float32")):
    with T.Kernel(1, threads=1):
        for i, j in T.grid(4, 6):
            B[i, j] = A[i, j] * 2.0


@pytest.fixture(scope="module")
def cpu_saxpy():
    return tilelang.compile(saxpy, target="cpu")


@pytest.fixture(scope="module")
def cpu_mat():
    return tilelang.compile(mat, target="cpu")


def _message(exc_type, fn, *args):
    with pytest.raises(exc_type) as info:
        fn(*args)
    return str(info.value)


def _doc_text():
    with open(DOC) as f:
        return f.read()


def _documented(msg):
    """The message appears verbatim in docs/bad-input.md (in a table cell, `|` escaped)."""
    assert msg.replace("|", "\\|") in _doc_text(), f"not in docs/bad-input.md:\n{msg}"


X = np.arange(10, dtype=np.float32)
Y = np.zeros(10, dtype=np.float32)

CPU_CASES = {
    "too few arguments": (lambda k: (X, Y), "saxpy() takes 4 argument(s) (X, Y, alpha, reps), got 2"),
    "too many arguments": (lambda k: (X, Y, 1.0, 1, 5), "saxpy() takes 4 argument(s) (X, Y, alpha, reps), got 5"),
    "wrong dtype": (lambda k: (X.astype(np.float64), Y, 1.0, 1),
                    "saxpy(): argument 'X' must have dtype float32, got float64"),
    "wrong number of dimensions": (lambda k: (X.reshape(2, 5), Y, 1.0, 1),
                                   "saxpy(): argument 'X' must be 1-D with shape (n), got shape (2, 5)"),
    "dynamic sizes disagree": (lambda k: (X, np.zeros(11, np.float32), 1.0, 1),
                               "saxpy(): dynamic dimension 'n' is 10 from an earlier argument but 11 in 'Y' "
                               "(dimension 0)"),
    "non-contiguous array": (lambda k: (np.zeros(20, np.float32)[::2], Y, 1.0, 1),
                             "saxpy(): argument 'X' must be C-contiguous (row-major); it has strides (2,) (in "
                             "elements) for shape (10,), expected (1,); pass np.ascontiguousarray(X)"),
    "misaligned array": (lambda k: (np.frombuffer(bytearray(41), dtype=np.float32, offset=1), Y, 1.0, 1),
                         "saxpy(): argument 'X' is not aligned to its element size (4 bytes); pass X.copy()"),
    "byte order": (lambda k: (X.astype(">f4"), Y, 1.0, 1),
                   "saxpy(): argument 'X' has the non-native byte order '>f4'; pass X.astype('float32')"),
    "not a tensor": (lambda k: ([1.0, 2.0], Y, 1.0, 1),
                     "saxpy(): argument 'X' must be a tensor (numpy array, torch tensor or DLPack tensor), got list"),
    "array for a scalar": (lambda k: (X, Y, np.ones(2), 1),
                           "saxpy(): argument 'alpha' expects a float32 scalar, got ndarray: array([1., 1.])"),
    "float for an int scalar": (lambda k: (X, Y, 1.0, 2.5),
                                "saxpy(): argument 'reps' expects an int32 scalar, got float: 2.5"),
    "scalar out of range": (lambda k: (X, Y, 1.0, 2**33),
                            "saxpy(): argument 'reps' is 8589934592, out of the range of int32 "
                            "[-2147483648, 2147483647]"),
}


@pytest.mark.parametrize("case", sorted(CPU_CASES))
@pytest.mark.cpu_target
def test_cpu_bad_arguments(cpu_saxpy, case):
    make_args, expected = CPU_CASES[case]
    msg = _message(TileLangArgumentError, cpu_saxpy, *make_args(cpu_saxpy))
    assert msg == expected
    _documented(msg)
    # the kernel still works after a refusal
    y = np.zeros(10, dtype=np.float32)
    cpu_saxpy(X, y, 2.0, 1)
    np.testing.assert_array_equal(y, 2 * X)


@pytest.mark.cpu_target
def test_cpu_gpu_tensor_to_a_cpu_kernel(cpu_saxpy):
    msg = _message(TileLangArgumentError, cpu_saxpy, _FakeTensor((10,), _FakeDevice("cuda", 0)), Y, 1.0, 1)
    assert msg == ("saxpy(): argument 'X' is on cuda:0 but this kernel was compiled for the CPU; move it with "
                   ".cpu() or compile with target='cuda'")
    _documented(msg)


def test_cpu_wrong_static_shape(cpu_mat):
    msg = _message(TileLangArgumentError, cpu_mat, np.zeros((4, 5), np.float32), np.zeros((4, 6), np.float32))
    assert msg == "mat(): argument 'A' must have shape (4, 6), got (4, 5) (dimension 1 is 5, expected 6)"
    _documented(msg)


def test_cpu_dynamic_size_beyond_its_type(cpu_saxpy, tmp_path):
    """A 2^31-element float32 array (a sparse file, mapped and never touched) for an int32 size."""
    f32 = np.memmap(tmp_path / "big32.bin", dtype=np.float32, mode="w+", shape=(2**31,))
    msg = _message(TileLangArgumentError, cpu_saxpy, f32, f32, 1.0, 1)
    assert msg == ("saxpy(): dynamic dimension 'n' is 2147483648 in 'X', beyond the 2147483647 its type holds; "
                   "declare it T.dynamic('n', \"int64\")")
    _documented(msg)
    del f32


class _FakeDevice:
    """Stands in for torch.device."""

    def __init__(self, type_, index=None):
        self.type, self.index = type_, index

    def __str__(self):
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other):
        return (self.type, self.index) == (other.type, other.index)


class _FakeTensor:
    """Stands in for a torch tensor: what the argument checks read."""

    __module__ = "torch"

    def __init__(self, shape, device, strides=None, ptr=1 << 20):
        self.shape = tuple(shape)
        self.device = device
        self._strides = tuple(strides) if strides else arguments.contiguous_strides(shape)
        self._ptr = ptr

    def stride(self):
        return self._strides

    def is_contiguous(self):
        return self._strides == arguments.contiguous_strides(self.shape)

    def data_ptr(self):
        return self._ptr


CUDA0 = _FakeDevice("cuda", 0)

CUDA_CASES = {
    "numpy array to a CUDA kernel": (
        lambda: np.zeros(10, np.float32),
        "saxpy(): argument 'X' is a numpy array, in host memory, but this kernel runs on CUDA (cuda:0); pass a "
        "CUDA tensor, e.g. torch.from_numpy(X).to('cuda:0')"),
    "CPU tensor to a CUDA kernel": (
        lambda: _FakeTensor((10,), _FakeDevice("cpu")),
        "saxpy(): argument 'X' is on cpu but this kernel runs on CUDA (cuda:0); move it with X.to('cuda:0')"),
    "tensor on another GPU": (
        lambda: _FakeTensor((10,), _FakeDevice("cuda", 1)),
        "saxpy(): argument 'X' is on cuda:1 but this kernel runs on the current device cuda:0; move it with "
        "X.to('cuda:0'), or call the kernel under torch.cuda.device(1)"),
    "non-contiguous tensor": (
        lambda: _FakeTensor((4, 6), CUDA0, strides=(1, 4)),
        "saxpy(): argument 'X' must be contiguous (row-major); it has strides (1, 4) for shape (4, 6), expected "
        "(6, 1); pass X.contiguous(), or declare it T.StridedTensor(shape, strides, dtype)"),
    "misaligned tensor": (
        lambda: _FakeTensor((10,), CUDA0, ptr=(1 << 20) + 4),
        "saxpy(): argument 'X' starts at an address that is not 16-byte aligned (a view into another tensor?); "
        "pass X.clone()"),
    "not a tensor (CUDA)": (
        lambda: [1.0, 2.0],
        "saxpy(): argument 'X' must be a torch CUDA tensor on cuda:0, got list: [1.0, 2.0]"),
}


@pytest.mark.parametrize("case", sorted(CUDA_CASES))
def test_cuda_argument_checks(case):
    make, expected = CUDA_CASES[case]
    msg = _message(TileLangArgumentError, arguments.as_cuda_tensor, make(), "X", "saxpy", CUDA0)
    assert msg == expected
    _documented(msg)


def test_cuda_good_tensor_passes():
    t = _FakeTensor((4, 6), CUDA0)
    assert arguments.as_cuda_tensor(t, "X", "saxpy", CUDA0) is t


def test_cuda_failure_messages():
    sticky = RuntimeError("launching kernel saxpy_kernel (grid 1x1x1, block 64x1x1, 0 bytes dynamic shared memory) "
                          "failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)")
    msg = arguments.describe_cuda_failure("saxpy", sticky)
    assert msg.startswith("CUDA kernel 'saxpy' failed: launching kernel saxpy_kernel")
    assert "The CUDA context is no longer usable" in msg
    _documented(msg.split("\n")[1])
    plain = RuntimeError("launching kernel k (grid 1x1x1, block 2048x1x1, 0 bytes dynamic shared memory) failed: "
                         "CUDA_ERROR_INVALID_VALUE (invalid argument)")
    msg = arguments.describe_cuda_failure("k", plain)
    assert "no longer usable" not in msg and "CUDA_ERROR_INVALID_VALUE" in msg


@T.prim_func
def huge(A: T.Tensor((256, 256), "float32"), B: T.Tensor((256, 256), "float32")):
    with T.Kernel(1, threads=128) as bx:
        S = T.alloc_shared((256, 256), "float32")  # 256 KiB: more than any GPU's block has
        T.copy(A, S)
        T.copy(S, B)


def test_cuda_shared_memory_beyond_the_device_at_compile_time():
    msg = _message(TileLangRuntimeError, tilelang.compile, huge, None, "cuda -arch=sm_80")
    assert msg == ("kernel 'huge' needs 262144 bytes of shared memory, the device (sm_80) has 166912; use smaller "
                   "tiles or fewer pipeline stages")
    _documented(msg)


def test_cuda_argument_count_without_gpu():
    from tilelang.jit.cuda_backend import _search_dirs

    ok, why = _tl.find_cuda_compiler(_search_dirs())
    if not ok:
        pytest.skip(f"no CUDA compiler: {why}")
    k = tilelang.compile(saxpy, target="cuda -arch=sm_80")
    msg = _message(TileLangArgumentError, k, X)
    assert msg == "saxpy() takes 4 argument(s) (X, Y, alpha, reps), got 1"


def test_cuda_launch_failure_names_the_kernel(monkeypatch):
    """The JIT turns a driver error from the call into a TileLangRuntimeError naming the
    kernel (the launch itself is stood in for: no GPU here)."""
    from tilelang.jit.cuda_backend import _search_dirs

    ok, why = _tl.find_cuda_compiler(_search_dirs())
    if not ok:
        pytest.skip(f"no CUDA compiler: {why}")
    k = tilelang.compile(saxpy, target="cuda -arch=sm_80")

    def failing_call(args):
        raise RuntimeError("launching kernel saxpy_kernel (grid 1x1x1, block 64x1x1, 0 bytes dynamic shared memory) "
                           "failed: CUDA_ERROR_ILLEGAL_ADDRESS (an illegal memory access was encountered)")

    monkeypatch.setattr(k._cuda, "call", failing_call)
    with pytest.raises(TileLangRuntimeError) as info:
        k(X, Y, 1.0, 1)
    msg = str(info.value)
    assert msg.startswith("CUDA kernel 'saxpy' failed: launching kernel saxpy_kernel")
    assert msg.endswith("run with CUDA_LAUNCH_BLOCKING=1 or under compute-sanitizer.")
    # argument errors pass through unchanged
    monkeypatch.setattr(k._cuda, "call", lambda args: (_ for _ in ()).throw(TileLangArgumentError("bad")))
    with pytest.raises(TileLangArgumentError, match="^bad$"):
        k(X, Y, 1.0, 1)


def test_cuda_call_path_uses_the_documented_checks():
    from tilelang.jit import cuda_backend  # noqa: F401  (the module, not tilelang.jit the decorator)
    import sys

    assert sys.modules["tilelang.jit.cuda_backend"]._as_cuda_tensor is arguments.as_cuda_tensor
