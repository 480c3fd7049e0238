"""``tvm.script``: only ``ir_builder.base.IRBuilderFrame`` (see docs/tvm-compat.md)."""
from . import ir_builder  # noqa: F401
