"""CUDA device queries (``from tilelang.carver.arch import driver``; ``driver.get_num_sms()``),
through the CUDA driver API the runtime already loads. Without a usable GPU, the functions
that need one raise RuntimeError naming what was asked."""
from .cuda_driver import (  # noqa: F401
    cudaDeviceAttrNames, get_cuda_device_properties, get_device_attribute, get_device_name,
    get_max_dynamic_shared_size_bytes, get_num_sms, get_persisting_l2_cache_max_size,
    get_registers_per_block, get_shared_memory_per_block,
)
from . import cuda_driver  # noqa: F401
