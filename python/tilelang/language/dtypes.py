"""Data types. A dtype is its name (a str subclass), so ``T.float16 == "float16"``.

Calling a dtype makes a typed constant or a cast: ``T.float32(0)``, ``T.int32(x)``.
"""
from __future__ import annotations

_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "int": "int32",
            # the other C names upstream's T.dtype() reads (TVM's defaults: 32 bits unless named)
            "uint": "uint32", "long": "int64", "short": "int16", "ulong": "uint64",
            "e4m3_float8": "float8_e4m3fn", "e5m2_float8": "float8_e5m2",
            "bf16": "bfloat16", "fp16": "float16", "fp32": "float32",
            "float4_e2m1fn_x2": "float4_e2m1fnx2",  # torch's name of two packed fp4 values
            "custom[float4_e2m1_unpacked]8": "float4_e2m1_unpacked"}  # upstream's str() of it
_NAMES = (
    "bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 "
    "float16 bfloat16 float32 float64 float8_e4m3fn float8_e4m3 float8_e5m2 "
    "float8_e8m0fnu float4_e2m1fn int4 uint4"
).split()
# Names TileLang programs mention that the compiler cannot compute with yet: they exist
# (so programs import, and host code can convert tensors with .as_torch() / .as_numpy()),
# and using one for a tensor, a tile or a value inside a kernel is an error at that line.
_NAME_ONLY = (
    "float8_e4m3fnuz float8_e5m2fnuz float8_e3m4 "
    "float8_e4m3b11fnuz float4_e2m1_unpacked float6_e2m3fn float6_e3m2fn int2 uint2 int1 uint1 tfloat32"
).split()
_ALL_NAMES = _NAMES + _NAME_ONLY
# Vector types ("float32x2": 2 lanes of float32) are names only too: kernels here compute on
# scalars and vectorize loops themselves; a vector dtype's lanes and bits are readable.
_VECTOR_LANES = (2, 4, 8, 16, 32, 64)

# dtype name -> torch attribute name (None: torch has no such type).
_TORCH_NAMES = {
    "bool": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "bfloat16": "bfloat16", "float32": "float32", "float64": "float64",
    "float8_e4m3fn": "float8_e4m3fn", "float8_e4m3fnuz": "float8_e4m3fnuz", "float8_e5m2": "float8_e5m2",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e8m0fnu": "float8_e8m0fnu",
    "float8_e4m3": "float8_e4m3fn",  # upstream's CUDA type for both is __nv_fp8_e4m3 (E4M3 fn)
    "float4_e2m1fn": "float4_e2m1fn_x2", "tfloat32": "float32",
    "int4": "int8", "uint4": "uint8", "float4_e2m1fnx2": "float4_e2m1fn_x2",
}
# dtype name -> numpy / ml_dtypes type name.
_NUMPY_NAMES = {
    "float8_e4m3fn": "float8_e4m3fn", "float8_e4m3": "float8_e4m3fn", "float8_e4m3fnuz": "float8_e4m3fnuz", "float8_e5m2": "float8_e5m2",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e8m0fnu": "float8_e8m0fnu", "float4_e2m1fn": "float4_e2m1fn",
    "float6_e2m3fn": "float6_e2m3fn", "float6_e3m2fn": "float6_e3m2fn", "int4": "int4", "uint4": "uint4",
    "int2": "int2", "uint2": "uint2", "bfloat16": "bfloat16", "tfloat32": "float32",
}


# The 4-bit types: a kernel's tensor of one holds two values per byte along its last
# dimension (element 2k in the low nibble), so its argument's last dimension is half the
# logical one. The dtypes such an argument may have (torch's, or numpy's on the CPU target),
# the first being what T.empty / out_idx outputs get; float8_e8m0fnu (one byte, unpacked)
# also accepts raw uint8 bytes.
_STORAGE_DTYPES = {
    "float4_e2m1fn": ("float4_e2m1fnx2", "uint8", "int8"),
    "int4": ("int8", "uint8"),
    "uint4": ("uint8", "int8"),
    "float8_e8m0fnu": ("float8_e8m0fnu", "uint8"),
}


def pack_factor(name) -> int:
    """Values per byte of a kernel tensor of this dtype: 2 for the 4-bit types, else 1."""
    return 2 if str(name) in ("float4_e2m1fn", "int4", "uint4") else 1


def packed_logical_strides(strides, pack):
    """The logical strides (in 4-bit values) of a packed tensor's storage strides (in bytes):
    the last dimension's is 1 (its bytes hold consecutive values; jit/kernel.py checks the
    argument's), the others count `pack` values per byte. Upstream binds a T.StridedTensor's symbolic
    strides from these, and element (i, j) is value sum(idx * stride) of the byte array."""
    strides = tuple(int(s) for s in strides)
    return tuple(s * pack for s in strides[:-1]) + (1,)


def storage_dtypes(name) -> tuple:
    """The dtype names a tensor argument for a parameter of dtype `name` may have."""
    return _STORAGE_DTYPES.get(str(name), (str(name),))


