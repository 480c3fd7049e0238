"""``tvm.arith.Analyzer``: the simplifier of this compiler's C++ core (arith/simplify.h) over
its expressions, with TVM's method names for the questions programs and tests ask."""
from __future__ import annotations


class Analyzer:
    def simplify(self, expr, steps=2):
        from ..language.values import PrimExpr, as_expr
        from .. import _tl

        return PrimExpr(_tl.simplify(as_expr(expr).node))

    def can_prove_equal(self, lhs, rhs) -> bool:
        """True when lhs - rhs simplifies to 0 (False means: not proved)."""
        from ..language.values import as_expr

        a = as_expr(lhs)
        return self.simplify(a - as_expr(rhs, a.dtype)).node.const_value == 0

    def can_prove(self, cond, strength=None) -> bool:
        """True when the condition simplifies to true."""
        v = self.simplify(cond).node.const_value
        return v is True or v == 1
