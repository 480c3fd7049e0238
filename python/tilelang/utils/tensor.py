"""Tensor helpers with upstream TileLang's names: ``torch_assert_close`` (closeness with a
tolerated fraction of mismatches), ``get_tensor_supply`` (input makers for a kernel's
parameters) and ``TensorSupplyType``. They take torch tensors or numpy arrays; torch is only
imported when a torch tensor is involved or asked for."""
from __future__ import annotations

import numpy as np

from ..profiler import TensorSupplyType

__all__ = ["TensorSupplyType", "get_tensor_supply", "torch_assert_close", "is_float8_dtype", "pack_4bit", "unpack_4bit"]


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def _as_f64(x):
    """A float64 (or complex/bool-preserving) numpy copy of a tensor or array."""
    if _is_torch(x):
        x = x.detach().cpu()
        if x.dtype.is_floating_point or x.dtype.is_complex:
            x = x.double() if not x.dtype.is_complex else x
        return x.numpy()
    a = np.asarray(x)
    if a.dtype.kind in "fcbiu":
        return a.astype(np.float64) if a.dtype.kind not in "cb" else a
    return a.astype(np.float64)  # ml_dtypes (bfloat16, float8) convert through float


def is_float8_dtype(dtype) -> bool:
    return "float8" in str(dtype)


def torch_assert_close(tensor_a, tensor_b, rtol=1e-2, atol=1e-3, max_mismatched_ratio=0.001, verbose=False,
                       equal_nan=True, check_device=True, check_dtype=True, check_layout=True, check_stride=False,
                       base_name="LHS", ref_name="RHS"):
    """Asserts that at most `max_mismatched_ratio` of the elements differ by more than
    ``atol + rtol * |b|``. Raises AssertionError naming the count, the first mismatch and the
    largest differences; returns True otherwise. `check_device` / `check_dtype` compare the two
    tensors' devices and dtypes first (as torch.testing does)."""
    if tuple(np.shape(tensor_a)) != tuple(np.shape(tensor_b)):
        raise AssertionError(f"shape mismatch: {base_name} {tuple(np.shape(tensor_a))} vs "
                             f"{ref_name} {tuple(np.shape(tensor_b))}")
    if check_dtype and _is_torch(tensor_a) and _is_torch(tensor_b) and tensor_a.dtype != tensor_b.dtype:
        raise AssertionError(f"dtype mismatch: {base_name} {tensor_a.dtype} vs {ref_name} {tensor_b.dtype}")
    if check_device and _is_torch(tensor_a) and _is_torch(tensor_b) and tensor_a.device != tensor_b.device:
        raise AssertionError(f"device mismatch: {base_name} {tensor_a.device} vs {ref_name} {tensor_b.device}")
    a, b = _as_f64(tensor_a), _as_f64(tensor_b)
    close = np.isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    mismatched = ~close
    n_bad = int(mismatched.sum())
    total = int(a.size)
    allowed = int(total * max_mismatched_ratio)
    if verbose:
        print(f"Number of mismatched elements: {n_bad} / {total} (allowed: {allowed})")
    if n_bad <= allowed:
        return True
    flat = int(np.argmax(mismatched.reshape(-1)))
    idx = [int(i) for i in np.unravel_index(flat, a.shape)] if a.ndim else []
    av, bv = float(a.reshape(-1)[flat]), float(b.reshape(-1)[flat])
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
        rel = diff / (np.abs(b) + 1e-12)
    raise AssertionError(
        f"Too many mismatched elements: {n_bad} > {allowed} ({max_mismatched_ratio * 100:.2f}% allowed, "
        f"got {n_bad / max(total, 1) * 100:.2f}%).\n"
        f"First mismatch at index {idx}: {base_name}={av:.6f}, {ref_name}={bv:.6f}, "
        f"abs_diff={abs(av - bv):.6f}, rel_diff={abs(av - bv) / (abs(bv) + 1e-12):.6f}\n"
        f"Greatest absolute difference: {np.nanmax(diff)}, greatest relative difference: {np.nanmax(rel)}")


def _param_shape_dtype(param):
    shape = getattr(param, "dims", None)
    if shape is None:
        shape = getattr(param, "shape", None)
    if shape is None:
        raise ValueError(f"get_tensor_supply: the parameter {param!r} has no shape")
    for d in shape:
        if not isinstance(d, (int, np.integer)):
            raise ValueError(f"get_tensor_supply: the parameter {getattr(param, 'name', param)!r} has the dynamic "
                             f"dimension {d!r}; a tensor can only be made for a static shape")
    return [int(d) for d in shape], str(getattr(param, "dtype"))


