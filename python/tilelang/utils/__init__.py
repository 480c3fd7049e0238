"""Utilities with upstream TileLang's module names (tilelang.utils.tensor, ...)."""
from .tensor import TensorSupplyType, get_tensor_supply, torch_assert_close  # noqa: F401
from .language import is_fragment, is_global, is_local, is_shared, is_shared_dynamic  # noqa: F401,E402
from .target import determine_target  # noqa: F401,E402
