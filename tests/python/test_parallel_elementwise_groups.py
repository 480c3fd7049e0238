"""tl.vectorize_parallel_elementwise (on by default; tests pass it explicitly): a T.Parallel nest that
computes into a tensor element by element from memory loads along its innermost loop
(`Z[r, c] = X[r, c] * 2 + Y[r, c]`) is done k elements per thread at a time through registers
(src/transform/cuda/parallel_copy_groups.h): each loaded window one 16-byte load, the values
computed one by one, the result one 16-byte store, as upstream's code does. The CUDA forms are
read from the generated source (no GPU needed); the values are checked against numpy with the
key on, on whichever target the suite runs (on CUDA in the GPU script)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T

from conftest import compile_cpu, f64, poison, rand

ON = {"tl.vectorize_parallel_elementwise": True}


def axpy(M=128, N=512, bm=32, bn=256, threads=256, x_dtype="float16", z_dtype="float16", transposed_y=False,
         edge=False):
    """Z = X * 2 + Y (+ a per-row scale), tile by tile; `edge`: rows past M - 5 left alone."""

    @T.prim_func
    def main(X: T.Tensor((M, N), x_dtype), Y: T.Tensor((N, M) if transposed_y else (M, N), "float16"),
             s: T.Tensor((M,), "float32"), Z: T.Tensor((M, N), z_dtype)):
        with T.Kernel(N // bn, M // bm, threads=threads) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                r, c = by * bm + i, bx * bn + j
                y = Y[c, r] if transposed_y else Y[r, c]
                if not edge or r < M - 5:
                    Z[r, c] = T.cast(X[r, c] * T.cast(2, x_dtype) * T.cast(s[r], x_dtype) + T.cast(y, x_dtype),
                                     z_dtype)

    return main


def reference(x, y, s, transposed_y=False, z_dtype="float16"):
    yy = f64(y).T if transposed_y else f64(y)
    return (f64(x) * 2 * f64(s)[:, None] + yy).astype(z_dtype)


def cuda(func, arch="sm_90a", **configs):
    k = tilelang.lower(func, target=f"cuda -arch={arch}", pass_configs=configs)
    return k.kernel_source, "\n".join(k.remarks)


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_loads_and_store_go_16_bytes_at_a_time(arch):
    src, remarks = cuda(axpy(), arch, **ON)
    assert "element-wise, 8 consecutive elements per thread at a time" in remarks, remarks
    copies = [ln.strip() for ln in src.splitlines() if ln.strip().startswith("tl::copy<16>(")]
    assert len(copies) == 3, src  # X and Y in, Z out
    assert any("(&Z[" in ln for ln in copies) and any("(&X_group[0])" in ln for ln in copies), src
    assert "s[" in src and "s_group" not in src, src  # the per-row scale stays a load: it has no window


def test_on_by_default_and_zero_keeps_the_element_loop():
    src, remarks = cuda(axpy())
    assert "element-wise, 8 consecutive elements per thread at a time" in remarks, remarks
    src, remarks = cuda(axpy(), **{"tl.vectorize_parallel_elementwise": False})
    assert "element-wise" not in remarks and "tl::copy<16>(" not in src, src


def test_mixed_widths_take_the_widest_elements_groups():
    """float32 X into a float16 Z: 4 elements per group (16 bytes of X, 8 of Z)."""
    src, remarks = cuda(axpy(x_dtype="float32"), **ON)
    assert "element-wise, 4 consecutive elements per thread at a time" in remarks, remarks
    assert "tl::copy<16>((&X_group[0])" in src and any(ln.strip().startswith("tl::copy<8>(") and "(&Z[" in ln
                                                   for ln in src.splitlines()), src


def test_a_load_across_the_inner_loop_keeps_element_accesses():
    src, remarks = cuda(axpy(transposed_y=True), **ON)
    assert "element-wise" not in remarks, remarks


def test_a_guard_without_the_inner_loop_stays_around_the_group():
    src, remarks = cuda(axpy(edge=True), **ON)
    assert "element-wise, 8 consecutive" in remarks, remarks
    guard = next(ln for ln in src.splitlines() if ln.strip().startswith("if ("))
    assert "< 123" in guard or "<= 122" in guard, guard


def ragged(M=64, N=1000, bm=16, bn=256, threads=128):
    """Z = X + Y over a grid that overhangs N: `if c < N` guards the last column tile."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), Y: T.Tensor((M, N), "float16"), Z: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), M // bm, threads=threads) as (bx, by):
            for i, j in T.Parallel(bm, bn):
                r = by * bm + i
                c = bx * bn + j
                if c < N:
                    Z[r, c] = X[r, c] + Y[r, c]

    return main


