"""More of upstream TileLang's package API: C dtype names, tile annotations of macro
parameters, the autotuner's compile/cache/do_not_specialize, T.attr, the @jit object's
argument binding, and annotations in the body of a @T.prim_func."""
from __future__ import annotations

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang.errors import TileLangCompileError


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# --------------------------------------------------------------------------- C dtype names

@pytest.mark.parametrize("name, canonical", [("uint", "uint32"), ("int", "int32"), ("long", "int64"),
                                             ("short", "int16"), ("ulong", "uint64"), ("float", "float32")])
def test_c_dtype_names(name, canonical):
    d = T.dtype(name)
    assert d == canonical and str(d) == canonical
    assert d.bits == int(canonical.lstrip("uintfloa"))
    # the module attributes upstream exports name the same types
    assert getattr(T, name) == canonical
    # a source format spelled as upstream's quantization helpers compare it
    assert T.dtype("uint") == T.uint and T.dtype("uint") != T.int


def test_uint_tensor_parameter_computes(rng):
    @T.prim_func
    def add_one(A: T.Tensor((16,), "uint"), B: T.Tensor((16,), "uint")):
        with T.Kernel(1) as _:
            for i in T.serial(16):
                B[i] = A[i] + T.uint32(1)

    k = tilelang.compile(add_one, target="cpu")
    a = rng.integers(0, 2**32 - 2, size=16, dtype=np.uint32)
    b = np.zeros(16, np.uint32)
    k(a, b)
    np.testing.assert_array_equal(b, a + 1)


def test_unknown_dtype_still_rejected():
    with pytest.raises(ValueError, match="unknown dtype 'uints'"):
        T.dtype("uints")


# --------------------------------------------------------------------------- SharedBuffer & co.

def _macro_kernel(arg_kind="shared", n=8, dtype="float32"):
    @T.macro
    def scale_into(src: T.SharedBuffer([8], "float32"), dst: T.FragmentBuffer([8], "float32"),
                   acc: T.LocalBuffer((1,), "float32"), factor: T.float32):
        for i in T.Parallel(8):
            dst[i] = src[i] * factor
        acc[0] = dst[0]

    @T.prim_func
    def kern(A: T.Tensor((8,), "float32"), B: T.Tensor((8,), "float32"), C: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=1) as _:
            s = T.alloc_shared((n,), dtype) if arg_kind == "shared" else T.alloc_fragment((n,), dtype)
            f = T.alloc_fragment((8,), "float32")
            a = T.alloc_local((1,), "float32")
            T.copy(A[0:n], s)
            scale_into(s, f, a, 3.0)
            T.copy(f, B)
            C[0] = a[0]

    return kern


def test_scoped_buffer_annotations_on_macro(rng):
    k = tilelang.compile(_macro_kernel(), target="cpu")
    a = rng.standard_normal(8).astype(np.float32)
    b = np.zeros(8, np.float32)
    c = np.zeros(1, np.float32)
    k(a, b, c)
    np.testing.assert_allclose(b, a * 3.0, rtol=1e-6)
    np.testing.assert_allclose(c, a[:1] * 3.0, rtol=1e-6)


def test_scoped_buffer_spec_forms():
    s = T.SharedBuffer[(4, 8), "float16"]
    assert s.shape == (4, 8) and s.dtype == "float16" and s.scope == "shared"
    assert repr(T.FragmentBuffer([16], T.float32)) == "T.FragmentBuffer([16], float32)"
    assert T.LocalBuffer(4).shape == (4,)


@pytest.mark.parametrize("kind, n, dtype, message", [
    ("fragment", 8, "float32", "parameter 'src' is annotated T.SharedBuffer.*fragment buffer"),
    ("shared", 4, "float32", "parameter 'src' is annotated with shape \\[8\\]"),
    ("shared", 8, "float16", "parameter 'src' is annotated float32"),
])
def test_scoped_buffer_mismatch_names_the_parameter(kind, n, dtype, message):
    with pytest.raises(TileLangCompileError, match=message):
        _macro_kernel(kind, n, dtype)


def test_scoped_buffer_is_not_a_kernel_parameter_annotation():
    with pytest.raises(TileLangCompileError, match="parameter 'A'.*annotates @T.macro parameters"):
        @T.prim_func
        def kern(A: T.SharedBuffer((8,), "float32")):
            with T.Kernel(1) as _:
                T.evaluate(0)
