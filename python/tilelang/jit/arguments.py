"""Checking and converting kernel arguments: numpy arrays, torch CPU tensors, and any
DLPack CPU tensor. Every mismatch names the parameter, what was expected and what came."""
from __future__ import annotations

import numbers

import numpy as np

from ..errors import TileLangArgumentError
from ..language.dtypes import canonical

try:
    import ml_dtypes as _ml

    _NP_DTYPES = {"bfloat16": np.dtype(_ml.bfloat16)}
except ImportError:  # pragma: no cover - ml_dtypes is a dependency
    _NP_DTYPES = {}


def numpy_dtype(name: str):
    if name in _NP_DTYPES:
        return _NP_DTYPES[name]
    return np.dtype("bool" if name == "bool" else name)


class TensorArg:
    """What the runtime needs from one tensor argument."""

    __slots__ = ("ptr", "shape", "dtype", "is_torch", "obj")

    def __init__(self, ptr, shape, dtype, is_torch, obj):
        self.ptr, self.shape, self.dtype, self.is_torch, self.obj = ptr, shape, dtype, is_torch, obj


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "data_ptr")


def tensor_arg(x, param_name: str, kernel_name: str) -> TensorArg:
    if isinstance(x, np.ndarray):
        if not x.flags.c_contiguous:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} must be C-contiguous; pass "
                f"np.ascontiguousarray({param_name})")
        if not x.dtype.isnative:
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} has the non-native byte order {x.dtype.str!r}; "
                f"pass {param_name}.astype({x.dtype.name!r})")
        return TensorArg(x.__array_interface__["data"][0], x.shape, _np_dtype_name(x.dtype), False, x)
    if _is_torch(x):
        if x.device.type != "cpu":
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} is on {x.device} but this kernel was compiled "
                f"for the CPU; move it with .cpu() or compile with target='cuda'")
        if not x.is_contiguous():
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} must be contiguous; pass {param_name}.contiguous()")
        return TensorArg(x.data_ptr(), tuple(x.shape), canonical(x.dtype), True, x)
    if hasattr(x, "__dlpack__"):
        try:
            arr = np.from_dlpack(x)
        except Exception as e:  # noqa: BLE001 - report what DLPack said
            raise TileLangArgumentError(
                f"{kernel_name}(): argument {param_name!r} ({type(x).__name__}) cannot be read as a CPU "
                f"tensor through DLPack: {e}") from None
        return tensor_arg(arr, param_name, kernel_name)
    raise TileLangArgumentError(
        f"{kernel_name}(): argument {param_name!r} must be a tensor (numpy array, torch tensor or DLPack "
        f"tensor), got {type(x).__name__}")


def _np_dtype_name(dt) -> str:
    try:
        return canonical(dt.name)
    except ValueError:
        raise TileLangArgumentError(f"unsupported array dtype {dt}") from None


def scalar_arg(x, param_name: str, dtype: str, kernel_name: str):
    if isinstance(x, np.generic):
        x = x.item()
    is_float = dtype.startswith("float") or dtype == "bfloat16"
    if is_float and isinstance(x, numbers.Real):
        return float(x)
    if not is_float and isinstance(x, numbers.Integral):
        x = int(x)
        if dtype != "bool":
            info = np.iinfo(dtype)
            if not info.min <= x <= info.max:
                raise TileLangArgumentError(
                    f"{kernel_name}(): argument {param_name!r} is {x}, out of the range of {dtype} "
                    f"[{info.min}, {info.max}]")
        return x
    raise TileLangArgumentError(
        f"{kernel_name}(): argument {param_name!r} expects a {dtype} scalar, got {type(x).__name__}: {x!r}")
