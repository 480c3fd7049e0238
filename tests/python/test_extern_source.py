"""T.import_source / T.call_extern / T.access_ptr (upstream's dequantization examples): the
imported text goes at the top of the kernel file once, the call is printed by name with
the tile addresses it is given, and the same program runs on the CPU target when the
helper is portable C++. The CUDA side is compiled here (sm_90a) and run by the GPU suite."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, cpu_target_only, f64, marker_line

# Unpacks 8 4-bit values (two per byte, low nibble first) into floats minus 8, as a decode
# helper would; written for CUDA, portable to C++.
DECODE = r"""
template <typename T1, typename T2>
__device__ __forceinline__ void decode_u4x8(const T1* packed, T2* out, int scale) {
  for (int i = 0; i < 4; ++i) {
    uint b = (uint)packed[i];
    out[2 * i] = (T2)((int)(b & 15u) - 8) * (T2)scale;
    out[2 * i + 1] = (T2)((int)(b >> 4) - 8) * (T2)scale;
  }
}
"""


def dequant(N=256, threads=32, spelling="keyword"):
    @T.prim_func
    def main(Q: T.Tensor((N // 2,), "uint8"), Out: T.Tensor((N,), "float32"), scale: T.int32):
        with T.Kernel(N // (8 * threads), threads=threads) as bx:
            T.import_source(DECODE)
            tx = T.get_thread_binding()
            q = T.alloc_local((4,), "uint8")
            d = T.alloc_local((8,), "float32")
            for v in T.serial(4):
                q[v] = Q[(bx * threads + tx) * 4 + v]
            if spelling == "keyword":
                T.call_extern("decode_u4x8", T.access_ptr(q, "r"), T.access_ptr(d, "w"), scale, dtype="handle")
            else:  # TIR's order: the dtype first
                T.call_extern("handle", "decode_u4x8", T.access_ptr(q, "r"), T.access_ptr(d, "w"), scale)
            for v in T.serial(8):
                Out[(bx * threads + tx) * 8 + v] = d[v]

    return main


def _reference(q, scale):
    lo, hi = (q & 15).astype(np.int64) - 8, (q >> 4).astype(np.int64) - 8
    return f64(np.stack([lo, hi], axis=1).reshape(-1) * scale)


@pytest.mark.parametrize("spelling", ["keyword", "tir"])
def test_imported_helper_runs_on_the_cpu(spelling):
    rng = np.random.default_rng(3)
    q = rng.integers(0, 256, size=128, dtype=np.uint8)
    out = np.full(256, np.nan, np.float32)
    tilelang.compile(dequant(spelling=spelling))(q, out, 3)
    assert_close(out, _reference(q, 3), "float32")


def test_imported_source_is_emitted_once_before_the_kernel():
    for target in ("cpu", "cuda -arch=sm_90a"):
        src = tilelang.compile(dequant(), target=target).get_kernel_source()
        assert src.count("void decode_u4x8(") == 1, src
        assert src.index("void decode_u4x8(") < src.index("extern \"C\""), src
        assert "decode_u4x8((&q[" in src and "(&d[" in src, src


def test_extern_call_arguments_are_checked():
    def bad(name_or_arg):
        @T.prim_func
        def main(Out: T.Tensor((32,), "float32")):
            with T.Kernel(1, threads=32) as bx:
                d = T.alloc_local((1,), "float32")
                T.call_extern(*name_or_arg)  # ERR-HERE
                Out[0] = d[0]
        return main

    with pytest.raises(tilelang.TileLangCompileError, match="func_name must be a C identifier") as info:
        tilelang.compile(bad(("handle", "not a name")), target="cpu")
    assert info.value.line == marker_line(bad)
    with pytest.raises(tilelang.TileLangCompileError, match="the result dtype and the function name are required"):
        tilelang.compile(bad(("handle",)), target="cpu")
    with pytest.raises(tilelang.TileLangCompileError, match="argument 1 is a string"):
        tilelang.compile(bad(("handle", "f", "x")), target="cpu")


# Upstream's fp16 x int4 decode helpers are PTX (lop3.b32, sub.f16x2): CUDA device code only.
PTX_DECODE = r"""
__device__ void decode_ptx(const unsigned* packed, unsigned* out) {
  asm volatile("lop3.b32 %0, %1, 0x000f000f, 0x64006400, 0xea;" : "=r"(out[0]) : "r"(packed[0]));
}
"""


def ptx_kernel():
    @T.prim_func
    def main(Q: T.Tensor((32,), "uint32"), Out: T.Tensor((32,), "uint32")):
        with T.Kernel(1, threads=32):
            T.import_source(PTX_DECODE)  # ERR-HERE
            tx = T.get_thread_binding()
            T.call_extern("decode_ptx", T.access_ptr(Q[tx], "r"), T.access_ptr(Out[tx], "w"), dtype="handle")

    return main


@cpu_target_only
def test_imported_ptx_assembly_is_refused_on_the_cpu_at_its_line():
    with pytest.raises(tilelang.TileLangCompileError, match="PTX inline assembly") as info:
        tilelang.lower(ptx_kernel(), target="cpu")
    assert info.value.line == marker_line(ptx_kernel)
    assert "lop3.b32" in tilelang.lower(ptx_kernel(), target="cuda -arch=sm_90a").kernel_source


def test_an_extern_call_on_elements_the_thread_picks_runs_on_the_cpu():
    """Its address arguments index a tensor by the thread: the CPU's guard of the call (the
    thread index is a per-thread array there) guards the statement; it made a handle-typed
    zero, an internal error."""

    @T.prim_func
    def main(Q: T.Tensor((128,), "uint8"), Out: T.Tensor((256,), "float32"), scale: T.int32):
        with T.Kernel(1, threads=32):
            T.import_source(DECODE)
            tx = T.get_thread_binding()
            T.call_extern("decode_u4x8", T.access_ptr(Q[tx * 4], "r"), T.access_ptr(Out[tx * 8], "w"), scale,
                          dtype="handle")

    rng = np.random.default_rng(5)
    q = rng.integers(0, 256, size=128, dtype=np.uint8)
    out = np.full(256, np.nan, np.float32)
    tilelang.compile(main, target="cpu")(q, out, 2)
    assert_close(out, _reference(q, 2), "float32")