def output_storage_dtype(name, torch_module=None) -> str:
    """The dtype name of an allocated output of dtype `name`: torch's packed float4 type
    when torch has it (else uint8), numpy's uint8 for float4 on the CPU without torch."""
    options = storage_dtypes(name)
    if options[0] == "float4_e2m1fnx2" and (torch_module is None or not hasattr(torch_module, "float4_e2m1fn_x2")):
        return "uint8"
    return options[0]


class UnsupportedDTypeError(ValueError, TypeError):
    """A value of a dtype that kernels cannot compute with (fp8, fp4, vector types, ...)."""


class dtype(str):
    """A TileLang scalar type, e.g. ``T.float16``."""

    def __new__(cls, name):
        name = canonical(name)
        return super().__new__(cls, name)

    def __call__(self, value=None):
        from . import values

        if not self.supported:
            # Calling a type that cannot make values here: a TypeError (as Python raises for
            # a call a type does not accept), and a ValueError for callers that catch that.
            raise UnsupportedDTypeError(f"T.{self}(...): dtype {self} is known but not supported inside kernels "
                                        f"by this compiler yet (supported: {', '.join(_NAMES)}); see COMPATIBILITY.md")
        if value is None:
            # TIR's spelling of a scalar variable to bind with T.let(var, value)
            from .. import _tl

            return values.UnboundVar(_tl.var("v", str(self)))
        return values.cast(value, self)

    @property
    def element(self) -> "dtype":
        """The scalar type of one lane (the dtype itself for scalars)."""
        return dtype(_split_lanes(self)[0])

    @property
    def bits(self) -> int:
        if self.lanes > 1:
            return self.element.bits
        if self == "bool":
            return 8
        if self == "tfloat32":
            return 32
        if self == "float4_e2m1_unpacked":  # one fp4 value in a byte: the byte is its size
            return 8
        if self.startswith(("float8_", "float4_", "float6_")):  # float8_e4m3fn: 8 (not float64)
            return int(self[5])
        return int("".join(c for c in self if c.isdigit()))

    @property
    def is_float(self) -> bool:
        return self.startswith("float") or self in ("bfloat16", "tfloat32")

    @property
    def is_int(self) -> bool:
        return self.startswith("int") or self.startswith("uint")

    @property
    def is_float8(self) -> bool:
        return self.startswith("float8")

    # Upstream's fp4 predicates are methods (tilelang.language.dtypes adds them to its dtype):
    # packed float4_e2m1fn (and its x2 pairs) and the one-per-byte float4_e2m1_unpacked.
    def is_float4_e2m1fn(self) -> bool:
        return self.element == "float4_e2m1fn"

    def is_float4_e2m1_unpacked(self) -> bool:
        return self == "float4_e2m1_unpacked"

    def is_float4(self) -> bool:
        return self.is_float4_e2m1fn() or self.is_float4_e2m1_unpacked() or self == "float4_e2m1fnx2"

    @property
    def is_unsigned(self) -> bool:
        return self.startswith("uint") or self == "bool"

    @property
    def supported(self) -> bool:
        """Whether kernels can compute with this type (False for the name-only types)."""
        return self in _NAMES

    # TVM-style attributes TileLang programs read.
    @property
    def type_code(self) -> str:
        return "bool" if self == "bool" else "uint" if self.is_unsigned else "int" if self.is_int else "float"

    @property
    def lanes(self) -> int:
        return _split_lanes(self)[1]

    @property
    def itemsize(self) -> int:
        return max(1, self.bits // 8)

    def as_torch(self):
        """The torch dtype of the same name (torch must be installed)."""
        import torch

        name = _TORCH_NAMES.get(str(self))
        t = getattr(torch, name, None) if name else None
        if t is None:
            raise ValueError(f"{self}.as_torch(): this torch ({torch.__version__}) has no {self} type")
        return t

    def as_numpy(self):
        """The numpy dtype (fp8, fp4, int4 and bfloat16 through ml_dtypes)."""
        import numpy as np

        name = _NUMPY_NAMES.get(str(self))
        if name is None:
            return np.dtype(str(self))
        import ml_dtypes

        t = getattr(ml_dtypes, name, None)
        if t is None:
            raise ValueError(f"{self}.as_numpy(): ml_dtypes {ml_dtypes.__version__} has no {self} type")
        return np.dtype(t)


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
    elif name.startswith("torch."):  # "torch.float16", as str(torch.float16) reads
        name = name[len("torch."):]
    name = _ALIASES.get(name, name)
    if name not in _ALL_NAMES and _split_lanes(name)[1] == 1:
        raise ValueError(f"unknown dtype {name!r}; expected one of {', '.join(_ALL_NAMES)}")
    return name


def is_float4_e2m1fn(value) -> bool:
    """Whether `value` (a dtype or its name) is packed fp4 E2M1."""
    return dtype(value).is_float4_e2m1fn()


def is_float4_e2m1_unpacked(value) -> bool:
    """Whether `value` is fp4 E2M1 held one value per byte (upstream's shared-memory form)."""
    return dtype(value).is_float4_e2m1_unpacked()


def is_float4(value) -> bool:
    """Whether `value` is fp4 E2M1, packed or unpacked."""
    return dtype(value).is_float4()


def _split_lanes(name: str) -> tuple:
    """("float32", 2) for "float32x2"; (name, 1) for a scalar or an unknown name."""
    base, sep, lanes = str(name).rpartition("x")
    if sep and lanes.isdigit() and int(lanes) in _VECTOR_LANES and _ALIASES.get(base, base) in _ALL_NAMES:
        return _ALIASES.get(base, base), int(lanes)
    return str(name), 1


def _note_tfloat32():
    """tfloat32 (TF32: float32 storage, 10-bit mantissa products on tensor cores) is float32
    here, except that a T.gemm with a tile declared tfloat32 rounds its operands to TF32
    (GemmOp::tf32, on every target alike); said once per kernel line in the remarks."""
    from . import builder as _b
    from .hints import remark

    active = _b.active()
    if active is not None and active.frames:
        remark("tfloat32 is held as float32 here; a T.gemm with a tfloat32 tile rounds A and B to TF32 (10-bit "
               "mantissa, round to nearest, ties away) and sums in float32; other arithmetic on it is float32")


def require_supported(t, what="") -> str:
    """The canonical name of t, or a ValueError when kernels cannot compute with it yet."""
    name = canonical(t)
    if name == "tfloat32":
        _note_tfloat32()
        return "float32"
    if name not in _NAMES:
        where = f"{what}: " if what else ""
        raise ValueError(f"{where}dtype {name} is known but not supported inside kernels by this compiler yet "
                         f"(supported: {', '.join(_NAMES)}); see COMPATIBILITY.md")
    return name


bool_ = dtype("bool")
int8, int16, int32, int64 = (dtype(n) for n in ("int8", "int16", "int32", "int64"))
uint8, uint16, uint32, uint64 = (dtype(n) for n in ("uint8", "uint16", "uint32", "uint64"))
float16, bfloat16, float32, float64 = (dtype(n) for n in ("float16", "bfloat16", "float32", "float64"))
float8_e4m3fn, float8_e4m3fnuz, float8_e5m2, float8_e5m2fnuz, float8_e8m0fnu = (dtype(n) for n in (
    "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu"))
float4_e2m1fn, float6_e2m3fn, float6_e3m2fn = (dtype(n) for n in ("float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn"))
float8_e3m4, float8_e4m3, float8_e4m3b11fnuz = (dtype(n) for n in ("float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz"))
float4_e2m1_unpacked = dtype("float4_e2m1_unpacked")  # one fp4 value in the low bits of a byte
int4, uint4, int2, uint2, int1, uint1 = (dtype(n) for n in ("int4", "uint4", "int2", "uint2", "int1", "uint1"))
tfloat32 = dtype("tfloat32")

DataType = dtype

# Every dtype name upstream's `T` exports (C names, scalars, vector types), as upstream's
# dtypes module lists them; each is an attribute of tilelang.language.
_all_dtypes = (
    ["bool", "short", "int", "uint", "long", "half", "float", "double"]
    + [n for n in _ALL_NAMES if n not in ("bool",)]
    + [f"{b}x{n}" for b in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                           "float16", "float32", "float64", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
                           "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu",
                           "float6_e2m3fn", "float6_e3m2fn", "float4_e2m1fn", "tfloat32")
       for n in _VECTOR_LANES]
    + ["bfloat16x2"]
)