@pytest.mark.parametrize("N, grouped", [(1000, True), (1004, False)])
def test_a_ragged_edge_on_a_group_boundary_keeps_the_groups(N, grouped):
    """`c < N` holds for a whole group or for none of it when N is a multiple of the group
    (1000 = 125 x 8): the guard is taken at the group's first element. 1004 is not (nor are
    the tensor's rows whole groups): element by element."""
    src, remarks = cuda(ragged(N=N), **ON)
    assert ("element-wise, 8 consecutive" in remarks) == grouped, remarks
    if grouped:
        guard = next(ln.strip() for ln in src.splitlines() if ln.strip().startswith("if ("))
        assert "< 1000" in guard and "tx" in guard, guard


@pytest.mark.parametrize("N", [1000, 1004])
def test_ragged_values_match_numpy_with_the_key_on(rng, N):
    x, y = rand(rng, (64, N), "float16"), rand(rng, (64, N), "float16")
    z = poison((64, N), "float16")
    compile_cpu(ragged(N=N), pass_configs=ON)(x, y, z)
    np.testing.assert_allclose(z.astype(np.float32), (f64(x) + f64(y)).astype(np.float16).astype(np.float32),
                               rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("kw", [{}, {"x_dtype": "float32"}, {"edge": True}, {"transposed_y": True}])
def test_values_match_numpy_with_the_key_on(rng, kw):
    x = rand(rng, (128, 512), kw.get("x_dtype", "float16"))
    y = rand(rng, (512, 128) if kw.get("transposed_y") else (128, 512), "float16")
    s = rand(rng, (128,), "float32")
    z = poison((128, 512), "float16")
    compile_cpu(axpy(**kw), pass_configs=ON)(x, y, s, z)
    want = reference(x, y, s, kw.get("transposed_y", False))
    rows = 128 - 5 if kw.get("edge") else 128
    np.testing.assert_allclose(z[:rows].astype(np.float32), want[:rows].astype(np.float32), rtol=2e-2, atol=2e-2)
    if kw.get("edge"):
        assert np.isnan(z[rows:].astype(np.float32)).all()


def test_a_load_guarded_beyond_the_store_keeps_element_accesses():
    """X is narrower than Z: its loads past column 1000 read zero (guard-global-access's
    `c < 1000 ? X[r, c] : 0`), and Z's store is not guarded. A group would load X's window
    whole, past its end: not grouped."""
    M, N, W = 64, 1024, 1000

    @T.prim_func
    def main(X: T.Tensor((M, W), "float16"), Y: T.Tensor((M, N), "float16"), Z: T.Tensor((M, N), "float16")):
        with T.Kernel(N // 256, M // 16, threads=128) as (bx, by):
            for i, j in T.Parallel(16, 256):
                Z[by * 16 + i, bx * 256 + j] = X[by * 16 + i, bx * 256 + j] + Y[by * 16 + i, bx * 256 + j]

    src, remarks = cuda(main, **ON)
    assert "element-wise" not in remarks, remarks
    rng = np.random.default_rng(9)
    x, y = rand(rng, (M, W), "float16"), rand(rng, (M, N), "float16")
    z = poison((M, N), "float16")
    compile_cpu(main, pass_configs=ON)(x, y, z)
    want = f64(y)
    want[:, :W] += f64(x)
    np.testing.assert_allclose(z.astype(np.float32), want.astype(np.float16).astype(np.float32), rtol=1e-3, atol=1e-3)


def staged_scale(M=256, N=256, bm=64, bn=128):
    """S = 3 X tile by tile in a shared tile, then the tile's rows reversed into Z."""

    @T.prim_func
    def main(X: T.Tensor((M, N), "float16"), Z: T.Tensor((M, N), "float16")):
        with T.Kernel(N // bn, M // bm, threads=128) as (bx, by):
            S = T.alloc_shared((bm, bn), "float16")
            for i, j in T.Parallel(bm, bn):
                S[i, j] = X[by * bm + i, bx * bn + j] * T.float16(3)
            for i, j in T.Parallel(bm, bn):
                Z[by * bm + i, bx * bn + j] = S[bm - 1 - i, j]

    return main


def test_a_shared_tile_is_written_a_group_at_a_time():
    src, remarks = cuda(staged_scale(), **ON)
    assert "element-wise, 8 consecutive" in remarks, remarks
    assert any(ln.strip().startswith("tl::copy<16>((&S[") for ln in src.splitlines()), src
    assert "__syncthreads()" in src, src  # before the other threads' reads of the tile


def test_staged_values_match_numpy_with_the_key_on(rng):
    x = rand(rng, (256, 256), "float16")
    z = poison((256, 256), "float16")
    compile_cpu(staged_scale(), pass_configs=ON)(x, z)
    want = (f64(x) * 3).astype(np.float16).reshape(4, 64, 2, 128)[:, ::-1].reshape(256, 256)
    np.testing.assert_array_equal(z, want)
