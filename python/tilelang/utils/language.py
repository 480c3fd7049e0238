"""``tilelang.utils.language``: where a buffer lives, by its scope (upstream's helpers)."""
from __future__ import annotations


def _scope(buffer) -> str:
    buf = getattr(buffer, "buffer", buffer)  # a region or element names its buffer
    return getattr(buf, "scope", "global")


def is_global(buffer) -> bool:
    return _scope(buffer) == "global"


def is_shared(buffer, allow_dynamic: bool = True) -> bool:
    return _scope(buffer) == "shared" or (allow_dynamic and _scope(buffer) == "shared.dyn")


def is_shared_dynamic(buffer) -> bool:
    return _scope(buffer) == "shared.dyn"


def is_fragment(buffer) -> bool:
    return _scope(buffer).startswith("local.fragment") or _scope(buffer) == "fragment"


def is_local(buffer) -> bool:
    return _scope(buffer) in ("local", "local.var")