def integer_supply_range(dtype) -> tuple[int, int]:
    """[low, high) of TensorSupplyType.Integer's draws for a dtype, upstream's: float8 the
    integers -128..127 rounded to the type (float8 GEMM timings depend on the bits fed),
    booleans 0..1, unsigned types 0..2, others -2..2."""
    from ..language.dtypes import dtype as _dtype

    t = _dtype(dtype)
    if t == "bool":
        return 0, 2
    return (0, 3) if t.is_unsigned else (-128, 128) if t.is_float8 else (-2, 3)


def get_tensor_supply(supply_type: TensorSupplyType = TensorSupplyType.Integer, backend=None):
    """A function param -> tensor making an input for one kernel parameter (anything with
    `.shape` or `.dims`, and `.dtype`). It returns a torch tensor (on the GPU when one is
    usable) when torch is installed, else a numpy array; `backend` ("torch" or "numpy")
    forces one. Integer: small integers in [-2, 3) ([0, 3) for unsigned types, [-128, 128)
    rounded to the type for float8, as upstream);
    Uniform: U(-1, 1); Normal: N(-1, 1) as upstream; Randn: N(0, 1) (real draws for an unsigned
    type are taken in absolute value); Zero; One; Auto: Integer for integer types, Uniform
    otherwise."""
    if not isinstance(supply_type, TensorSupplyType):
        raise ValueError(f"get_tensor_supply: supply_type must be a TensorSupplyType, got {supply_type!r}")
    from ..language.dtypes import dtype as _dtype

    def get_tensor(param):
        shape, name = _param_shape_dtype(param)
        t = _dtype(name)
        rng = np.random.default_rng()
        kind = supply_type
        if kind == TensorSupplyType.Auto:
            kind = TensorSupplyType.Uniform if t.is_float and not t.is_float8 else TensorSupplyType.Integer
        if kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal) and t == "int8":
            kind = TensorSupplyType.One
        if kind == TensorSupplyType.Integer:
            a = rng.integers(*integer_supply_range(name), size=shape)
        elif kind == TensorSupplyType.Uniform:
            a = rng.uniform(-1.0, 1.0, size=shape)
        elif kind == TensorSupplyType.Normal:
            a = rng.normal(-1.0, 1.0, size=shape)
        elif kind == TensorSupplyType.Randn:
            a = rng.standard_normal(size=shape)
        elif kind == TensorSupplyType.Zero:
            a = np.zeros(shape)
        else:
            a = np.ones(shape)
        if t.is_unsigned and kind in (TensorSupplyType.Uniform, TensorSupplyType.Normal, TensorSupplyType.Randn):
            a = np.abs(a)  # negative draws would wrap around in an unsigned type
        use_torch = backend == "torch" or (backend is None and _torch_available())
        if not use_torch:
            return a.astype(t.as_numpy())
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
        return torch.from_numpy(np.ascontiguousarray(a.astype(np.float64 if t.is_float else np.int64))).to(
            device=device, dtype=t.as_torch())

    return get_tensor


def _torch_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def pack_4bit(codes):
    """Packs 4-bit codes (a uint8/int8 array or tensor of values 0..15, or -8..7 for int4;
    or an ml_dtypes float4_e2m1fn / int4 / uint4 array) two per byte along the last
    dimension, as kernels take 4-bit tensors: element 2k in the low nibble of byte k."""
    was_torch = _is_torch(codes)
    a = codes.detach().cpu().numpy() if was_torch else np.asarray(codes)
    if a.dtype.itemsize != 1:
        raise ValueError(f"pack_4bit: expected one-byte codes, got {a.dtype}")
    a = a.view(np.uint8) & 0xF
    if a.ndim == 0 or a.shape[-1] % 2:
        raise ValueError(f"pack_4bit: the last dimension must be even, got shape {a.shape}")
    out = (a[..., 0::2] | (a[..., 1::2] << 4)).astype(np.uint8)
    if was_torch:
        import torch

        return torch.from_numpy(out).to(codes.device)
    return out


def unpack_4bit(packed, dtype="uint8"):
    """The inverse of pack_4bit: the codes of a packed tensor's 4-bit values, as uint8
    (0..15), or as an ml_dtypes array of `dtype` ("float4_e2m1fn", "int4", "uint4")."""
    was_torch = _is_torch(packed)
    a = packed.detach().cpu().view(__import__("torch").uint8).numpy() if was_torch else np.asarray(packed).view(np.uint8)
    codes = np.stack([a & 0xF, a >> 4], axis=-1).reshape(a.shape[:-1] + (a.shape[-1] * 2,))
    if dtype == "uint8":
        return codes
    import ml_dtypes

    if dtype == "int4":
        return ((codes.astype(np.int8) ^ 8) - 8).astype(ml_dtypes.int4)
    if dtype == "uint4":
        return codes.astype(ml_dtypes.uint4)
    return codes.view(getattr(ml_dtypes, dtype))
