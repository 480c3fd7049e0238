"""Data types. A dtype is its name (a str subclass), so ``T.float16 == "float16"``.

Calling a dtype makes a typed constant or a cast: ``T.float32(0)``, ``T.int32(x)``.
"""
from __future__ import annotations

_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32"}
_NAMES = (
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
    "float16 bfloat16 float32 float64"
).split()


class dtype(str):
    """A TileLang scalar type, e.g. ``T.float16``."""

    def __new__(cls, name):
        name = canonical(name)
        return super().__new__(cls, name)

    def __call__(self, value=None):
        from . import values

        if value is None:
            raise TypeError(f"T.{self}() needs a value, e.g. T.{self}(0)")
        return values.cast(value, self)

    @property
    def bits(self) -> int:
        return 8 if self in ("bool", "int8", "uint8") else int("".join(c for c in self if c.isdigit()))

    @property
    def is_float(self) -> bool:
        return self.startswith("float") or self == "bfloat16"

    @property
    def is_int(self) -> bool:
        return self.startswith("int") or self.startswith("uint")


def canonical(name) -> str:
    """The canonical name of a dtype given as a str, a T.dtype, a numpy or torch dtype."""
    if isinstance(name, dtype):
        return str(name)
    if not isinstance(name, str):
        text = str(name)
        if text.startswith("torch."):
            text = text[len("torch."):]
        elif hasattr(name, "name"):
            text = name.name
        name = text
    name = _ALIASES.get(name, name)
    if name not in _NAMES:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(_NAMES)}")
    return name


bool_ = dtype("bool")
int8, int16, int32, int64 = (dtype(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (dtype(n) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, bfloat16, float32, float64 = (dtype(n) for n in ("float16", "bfloat16", "float32", "float64"))
