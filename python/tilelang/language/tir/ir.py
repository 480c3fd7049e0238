"""``T.cast`` with upstream's rounding arguments.

round / sat / rbits are PTX conversion modifiers for casts to 8-bit and narrower floats.
Upstream reserves rn/rz/rp/rm (accepted, not lowered) and lowers only "" and stochastic
rounding ("rs"). This compiler has no float8/float4 kernels, so every cast it compiles is
one the modifiers do not affect: they are checked as upstream checks them and, apart from
"rs" (which needs random bits we cannot use), accepted as the no-ops they are."""
from __future__ import annotations

from ..values import cast as _cast

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
        raise NotImplementedError("T.cast(round='rs'): stochastic rounding is not supported by this compiler")
    return _cast(value, dtype)
