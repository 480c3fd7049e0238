"""``tvm.script.ir_builder.base.IRBuilderFrame``.

Upstream's loop constructors return an IR-builder frame when the loop maps directly onto a
For node (a constant step of 1), and a different helper object for other steps. Our loop
constructors return a LoopSpec in every case; this class answers ``isinstance`` the way
upstream's does, for our LoopSpecs: True for a unit-step loop, False for another step."""
from __future__ import annotations


class _FrameKind(type):
    def __instancecheck__(cls, x):
        from ....language import LoopSpec

        if not isinstance(x, LoopSpec):
            return False
        step = x.step
        if step is None:
            return True
        v = getattr(getattr(step, "node", None), "const_value", step)
        return isinstance(v, int) and not isinstance(v, bool) and v == 1


class IRBuilderFrame(metaclass=_FrameKind):
    """Not constructible: a name for ``isinstance`` checks on loop constructors' results."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("IRBuilderFrame is not constructible here; T.serial(...) and friends make loops")
