"""Reductions of a whole 1-D fragment to one value (T.reduce_* of a vector into a (1,)
fragment). On CUDA the vector stays in registers: each thread folds its own elements, the
lanes combine with shuffles (printed tl::AllReduce<tl::SumOp, 32, true>::run, upstream's
spelling), and across warps the partials meet in shared memory; half and bfloat16 max / min
fold with CUDA's __hmax / __hmax_nan. A vector of per-row values (the result of a row
reduction) holds copies of each row in several lanes: a sum counts each row once. Code is
checked on sm_90a without a GPU; results against float64 on whichever target the suite runs."""
import math

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from conftest import NP, assert_close, poison


def cuda_lowering(func, arch="sm_90a"):
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": arch}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


REDUCE = {"sum": T.reduce_sum, "max": T.reduce_max, "min": T.reduce_min, "abssum": T.reduce_abssum,
          "absmax": T.reduce_absmax}


def vector_reduce(kind, L, dtype="float32", threads=128, clear=True, nan_propagate=False):
    """Out[0] = reduce(A) (or reduce(A) combined with 0.25 when clear=False)."""
    extra = {"nan_propagate": True} if nan_propagate else {}

    @T.prim_func
    def main(A: T.Tensor((L,), dtype), Out: T.Tensor((1,), dtype)):
        with T.Kernel(1, threads=threads):
            a = T.alloc_fragment((L,), dtype)
            r = T.alloc_fragment((1,), dtype)
            T.copy(A, a)
            if not clear:
                r[0] = 0.25
            REDUCE[kind](a, r, clear=clear, **extra)
            T.copy(r, Out)

    return main


def reference(kind, a, clear=True):
    a = a.astype(np.float64)
    value = {"sum": a.sum(), "max": a.max(), "min": a.min(), "abssum": np.abs(a).sum(),
             "absmax": np.abs(a).max()}[kind]
    if not clear:
        value = value + 0.25 if kind in ("sum", "abssum") else (max if "max" in kind else min)(value, 0.25)
    return np.array([value])


def per_row_then_total(M=64, N=128, threads=128):
    """Total[0] = sum_i max_j A[i, j]: a vector of per-row values (copies in 16 lanes) summed."""

    @T.prim_func
    def main(A: T.Tensor((M, N), "float32"), Total: T.Tensor((1,), "float32")):
        with T.Kernel(1, threads=threads):
            y = T.alloc_fragment((M, N), "float32")
            r = T.alloc_fragment((M,), "float32")
            t = T.alloc_fragment((1,), "float32")
            T.copy(A, y)
            T.reduce_max(y, r, dim=1)
            T.reduce_sum(r, t)
            T.copy(t, Total)

    return main


def test_a_vector_reduced_to_one_value_stays_in_registers():
    code, remarks = cuda_lowering(vector_reduce("sum", 512, threads=128))
    assert any("fragment a: registers, layout vector(512, 128 threads, vec 4)" in r for r in remarks), remarks
    assert any("T.reduce of register vector a" in r and "across 4 warps" in r for r in remarks), remarks
    assert "tl::AllReduce<tl::SumOp, 32>::run(" in code, code
    assert "tl::atomic" not in code, code


def test_half_max_folds_with_cuda_names():
    code, _ = cuda_lowering(vector_reduce("max", 64, "float16", threads=32))
    assert "tl::AllReduce<tl::MaxOp, 32>::run(" in code and "MaxOpNan" not in code, code
    assert "tl::__hmax(" in code and "__hmax_nan" not in code, code
    code, _ = cuda_lowering(vector_reduce("min", 64, "bfloat16", threads=32, nan_propagate=True))
    assert "tl::AllReduce<tl::MinOpNan, 32>::run(" in code and "tl::__hmin_nan(" in code, code


def test_row_reductions_print_allreduce():
    code, _ = cuda_lowering(per_row_then_total())
    assert "tl::AllReduce<tl::MaxOp, 16, true>::run(" in code, code


@pytest.mark.parametrize("kind", ["sum", "max", "min", "abssum", "absmax"])
@pytest.mark.parametrize("L, threads", [(64, 32), (512, 128), (1024, 256)])
def test_vector_reduce_matches_float64(kind, L, threads, rng):
    a = rng.standard_normal(L).astype(np.float32)
    out = poison((1,))
    tilelang.compile(vector_reduce(kind, L, threads=threads))(a, out)
    assert_close(out, reference(kind, a))


@pytest.mark.parametrize("kind", ["sum", "max", "absmax"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_vector_reduce_without_clear_matches_float64(kind, dtype, rng):
    a = rng.standard_normal(256).astype(NP[dtype])
    out = poison((1,), dtype)
    tilelang.compile(vector_reduce(kind, 256, dtype, threads=128, clear=False))(a, out)
    assert_close(out, reference(kind, a, clear=False), dtype, rtol=2e-2)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("kind", ["max", "min"])
def test_nan_propagates_only_when_asked(kind, dtype, rng):
    a = rng.standard_normal(64).astype(NP[dtype])
    a[7] = np.nan
    plain, with_nan = poison((1,), dtype), poison((1,), dtype)
    tilelang.compile(vector_reduce(kind, 64, dtype, threads=32))(a, plain)
    tilelang.compile(vector_reduce(kind, 64, dtype, threads=32, nan_propagate=True))(a, with_nan)
    finite = np.delete(a.astype(np.float64), 7)
    assert float(plain[0]) == (finite.max() if kind == "max" else finite.min())
    assert math.isnan(float(with_nan[0]))


def test_per_row_values_are_summed_once_per_row(rng):
    a = rng.standard_normal((64, 128)).astype(np.float32)
    out = poison((1,))
    tilelang.compile(per_row_then_total())(a, out)
    assert_close(out, np.array([a.astype(np.float64).max(axis=1).sum()]))
