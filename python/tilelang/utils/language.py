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


def to_buffer_region(obj, access_type: str = "rw", extents=None):
    """A tile, or an element / slice of one, as the region tile operations take (`A[a:b, c:d]`):
    a whole tile for a tile; for an element, the region starting there with the given
    extents (one element per dimension when none are given)."""
    from ..language.values import Buffer, BufferRef

    if isinstance(obj, Buffer):
        ref = BufferRef(obj, [slice(None)] * obj.ndim)
    elif isinstance(obj, BufferRef):
        ref = obj
    else:
        raise TypeError(f"to_buffer_region: expected a tile or a slice of one, got {type(obj).__name__}")
    if extents is None:
        return ref
    extents = list(extents)
    if len(extents) != ref.buffer.ndim:
        raise ValueError(f"to_buffer_region: {ref.buffer.ndim} extents expected for {ref.buffer.name}, got "
                         f"{len(extents)}")
    mins = [(0 if it.start is None else it.start) if isinstance(it, slice) else it for it in ref.items]
    return BufferRef(ref.buffer, [slice(m, m + e) for m, e in zip(mins, extents)])
