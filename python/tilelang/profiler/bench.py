"""``tilelang.profiler.bench``: where upstream keeps ``do_bench`` (the same function as
``tilelang.profiler.do_bench``)."""
from . import do_bench  # noqa: F401

__all__ = ["do_bench"]
