"""T.alloc_global: a global buffer shared by the T.Kernel blocks of one function (as in
split-KV flash decoding: one kernel writes partial results, the next combines them). It is
a hidden parameter, allocated per call on the arguments' device and never returned."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison
from tilelang.errors import TileLangCompileError


def _split_sum(B, S, D, NS, dtype="float32"):
    @T.prim_func
    def split_sum(X: T.Tensor((B, S, D), dtype), Y: T.Tensor((B, D), dtype)):
        part = T.alloc_global((B, NS, D), "float32")
        with T.Kernel(NS, B, threads=64) as (bz, b):
            acc = T.alloc_fragment((D,), "float32")
            T.clear(acc)
            for k in T.serial(S // NS):
                for j in T.Parallel(D):
                    acc[j] += X[b, bz * (S // NS) + k, j]
            T.copy(acc, part[b, bz, :])
        with T.Kernel(B, threads=64) as b:
            tot = T.alloc_fragment((D,), "float32")
            T.clear(tot)
            for s in T.serial(NS):
                for j in T.Parallel(D):
                    tot[j] += part[b, s, j]
            T.copy(tot, Y[b, :])

    return split_sum


def test_partials_written_by_one_kernel_and_combined_by_the_next(rng):
    k = compile_cpu(_split_sum(3, 256, 64, 4), out_idx=[-1])
    assert [k.params[i].name for i in k.in_idx] == ["X"] and k.workspace_idx == [2]
    x = rng.standard_normal((3, 256, 64)).astype(np.float32)
    assert_close(k(x), f64(x).sum(axis=1))
    y = poison((3, 64))
    compile_cpu(_split_sum(3, 256, 64, 4))(x, y)  # without out_idx: the caller passes Y only
    assert_close(y, f64(x).sum(axis=1))


def test_workspace_sized_by_a_dynamic_dimension(rng):
    B = T.dynamic("B")
    k = compile_cpu(_split_sum(B, 128, 32, 2), out_idx=[1])
    for b in (1, 5):
        x = rng.standard_normal((b, 128, 32)).astype(np.float32)
        assert_close(k(x), f64(x).sum(axis=1))


def test_alloc_global_inside_a_kernel_is_an_error():
    with pytest.raises(TileLangCompileError, match="outside `with T.Kernel"):

        @T.prim_func
        def bad(X: T.Tensor((8,), "float32")):
            with T.Kernel(1, threads=8) as bx:
                w = T.alloc_global((8,), "float32")
                for i in T.Parallel(8):
                    w[i] = X[i]


def test_host_description_names_the_workspace():
    k = compile_cpu(_split_sum(2, 64, 32, 2), out_idx=[-1])
    text = k.get_host_source()
    assert "allocate workspace (T.alloc_global, freed after the call) part" in text
