"""Checking and converting kernel arguments: numpy arrays, torch CPU tensors and any DLPack
CPU tensor for CPU kernels; torch CUDA tensors for CUDA kernels. Every mismatch names the
parameter, what was expected and what came (the table of cases: docs/bad-input.md)."""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import TileLangArgumentError
from ..language.dtypes import canonical

try:
    import ml_dtypes as _ml

    _NP_DTYPES = {"bfloat16": np.dtype(_ml.bfloat16), "float8_e4m3fn": np.dtype(_ml.float8_e4m3fn),
                  "float8_e5m2": np.dtype(_ml.float8_e5m2), "float8_e8m0fnu": np.dtype(_ml.float8_e8m0fnu)}
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    _NP_DTYPES = {}


def numpy_dtype(name: str):
    if name == "float4_e2m1fnx2":  # packed fp4 pairs: raw bytes in numpy
        return np.dtype(np.uint8)
    if name in _NP_DTYPES:
        return _NP_DTYPES[name]
    return np.dtype("bool" if name == "bool" else name)


class TensorArg:
    """What the runtime needs from one tensor argument (strides in elements)."""

    __slots__ = ("ptr", "shape", "dtype", "is_torch", "obj", "strides")

    def __init__(self, ptr, shape, dtype, is_torch, obj, strides=()):
        self.ptr, self.shape, self.dtype, self.is_torch, self.obj = ptr, shape, dtype, is_torch, obj
        self.strides = strides


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def tensor_arg(x, param_name: str, kernel_name: str, strided=False) -> TensorArg:
    """strided: the parameter is a T.StridedTensor, whose strides the kernel checks; a
    T.Tensor must be contiguous (size-1 dimensions may have any stride, as upstream allows)."""
    if isinstance(x, np.ndarray):
        if strided and any(s < 0 or s % x.itemsize for s in x.strides):
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} has strides {x.strides} (in bytes); a strided tensor "
                f"needs non-negative strides that are whole elements ({x.itemsize} bytes)")
        if not strided and not x.flags.c_contiguous:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} must be C-contiguous (row-major); it has strides "
                f"{_elem_strides(x.strides, x.itemsize)} (in elements) for shape {tuple(x.shape)}, expected "
                f"{contiguous_strides(x.shape)}; pass np.ascontiguousarray({param_name})")
        if not x.flags.aligned:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is not aligned to its element size "
                f"({x.dtype.itemsize} bytes); pass {param_name}.copy()")
        if not x.dtype.isnative:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} has the non-native byte order {x.dtype.str!r}; "
                f"pass {param_name}.astype({x.dtype.name!r})")
        return TensorArg(x.__array_interface__["data"][0], x.shape, _np_dtype_name(x.dtype), False, x,
                         tuple(s // x.itemsize for s in x.strides))
    if _is_torch(x):
        if x.device.type != "cpu":
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is on {x.device} but this kernel was compiled "
                f"for the CPU; move it with .cpu() or compile with target='cuda'")
        if not strided and not x.is_contiguous():
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} must be contiguous (row-major); it has strides "
                f"{tuple(x.stride())} for shape {tuple(x.shape)}, expected {contiguous_strides(x.shape)}; "
                f"pass {param_name}.contiguous(), or declare it T.StridedTensor(shape, strides, dtype)")
        return TensorArg(x.data_ptr(), tuple(x.shape), canonical(x.dtype), True, x, tuple(x.stride()))
    if hasattr(x, "__dlpack__"):
        try:
            arr = np.from_dlpack(x)
        except Exception as e:  # noqa: BLE001 - report what DLPack said
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} ({type(x).__name__}) cannot be read as a CPU "
                f"tensor through DLPack: {e}") from None
        return tensor_arg(arr, param_name, kernel_name, strided)
    raise TileLangArgumentError(
        f"{kernel_name}(): argument {param_name!r} must be a tensor (numpy array, torch tensor or DLPack "
        f"tensor), got {type(x).__name__}")


def contiguous_strides(shape):
    """Row-major strides, in elements, of a tensor of `shape`."""
    out, step = [], 1
    for d in reversed(tuple(shape)):
        out.append(step)
        step *= max(int(d), 1)
    return tuple(reversed(out))


def _elem_strides(strides, itemsize):
    return tuple(s // itemsize if s % itemsize == 0 else s / itemsize for s in strides)


def _short_repr(x, limit=60):
    r = repr(x)
    return r if len(r) <= limit else r[:limit] + "..."


def as_cuda_tensor(x, param_name: str, kernel_name: str, device, strided=False):
    """One tensor argument of a CUDA kernel, checked: a torch tensor on `device` (a
    torch.device, e.g. cuda:0), contiguous and 16-byte aligned. Returns the tensor (a
    DLPack CUDA tensor is wrapped by torch); raises TileLangArgumentError naming the
    parameter and what was expected otherwise. dtype and shape are checked by the kernel."""
    if isinstance(x, np.ndarray):
        raise TileLangArgumentError(
            f"{kernel_name}(): argument {param_name!r} is a numpy array, in host memory, but this kernel runs "
            f"on CUDA ({device}); pass a CUDA tensor, e.g. torch.from_numpy({param_name}).to({str(device)!r})")
    if not _is_torch(x):
        if hasattr(x, "__dlpack__"):
            import torch

            x = torch.from_dlpack(x)
        else:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} must be a torch CUDA tensor on {device}, got "
                f"{type(x).__name__}: {_short_repr(x)}")
    dev = x.device
    if dev.type != "cuda":
        raise TileLangArgumentError(
            f"{kernel_name}(): argument {param_name!r} is on {dev} but this kernel runs on CUDA ({device}); "
            f"move it with {param_name}.to({str(device)!r})")
    if dev.index != device.index:
        raise TileLangArgumentError(
            f"{kernel_name}(): argument {param_name!r} is on {dev} but this kernel runs on the current device "
            f"{device}; move it with {param_name}.to({str(device)!r}), or call the kernel under "
            f"torch.cuda.device({dev.index})")
    if not strided and not x.is_contiguous():
        raise TileLangArgumentError(
            f"{kernel_name}(): argument {param_name!r} must be contiguous (row-major); it has strides "
            f"{tuple(x.stride())} for shape {tuple(x.shape)}, expected {contiguous_strides(x.shape)}; "
            f"pass {param_name}.contiguous(), or declare it T.StridedTensor(shape, strides, dtype)")
    if x.data_ptr() % 16:
        raise TileLangArgumentError(
            f"{kernel_name}(): argument {param_name!r} starts at an address that is not 16-byte aligned (a view "
            f"into another tensor?); pass {param_name}.clone()")
    return x