def resolve_torch_storage_dtype(value) -> dtype:
    """The dtype of the torch tensor that stores values of type `value`: the type itself when
    torch has it, the packed or byte type of sub-byte types (int4 -> int8; float4_e2m1fn ->
    float4_e2m1fnx2, or int8 on a torch without float4_e2m1fn_x2)."""
    import torch

    t = dtype(value)
    name = _TORCH_NAMES.get(str(t))
    if name is None or not hasattr(torch, name):
        if t.bits < 8 or t.lanes > 1 and t.element.bits < 8:
            return int8
        raise ValueError(f"resolve_torch_storage_dtype: torch {torch.__version__} has no storage type for {t}")
    return dtype(_torch_to_name(getattr(torch, name)))


def _torch_to_name(torch_dtype) -> str:
    text = str(torch_dtype).removeprefix("torch.")
    return "float4_e2m1fnx2" if text == "float4_e2m1fn_x2" else canonical(text)


def _build_torch_dtype_to_str() -> dict:
    import torch

    out = {}
    for ours in _ALL_NAMES + ["float4_e2m1fnx2"]:
        name = _TORCH_NAMES.get(ours)
        if name == ours.replace("fnx2", "fn_x2") and hasattr(torch, name):
            out[getattr(torch, name)] = ours
    return out


def __getattr__(name):
    # torch is optional: the torch-keyed table is built (importing torch) on first use.
    if name == "_TORCH_DTYPE_TO_STR":
        table = _build_torch_dtype_to_str()
        globals()[name] = table
        return table
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
