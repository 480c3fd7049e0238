"""A 3-D T.reshape of a GEMM accumulator (upstream's fp8 lighting indexer): the element-wise
update over the view walks the registers (its last two loops fused into the accumulator's
columns), and a statement no nest walks in registers (the reduction over groups of its
columns) goes through a shared twin for that statement on CUDA: the registers
are written to it before, the statement runs on it, and a statement that writes the
fragment reads it back after. A remark names the access. Against numpy on whichever target
the suite runs; the CUDA choices compile-only."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison

BN, BQ, H, D = 64, 4, 16, 64


def grouped_logits():
    """O[bq, bn] = sum_h relu(K Q^T)[bn, bq * H + h] * W[bq, h], through a (BN, BQ, H) view."""

    @T.prim_func
    def main(K: T.Tensor((BN, D), "float16"), Q: T.Tensor((BQ * H, D), "float16"), W: T.Tensor((BQ, H), "float32"),
             O: T.Tensor((BQ, BN), "float32")):
        with T.Kernel(1, threads=128):
            ks = T.alloc_shared((BN, D), "float16")
            qs = T.alloc_shared((BQ * H, D), "float16")
            s = T.alloc_fragment((BN, BQ * H), "float32")
            s3 = T.reshape(s, (BN, BQ, H))
            logits = T.alloc_fragment((BN, BQ), "float32")
            w = T.alloc_fragment((BQ, H), "float32")
            T.copy(K, ks)
            T.copy(Q, qs)
            T.copy(W, w)
            T.gemm(ks, qs, s, transpose_B=True, clear_accum=True, policy=T.GemmWarpPolicy.FullCol)
            for bn, bq, h in T.Parallel(BN, BQ, H):
                s3[bn, bq, h] = T.max(s3[bn, bq, h], 0) * w[bq, h]
            T.reduce_sum(s3, logits, dim=-1, clear=True)
            for bq, bn in T.Parallel(BQ, BN):
                O[bq, bn] = logits[bn, bq]

    return main


def test_grouped_logits_match_numpy(rng):
    k = rng.standard_normal((BN, D)).astype(np.float16)
    q = rng.standard_normal((BQ * H, D)).astype(np.float16)
    w = rng.standard_normal((BQ, H)).astype(np.float32)
    o = poison((BQ, BN))
    compile_cpu(grouped_logits())(k, q, w, o)
    s = np.maximum(k.astype(np.float64) @ q.astype(np.float64).T, 0).reshape(BN, BQ, H) * w[None]
    np.testing.assert_allclose(o, s.sum(-1).T, rtol=1e-4, atol=1e-4)


def test_the_view_goes_through_a_shared_twin_on_cuda():
    k = tilelang.lower(grouped_logits(), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.remarks)
    assert "fragment s: registers" in remarks, remarks
    # the element-wise update walks the registers (s[bn, bq * 16 + h]: the fused pair of
    # loops covers the accumulator's columns); the grouped reduction goes through shared
    # memory and only reads it
    trips = [r for r in k.remarks if r.startswith("fragment s (registers) goes through shared memory")]
    assert len(trips) == 1 and trips[0].endswith("(written to a shared tile)"), remarks
    assert "s[i0, i1 * 16 + r]" in trips[0], trips
    assert "s_shared" in k.kernel_source
    update = k.kernel_source[k.kernel_source.find("tl::max(s["):][:200]
    assert update.startswith("tl::max(s[l_"), update