# CUDA errors after which the context cannot be used again: every later CUDA call in the
# process fails with the same error (the driver's "sticky" errors).
_STICKY_CUDA_ERRORS = ("CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED", "CUDA_ERROR_MISALIGNED_ADDRESS",
                       "CUDA_ERROR_ILLEGAL_INSTRUCTION", "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_INVALID_PC",
                       "CUDA_ERROR_INVALID_ADDRESS_SPACE", "CUDA_ERROR_ASSERT", "CUDA_ERROR_LAUNCH_TIMEOUT",
                       "CUDA_ERROR_ECC_UNCORRECTABLE", "CUDA_ERROR_CONTEXT_IS_DESTROYED",
                       "CUDA_ERROR_TENSOR_MEMORY_LEAK", "CUDA_ERROR_UNKNOWN")


def describe_cuda_failure(kernel_name: str, error) -> str:
    """The message for a failed CUDA launch or module load: the kernel, the driver's error,
    and whether the process can go on using CUDA."""
    text = str(error)
    msg = f"CUDA kernel {kernel_name!r} failed: {text}"
    if any(name in text for name in _STICKY_CUDA_ERRORS):
        msg += ("\nThe CUDA context is no longer usable: every later CUDA call in this process will fail. "
                "Restart the process; to find the faulting access run with CUDA_LAUNCH_BLOCKING=1 or under "
                "compute-sanitizer.")
    return msg


def _np_dtype_name(dt) -> str:
    if dt.name in ("float4_e2m1fn", "int4", "uint4"):
        # ml_dtypes' 4-bit arrays hold one value per byte; kernels take them packed.
        raise TileLangArgumentError(
            f"an ml_dtypes {dt.name} array holds one value per byte, but kernels take 4-bit tensors packed two "
            f"per byte (element 2k in the low nibble) as uint8/int8: pack it first, e.g. with "
            f"tilelang.utils.tensor.pack_4bit")
    try:
        return canonical(dt.name)
    except ValueError:
        raise TileLangArgumentError(f"unsupported array dtype {dt}") from None


def pointer_arg(x, param_name: str, kernel_name: str, target: str, device=None) -> int:
    """The address a T.ptr parameter receives: an int (e.g. t.data_ptr()), or a tensor's
    data address (a torch tensor on the kernel's device; a numpy array for CPU kernels).
    Nothing about what it points to can be checked: the kernel trusts it."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        x = int(x)
        if not 0 <= x < 1 << 64:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is a pointer; {x} is no address")
        return x - (1 << 64) if x >= 1 << 63 else x  # the launch reads the bits as int64
    if isinstance(x, np.ndarray):
        if target != "cpu":
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is a numpy array, in host memory, but this kernel runs "
                f"on CUDA; pass a CUDA tensor or its data_ptr()")
        return x.__array_interface__["data"][0]
    if _is_torch(x):
        dev = x.device
        if target == "cpu" and dev.type != "cpu":
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is on {dev} but this kernel was compiled for the CPU")
        if target == "cuda" and (dev.type != "cuda" or dev.index != device.index):
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is on {dev} but this kernel runs on CUDA ({device}); "
                f"move it with {param_name}.to({str(device)!r})")
        return x.data_ptr()
    raise TileLangArgumentError(
        f"{kernel_name}(): argument {param_name!r} is a pointer (T.ptr): pass an address (an int such as "
        f"t.data_ptr()) or a tensor, got {type(x).__name__}: {_short_repr(x)}")


_INT4_RANGES = {"int4": (-8, 7), "uint4": (0, 15)}  # (numpy has no 4-bit integers)


def scalar_arg(x, param_name: str, dtype: str, kernel_name: str):
    if isinstance(x, np.generic):
        x = x.item()
    is_float = dtype.startswith("float") or dtype == "bfloat16"
    if is_float and isinstance(x, numbers.Real):
        return float(x)
    if not is_float and isinstance(x, numbers.Integral):
        x = int(x)
        if dtype != "bool":
            lo, hi = _INT4_RANGES[dtype] if dtype in _INT4_RANGES else (np.iinfo(dtype).min, np.iinfo(dtype).max)
            if not lo <= x <= hi:
                raise TileLangArgumentError(
                    f"{kernel_name}(): argument {param_name!r} is {x}, out of the range of {dtype} "
                    f"[{lo}, {hi}]")
        return x
    raise TileLangArgumentError(
        f"{kernel_name}(): argument {param_name!r} expects {'an' if dtype[0] in 'aeiu' else 'a'} {dtype} scalar, "
        f"got {type(x).__name__}: "
        f"{_short_repr(x)}")
