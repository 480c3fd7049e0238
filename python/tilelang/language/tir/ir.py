"""``T.cast`` with upstream's rounding arguments.

round / sat / rbits are PTX conversion modifiers. Upstream reserves rn/rz/rp/rm (accepted,
not lowered: round to nearest) and lowers "" and stochastic rounding ("rs"), as here:
- round="rs" with rbits: a float32 value to float16, bfloat16, float8_e4m3fn, float8_e5m2 or
  float4_e2m1fn, rounded up or down at random (unbiased) by the 32 random bits, saturating
  (templates/tl/stochastic_round.h: the same bits on every target). As upstream, sat=False
  is refused, and CUDA needs sm_100a (check_target_features.cc); the CPU target runs it.
- the others: a plain cast."""
from __future__ import annotations

from ... import _tl
from ..builder import _UserError
from ..dtypes import dtype as _dtype
from ..values import PrimExpr, as_expr, cast as _cast, const

_VALID_CAST_ROUNDING_MODES = {"", "rn", "rz", "rp", "rm", "rs"}


def cast(value, dtype, round: str = "", sat: bool = True, rbits=None, span=None):  # noqa: A002
    """`value` converted to `dtype`."""
    if round not in _VALID_CAST_ROUNDING_MODES:
        raise ValueError(f"Invalid round {round!r}: must be one of {sorted(_VALID_CAST_ROUNDING_MODES)}")
    if not isinstance(sat, bool):
        raise ValueError(f"Invalid sat {sat!r}: must be a bool (True saturates to finite values)")
    if round == "rs" and rbits is None:
        raise ValueError("rbits is required when round='rs' (stochastic rounding)")
    if round != "rs" and rbits is not None:
        raise ValueError("rbits is only valid with round='rs' (stochastic rounding)")
    if round == "rs":
        return _stochastic_cast(value, dtype, rbits, sat)
    return _cast(value, dtype)


_RS_TARGETS = ("float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1fn")


def _stochastic_cast(value, dtype, rbits, sat):
    t = str(_dtype(dtype))
    if t not in _RS_TARGETS:
        raise _UserError(f"T.cast(..., round='rs'): stochastic rounding converts to one of {', '.join(_RS_TARGETS)}, "
                         f"got {t}")
    v = as_expr(value, "float32")
    if str(v.dtype) != "float32":
        raise _UserError(f"T.cast(..., round='rs'): stochastic rounding converts float32 values, got {v.dtype} "
                         "(cast it to float32 first)")
    r = as_expr(rbits, "uint32")
    if str(r.dtype) not in ("int32", "uint32"):
        raise _UserError(f"T.cast(..., round='rs'): rbits must be a 32-bit integer, got {r.dtype}")
    if str(r.dtype) != "uint32":
        r = _cast(r, "uint32")
    return PrimExpr(_tl.call(t, "cast_rs", [v.node, r.node, const(bool(sat), "bool").node]))
