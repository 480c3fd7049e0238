"""Accesses that certainly leave a tile are compile errors at their line, on every target;
guarded or data-dependent accesses are left alone (no correct program is refused)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, marker_line, rand

TARGETS = ["cpu", "cuda -arch=sm_90a"]


def too_long_parallel():
    @T.prim_func
    def main(X: T.Tensor((256,), "float32"), Y: T.Tensor((256,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(256):
                f[i] = X[i] * 2  # MARK-HERE: past f's declared 128 elements
            for i in T.Parallel(256):
                Y[i] = f[i]
    return main


@pytest.mark.parametrize("target", TARGETS)
def test_fragment_indexed_past_its_end_grows_with_a_warning(target, rng):
    """Upstream sizes a fragment by the loops that use it (its attention-sink examples rely
    on it): the fragment gets the extent its accesses need, and a warning remark says so."""
    kernel = tilelang.compile(too_long_parallel(), target=target)
    warn = [r for r in kernel.get_remarks() if r.startswith("warning: fragment f")]
    assert warn and "declared [128]" in warn[0] and "[256] elements" in warn[0], kernel.get_remarks()
    assert f"line {marker_line(too_long_parallel, '# MARK-HERE')}" in warn[0], warn
    if target == "cpu":
        x, y = rand(rng, (256,)), np.full(256, np.nan, np.float32)
        kernel(x, y)
        assert_close(y, f64(x) * 2, "float32")


def negative_fragment_index():
    @T.prim_func
    def main(X: T.Tensor((128,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            for i in T.Parallel(128):
                f[i - 1] = X[i]  # ERR-HERE
            for i in T.Parallel(128):
                Y[i] = f[i]
    return main


def test_fragment_index_below_zero_is_an_error():
    with pytest.raises(tilelang.TileLangCompileError, match=r"takes values in \[-1, 126\]") as info:
        tilelang.compile(negative_fragment_index(), target="cpu")
    assert info.value.line == marker_line(negative_fragment_index)


def shifted_shared_read():
    @T.prim_func
    def main(X: T.Tensor((4, 64), "float32"), Y: T.Tensor((4, 64), "float32")):
        with T.Kernel(4, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            T.copy(X[bx, :], s)
            for i in T.Parallel(64):
                Y[bx, i] = s[i + bx]  # ERR-HERE: bx reaches 3, so i + bx reaches 66
    return main


def test_block_index_pushes_an_index_past_the_tile():
    with pytest.raises(tilelang.TileLangCompileError, match=r"takes values in \[0, 66\]") as info:
        tilelang.compile(shifted_shared_read(), target="cpu")
    assert info.value.line == marker_line(shifted_shared_read)


def test_guarded_and_wrapped_accesses_are_accepted(rng):
    @T.prim_func
    def main(X: T.Tensor((64,), "float32"), Y: T.Tensor((3, 64), "float32")):
        with T.Kernel(1, threads=64) as bx:
            s = T.alloc_shared((64,), "float32")
            T.copy(X, s)
            for i in T.Parallel(64):
                Y[0, i] = T.if_then_else(i + 1 < 64, s[i + 1], 0)  # guarded by a select
                if i > 0:
                    Y[1, i] = s[i - 1]  # guarded by an if
                else:
                    Y[1, i] = 0
                Y[2, i] = s[(i + 5) % 64]  # not linear: wraps, never out of range

    y = compile_cpu(main, out_idx=[-1])(x := rand(rng, (64,)))
    xi = np.arange(64)
    ref = np.stack([np.where(xi + 1 < 64, np.roll(x, -1), 0), np.where(xi > 0, np.roll(x, 1), 0), x[(xi + 5) % 64]])
    assert_close(y, f64(ref), "float32")


def fragment_over_dynamic_loop(bounded):
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((4, n), "float32"), Y: T.Tensor((4, 128), "float32")):
        with T.Kernel(4, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            T.clear(f)
            if bounded:
                for i in T.Parallel(T.min(n, 128)):
                    f[i] = X[bx, i]
                for i in T.Parallel(n):
                    if i < 128:
                        f[i] = f[i] + 1  # guarded: accepted
                for i in T.serial(n):  # a serial loop is left alone, as upstream leaves it
                    if i < 128:
                        f[i] = f[i] * 1
            else:
                for i in T.Parallel(n):
                    f[i] = X[bx, i]  # ERR-HERE: n may exceed 128
            T.copy(f, Y[bx, :])
    return main


@pytest.mark.parametrize("target", TARGETS)
def test_register_tile_over_a_loop_of_unbounded_extent_is_refused(target):
    """Upstream refuses it too: registers are sized at compile time, and nothing bounds n."""
    with pytest.raises(tilelang.TileLangCompileError, match=r"register fragment of 128 elements.*T.Parallel loop of extent "
                                                            r"n \(no upper bound\).*T\.min\(n, 128\)") as info:
        tilelang.compile(fragment_over_dynamic_loop(False), target=target)
    assert info.value.line == marker_line(fragment_over_dynamic_loop)


def test_register_tile_over_a_bounded_dynamic_loop_runs(rng):
    kernel = compile_cpu(fragment_over_dynamic_loop(True), out_idx=[-1])
    for n in (100, 200):
        x = rand(rng, (4, n))
        y = kernel(x)
        ref = np.zeros((4, 128))
        m = min(n, 128)
        ref[:, :m] = f64(x)[:, :m] + 1
        ref[:, m:] = 0  # cleared, never written
        assert_close(y, ref, "float32")


def test_serial_loop_of_unbounded_extent_over_a_fragment_compiles():
    """Upstream's checker leaves serial loops alone (a data-dependent count of blocks)."""
    n = T.dynamic("n")

    @T.prim_func
    def main(X: T.Tensor((n,), "float32"), Y: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            f = T.alloc_fragment((128,), "float32")
            T.clear(f)
            for i in T.serial(n):
                f[i] = X[i]
            T.copy(f, Y)

    for target in TARGETS:
        tilelang.compile(main, target=target)
