"""``tvm.target.Target``: a compilation target; a context manager that makes itself the
target of compilations inside the block that name none."""
from __future__ import annotations

from ..jit import target as _t


class _Kind:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class Target:
    def __init__(self, target, host=None):
        if isinstance(target, Target):
            target = target.spec
        self.spec = target
        self.tilelang_target = _t.parse(target if not isinstance(target, str) or target != "auto" else None)
        text = target if isinstance(target, str) else str(self.tilelang_target)
        first = text.split()[0].lower() if text.split() else "auto"
        self.kind = _Kind(first if first in ("c", "llvm") else self.tilelang_target.kind)
        self.attrs = {"arch": self.tilelang_target.arch} if self.tilelang_target.arch else {}
        self.arch = self.tilelang_target.arch
        self.host = host

    def __enter__(self):
        _t._scoped.append(self.tilelang_target)
        return self

    def __exit__(self, *exc):
        _t._scoped.pop()
        return False

    @staticmethod
    def current(allow_none=True):
        if _t._scoped:
            return _t._scoped[-1]
        if allow_none:
            return None
        raise RuntimeError("no target is in scope (use `with Target(...)`)")

    def __str__(self):
        return str(self.tilelang_target)

    def __repr__(self):
        return f"Target({str(self)!r})"

    def __eq__(self, other):
        return str(self) == str(Target(other) if not isinstance(other, Target) else other)

    def __hash__(self):
        return hash(str(self))
