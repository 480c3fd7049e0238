"""``tilelang.engine``: upstream's compilation driver modules; here only ``callback``
(source post-processing hooks), which our CUDA build honours."""
from . import callback  # noqa: F401
