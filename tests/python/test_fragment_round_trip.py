"""A 3-D T.reshape of a GEMM accumulator (upstream's fp8 lighting indexer): the element-wise
update over the view walks the registers (its last two loops fused into the accumulator's
columns), and the reduction over the view's last dimension is one row reduction per group
of columns, each folding the registers of its columns and combining across lanes, so the
tile stays in registers (lower-buffer-views, FragmentRewriter::FoldColumnWindow). A
statement no nest walks in registers goes through a shared twin for that statement on CUDA:
the registers are written to it before, the statement runs on it, and a statement that
writes the fragment reads it back after; a remark names the access. Against numpy on
whichever target the suite runs; the CUDA choices compile-only."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu, poison

BN, BQ, H, D = 64, 4, 16, 64


def grouped_logits(reduce="sum", groups=BQ):
    """O[bq, bn] = reduce_h relu(K Q^T)[bn, bq * H + h] * W[bq, h], through a (BN, BQ, H) view."""
    BQ, H = groups, 64 // groups  # 64 columns in `groups` groups
    reducer = {"sum": T.reduce_sum, "max": T.reduce_max}[reduce]

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
            reducer(s3, logits, dim=-1, clear=True)
            for bq, bn in T.Parallel(BQ, BN):
                O[bq, bn] = logits[bn, bq]

    return main


@pytest.mark.parametrize("reduce, groups", [("sum", 4), ("max", 4), ("sum", 1), ("sum", 32)])
def test_grouped_logits_match_numpy(rng, reduce, groups):
    H = 64 // groups
    k = rng.standard_normal((BN, D)).astype(np.float16)
    q = rng.standard_normal((groups * H, D)).astype(np.float16)
    w = rng.standard_normal((groups, H)).astype(np.float32)
    o = poison((groups, BN))
    compile_cpu(grouped_logits(reduce, groups))(k, q, w, o)
    s = np.maximum(k.astype(np.float64) @ q.astype(np.float64).T, 0).reshape(BN, groups, H) * w[None]
    want = s.sum(-1) if reduce == "sum" else s.max(-1)
    np.testing.assert_allclose(o, want.T, rtol=1e-4, atol=1e-4)


def test_the_grouped_reduction_stays_in_registers_on_cuda():
    k = tilelang.lower(grouped_logits(), target="cuda -arch=sm_90a")
    remarks = "\n".join(k.remarks)
    assert "fragment s: registers" in remarks, remarks
    assert not any(r.startswith("fragment s (registers) goes through shared memory") for r in k.remarks), remarks
    assert remarks.count("T.reduce of register fragment s (") == BQ, remarks
    assert "s_shared" not in k.kernel_source
    # each group folds only the registers of its 16 columns: 2 of each 8-column tile, 2 tiles
    src = k.kernel_source
    first = src[src.index("float acc = "):src.index("tl::AllReduce")]
    assert first.count("+ s[") == 4, first
    update = src[src.find("tl::max(s["):][:200]
    assert update.startswith("tl::max(s[l_"), update


def test_many_groups_still_go_through_a_shared_twin():
    """More than 16 groups: one reduction each would be too many; the element loops remain."""
    k = tilelang.lower(grouped_logits(groups=32), target="cuda -arch=sm_90a")
    trips = [r for r in k.remarks if r.startswith("fragment s (registers) goes through shared memory")]
    assert len(trips) == 1 and trips[0].endswith("(written to a shared tile)"), k.remarks


def grouped_logits_plus_bias():
    """The grouped reduction's destination also meets a register tile of its shape in a
    T.Parallel: it stays in shared memory (the reduction writes it column by column)."""

    @T.prim_func
    def main(K: T.Tensor((BN, D), "float16"), Q: T.Tensor((BQ * H, D), "float16"), Bias: T.Tensor((BN, BQ), "float32"),
             O: T.Tensor((BN, BQ), "float32")):
        with T.Kernel(1, threads=128):
            ks = T.alloc_shared((BN, D), "float16")
            qs = T.alloc_shared((BQ * H, D), "float16")
            s = T.alloc_fragment((BN, BQ * H), "float32")
            s3 = T.reshape(s, (BN, BQ, H))
            logits = T.alloc_fragment((BN, BQ), "float32")
            bias = T.alloc_fragment((BN, BQ), "float32")
            T.copy(K, ks)
            T.copy(Q, qs)
            T.copy(Bias, bias)
            T.gemm(ks, qs, s, transpose_B=True, clear_accum=True)
            T.reduce_sum(s3, logits, dim=-1, clear=True)
            for i, j in T.Parallel(BN, BQ):
                logits[i, j] += bias[i, j]
            T.copy(logits, O)

    return main


def test_a_grouped_destination_next_to_a_register_tile(rng):
    k = rng.standard_normal((BN, D)).astype(np.float16)
    q = rng.standard_normal((BQ * H, D)).astype(np.float16)
    bias = rng.standard_normal((BN, BQ)).astype(np.float32)
    o = poison((BN, BQ))
    compile_cpu(grouped_logits_plus_bias())(k, q, bias, o)
    s = (k.astype(np.float64) @ q.astype(np.float64).T).reshape(BN, BQ, H).sum(-1) + bias
    np.testing.assert_allclose(o, s, rtol=1e-4, atol=1e-3)
    remarks = "\n".join(tilelang.lower(grouped_logits_plus_bias(), target="cuda -arch=sm_90a").remarks)
    assert "fragment logits: kept in shared memory" in remarks, remarks
