"""``tilelang.contrib``: upstream's toolchain helpers (only ``nvcc`` here)."""
from . import nvcc  # noqa: F401
