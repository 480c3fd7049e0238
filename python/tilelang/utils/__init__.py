"""Utilities with upstream TileLang's module names (tilelang.utils.tensor, ...)."""
from .tensor import TensorSupplyType, get_tensor_supply, torch_assert_close  # noqa: F401
