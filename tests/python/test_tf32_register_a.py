"""A tfloat32 register fragment as T.gemm's A operand (mHC pre's GEMM: bfloat16 rows widened
to tfloat32 in registers, squared and summed, and multiplied by a shared tfloat32 tile): on
CUDA, A stays in registers in mma.sync m16n8k8's tf32 operand layout (a copy per warp along
N, tl::gemm_rs_tf32), the square sums read the same registers (their tile's layout folds A's
columns), and the shared tile the registers are loaded from takes the panel layout. Values
are checked against float64 on whichever target the suite runs."""
import ml_dtypes
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison


def gemm_square_sums(tokens, hidden, n_out=32, tb=32, hb=256, threads=128, fold=4, policy=None, x_dtype=T.bfloat16):
    extra = {} if policy is None else {"policy": policy}

    @T.prim_func
    def main(X: T.Tensor((tokens, hidden), x_dtype), W: T.Tensor((n_out, hidden), T.tfloat32),
             Y: T.Tensor((tokens, n_out), T.float32), S: T.Tensor((tokens,), T.float32)):
        with T.Kernel(T.ceildiv(tokens, tb), threads=threads) as bx:
            acc = T.alloc_fragment((tb, n_out), T.float32)
            part = T.alloc_fragment((tb, fold), T.float32)
            T.clear(acc)
            T.clear(part)
            for k in T.Pipelined(hidden // hb, num_stages=2):
                xs = T.alloc_shared((tb, hb), x_dtype)
                ws = T.alloc_shared((n_out, hb), T.tfloat32)
                T.copy(X[bx * tb, k * hb], xs)
                T.copy(W[0, k * hb], ws)
                x16 = T.alloc_fragment((tb, hb), x_dtype)
                T.copy(xs, x16)
                x32 = T.alloc_fragment((tb, hb), T.tfloat32)
                T.copy(x16, x32)
                for s in T.serial(hb // fold):
                    for i, j in T.Parallel(tb, fold):
                        part[i, j] += x32[i, s * fold + j] * x32[i, s * fold + j]
                T.gemm(x32, ws, acc, transpose_B=True, **extra)
            sums = T.alloc_fragment((tb,), T.float32)
            T.reduce_sum(part, sums, dim=1)
            for i in T.Parallel(tb):
                S[bx * tb + i] = sums[i]
            T.copy(acc, Y[bx * tb, 0])

    return main


def tf32(x):
    """x rounded to TF32 (10-bit mantissa, to nearest, ties away from zero), as float64."""
    u = np.asarray(x, np.float32).view(np.uint32)
    return ((u + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32).astype(np.float64)


CASES = {  # name -> (tokens, hidden, keyword arguments)
    "warps_2x2": (96, 512, dict()),
    "fold_8": (64, 512, dict(fold=8)),
    "warps_4x1": (128, 512, dict(tb=64, policy=T.GemmWarpPolicy.FullRow)),
    "two_warps": (64, 256, dict(threads=64)),
    "float32_rows": (64, 512, dict(x_dtype=T.float32)),  # A not exact in TF32: rounded by the GEMM
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_values(case, rng):
    tokens, hidden, kw = CASES[case]
    n_out = kw.get("n_out", 32)
    exact = kw.get("x_dtype") is None
    x = rng.standard_normal((tokens, hidden)).astype(ml_dtypes.bfloat16 if exact else np.float32)
    w = rng.standard_normal((n_out, hidden)).astype(np.float32)
    y, s = poison((tokens, n_out)), poison((tokens,))
    tilelang.compile(gemm_square_sums(tokens, hidden, **kw))(x, w, y, s)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y, (x64 if exact else tf32(x)) @ tf32(w).T, rtol=1e-4, atol=1e-3 * np.sqrt(hidden))
    np.testing.assert_allclose(s, (x64 * x64).sum(axis=1), rtol=1e-5)


def test_cuda_keeps_a_in_registers():
    art = tilelang.lower(gemm_square_sums(96, 512), target="cuda -arch=sm_90a")
    src, remarks = art.kernel_source, "\n".join(art.remarks)
    # (A widened from bfloat16 is exact in TF32: the last template argument skips its rounding)
    assert "tl::gemm_rs_tf32<32, 32, 256, 2, 2, false, false, 256, tl::kWgmmaPanels + 32, true>(" in src, src
    assert "_staged" not in src and "kept in shared memory" not in remarks, remarks
    assert "fragment part: registers, layout mma_tf32_a(32x4, warps 2x2)" in remarks, remarks
    assert "shared tile xs: in wgmma's panel layout" in remarks, remarks


def test_cuda_rounds_an_a_that_is_not_exact_in_tf32():
    src = tilelang.lower(gemm_square_sums(64, 512, x_dtype=T.float32), target="cuda -arch=sm_90a").kernel_source
    assert "tl::gemm_rs_tf32<32, 32, 256, 2, 2, false, false, 256, tl::kWgmmaPanels + 32>(" in src, src


def test_cuda_without_tf32_mma_stages_a():
    art = tilelang.lower(gemm_square_sums(96, 512), target="cuda -arch=sm_90a",
                         pass_configs={"tl.enable_tf32_mma": "false"})
    assert "gemm_rs_tf32" not in art.kernel_source
