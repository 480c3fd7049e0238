"""tl.vectorize_parallel_copies (on): a T.Parallel element copy into a tensor along its innermost
loop, under guards that do not use that loop (upstream's attention epilogues:
`if row < seqlen: Out[q0 + i, h, d] = O_shared[i, d]`), is spread over the threads in groups
of 16 bytes, each one vector access on CUDA (src/transform/cuda/parallel_copy_groups.h).
Results against numpy on whichever target the suite runs; the CUDA forms read from the source."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs

from conftest import compile_cpu, poison, rand

HAVE_NVRTC, _ = _tl.find_cuda_compiler(_search_dirs())


def epilogue(rows=128, dim=128, heads=4, total=1000, guard_uses_d=False, dtype="float16"):
    """Rows [q0, q0 + rows) of head h of Out from a shared tile, the rows past `seqlen` left
    alone."""

    @T.prim_func
    def main(X: T.Tensor((rows, dim), dtype), Out: T.Tensor((total, heads, dim), dtype), q0: T.int32,
             seqlen: T.int32, h: T.int32):
        with T.Kernel(1, threads=256):
            S = T.alloc_shared((rows, dim), dtype)
            T.copy(X, S)
            for i, d in T.Parallel(rows, dim):
                if (i < seqlen and d < seqlen) if guard_uses_d else i < seqlen:
                    Out[q0 + i, h, d] = S[i, d]

    return main


def cuda(func, arch="sm_90a", **configs):
    k = tilelang.lower(func, target=f"cuda -arch={arch}", pass_configs=configs)
    return k.kernel_source, "\n".join(k.remarks)


def out_lines(src):
    return [ln.strip() for ln in src.splitlines() if "Out[" in ln]


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_an_epilogue_copy_is_one_16_byte_store_per_group(arch):
    src, remarks = cuda(epilogue(), arch)
    (line,) = out_lines(src)
    assert line.startswith("tl::copy<16>(") and "(&Out[" in line, src
    assert "8 consecutive elements per thread at a time" in remarks, remarks
    assert "(S -> Out): 16-byte accesses" in remarks, remarks


@pytest.mark.skipif(not HAVE_NVRTC, reason="no CUDA compiler")
def test_the_grouped_copy_compiles():
    from tilelang import env
    from tilelang.jit.cuda_backend import _templates_root

    src, _ = cuda(epilogue())
    path, _, _, log, _ = _tl.build_cuda(src, "sm_90a", env.kernel_cache_dir(), [_templates_root()], [],
                                         _search_dirs(), "")
    assert path.endswith(".cubin"), log


def test_a_guard_that_uses_the_inner_loop_keeps_element_stores():
    src, _ = cuda(epilogue(guard_uses_d=True))
    assert out_lines(src) and all(ln.startswith("Out[") for ln in out_lines(src)), src


def test_a_copy_smaller_than_a_group_per_thread_keeps_element_stores():
    src, _ = cuda(epilogue(rows=8, dim=64))
    assert out_lines(src) and all(ln.startswith("Out[") for ln in out_lines(src)), src


def test_off_with_the_key():
    # (with the copy groups off, the element-wise groups take the copy: both keys off)
    off = {"tl.vectorize_parallel_copies": False, "tl.vectorize_parallel_elementwise": False}
    src, remarks = cuda(epilogue(), **off)
    assert all(ln.startswith("Out[") for ln in out_lines(src)), src
    assert "consecutive elements per thread" not in remarks
    src, remarks = cuda(epilogue(), **{"tl.vectorize_parallel_copies": False})
    assert "element-wise, 8 consecutive elements per thread at a time" in remarks, remarks


@pytest.mark.parametrize("seqlen", [128, 77, 0])
def test_rows_past_the_length_are_left_alone(rng, seqlen):
    x = rand(rng, (128, 128), "float16")
    out = poison((1000, 4, 128), "float16")
    compile_cpu(epilogue())(x, out, 300, seqlen, 2)
    np.testing.assert_array_equal(out[300:300 + seqlen, 2], x[:seqlen])
    rest = np.ones(out.shape, bool)
    rest[300:300 + seqlen, 2] = False
    assert np.isnan(out[rest].astype(np.float32)).all()


def blocked_epilogue(m=64, n=64, transposed_blocks=False, dtype="float16"):
    """C from a tile of 16 x 16 blocks (upstream's example_gemm_intrinsics stores its
    accumulators so): each block row is 16 consecutive elements, so groups of 8 along j are."""

    @T.prim_func
    def main(X: T.Tensor((m // 16, n // 16, 16, 16), dtype), C: T.Tensor((m, n), dtype)):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((m // 16, n // 16, 16, 16), dtype)
            T.copy(X, S)
            for i, j in T.Parallel(m, n):
                if transposed_blocks:
                    C[i, j] = S[i // 16, j // 16, j % 16, i % 16]
                else:
                    C[i, j] = S[i // 16, j // 16, i % 16, j % 16]

    return main


def test_a_tile_of_blocks_is_copied_in_groups_too():
    src, remarks = cuda(blocked_epilogue())
    (line,) = [ln.strip() for ln in src.splitlines() if "C[" in ln]
    assert line.startswith("tl::copy<16>(") and "(&C[" in line, src
    src, _ = cuda(blocked_epilogue(transposed_blocks=True))  # j picks the block row: not consecutive
    assert all(ln.strip().startswith("C[") for ln in src.splitlines() if "C[" in ln), src


@pytest.mark.parametrize("transposed_blocks", [False, True])
def test_a_tile_of_blocks_matches_numpy(rng, transposed_blocks):
    x = rand(rng, (4, 4, 16, 16), "float16")
    out = poison((64, 64), "float16")
    compile_cpu(blocked_epilogue(transposed_blocks=transposed_blocks))(x, out)
    blocks = x.transpose(0, 1, 3, 2) if transposed_blocks else x
    np.testing.assert_array_equal(out, blocks.transpose(0, 2, 1, 3).reshape(64, 64))
