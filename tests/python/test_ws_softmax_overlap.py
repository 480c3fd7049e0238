"""tl.ws_softmax_overlap: a warp-specialized attention loop issues step k + 1's Q K^T before
step k's P V, and runs step k + 1's softmax while that P V is on the tensor cores
(src/transform/cuda/warp_specialize_overlap.cc).

The schedule is checked as sm_90a source text here; the values are checked against
float64 numpy on whichever target the suite runs (the CPU target runs the program as
written; the GPU suite, TILELANG_TEST_CUDA=1, runs the overlapped loop)."""
import re

import numpy as np
import pytest

import tilelang
import tilelang.language as T

SM90 = "cuda -arch=sm_90a"
OVERLAP = {"tl.ws_softmax_overlap": 1}


@T.macro
def softmax_and_pv(s, p, o, v_s, m, m_prev, r, l, s_sum, scale, cast_last):
    """One step of the online softmax over the scores s, then O += P V (the loop the overlap
    reschedules). cast_last: the cast of the probabilities after the rescale of O."""
    block_M, block_N = s.shape
    dim = o.shape[1]
    T.copy(m, m_prev)
    T.reduce_max(s, m, dim=1, clear=False)
    for i in T.Parallel(block_M):
        r[i] = T.exp2(m_prev[i] * scale - m[i] * scale)
    for i, j in T.Parallel(block_M, block_N):
        s[i, j] = T.exp2(s[i, j] * scale - m[i] * scale)
    T.reduce_sum(s, s_sum, dim=1)
    for i in T.Parallel(block_M):
        l[i] = l[i] * r[i] + s_sum[i]
    if not cast_last:
        T.copy(s, p)
    for i, j in T.Parallel(block_M, dim):
        o[i, j] *= r[i]
    if cast_last:
        T.copy(s, p)
    T.gemm(p, v_s, o)


def attention(seq_q=256, seq_kv=512, dim=64, block_M=128, block_N=64, threads=256, stages=2, causal=False,
              cast_last=True):
    """Flash-attention forward, one (query block, head) per block. cast_last: the cast of
    the probabilities after the rescale of the output (else before it)."""
    scale = dim ** -0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((2, seq_q, dim), "float16"), K: T.Tensor((2, seq_kv, dim), "float16"),
             V: T.Tensor((2, seq_kv, dim), "float16"), O: T.Tensor((2, seq_q, dim), "float32")):
        with T.Kernel(seq_q // block_M, 2, threads=threads) as (bx, h):
            q_s = T.alloc_shared((block_M, dim), "float16")
            k_s = T.alloc_shared((block_N, dim), "float16")
            v_s = T.alloc_shared((block_N, dim), "float16")
            s = T.alloc_fragment((block_M, block_N), "float32")
            p = T.alloc_fragment((block_M, block_N), "float16")
            o = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            r = T.alloc_fragment((block_M,), "float32")
            l = T.alloc_fragment((block_M,), "float32")
            s_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(Q[h, bx * block_M, 0], q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            steps = T.ceildiv((bx + 1) * block_M, block_N) if causal else seq_kv // block_N
            for k in T.Pipelined(steps, num_stages=stages):
                T.copy(K[h, k * block_N, 0], k_s)
                T.copy(V[h, k * block_N, 0], v_s)
                if causal:
                    for i, j in T.Parallel(block_M, block_N):
                        s[i, j] = T.if_then_else(bx * block_M + i >= k * block_N + j, 0, -T.infinity("float32"))
                else:
                    T.clear(s)
                T.gemm(q_s, k_s, s, transpose_B=True)
                softmax_and_pv(s, p, o, v_s, m, m_prev, r, l, s_sum, scale, cast_last)
            for i, j in T.Parallel(block_M, dim):
                o[i, j] /= l[i]
            T.copy(o, O[h, bx * block_M, 0])

    return main


def reference(q, k, v, causal):
    s = np.einsum("hqd,hkd->hqk", q.astype(np.float64), k.astype(np.float64)) / np.sqrt(q.shape[-1])
    if causal:
        s = np.where(np.tril(np.ones(s.shape[1:], bool)), s, -np.inf)
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,hkd->hqd", p / p.sum(-1, keepdims=True), v.astype(np.float64))


@pytest.mark.parametrize("block_N, causal, cast_last, stages",
                         [(64, False, True, 2), (128, False, False, 2), (64, True, True, 2), (64, False, True, 1)])
def test_overlapped_attention_matches_float64(block_N, causal, cast_last, stages):
    rng = np.random.default_rng(block_N + causal + stages)
    seq_q, seq_kv, dim = 256, 256 if causal else 512, 64
    q, k, v = (rng.standard_normal((2, n, dim)).astype(np.float16) for n in (seq_q, seq_kv, seq_kv))
    o = np.full((2, seq_q, dim), np.nan, np.float32)
    kernel = tilelang.compile(attention(seq_q, seq_kv, dim, block_N=block_N, causal=causal, cast_last=cast_last,
                                        stages=stages),
                              pass_configs=OVERLAP)
    kernel(q, k, v, o)
    np.testing.assert_allclose(o, reference(q, k, v, causal), rtol=2e-2, atol=2e-3)


def consumer_loop(src):
    return src[src.index("warpgroup_reg_alloc"):]


def test_sm90_schedule_issues_both_gemms_then_waits_for_one():
    k = tilelang.compile(attention(), target=SM90, pass_configs=OVERLAP)
    assert any("tl.ws_softmax_overlap" in r and "runs while" in r for r in k.get_remarks()), k.get_remarks()
    code = consumer_loop(k.get_kernel_source())
    loop = code[code.index("for (int32_t k"):]
    # step k: Q K^T(k) issued, then P V(k - 1) from the other register set, wait for Q K^T only
    qk = loop.index("tl::gemm_ss_wgmma_issue<")
    pv = loop.index("tl::gemm_rs_wgmma_issue<", qk)
    assert qk < pv < loop.index("tl::wgmma_wait_hold<1, ", pv) < loop.index("tl::AllReduce<tl::MaxOp")
    # K and V have barrier pairs of their own: V(k - 1)'s stage is awaited just before P V,
    # K(k)'s released as soon as Q K^T(k) is done, before the softmax
    assert loop.index("tl::mbarrier_wait_parity", qk) < pv
    wait_qk = loop.index("tl::wgmma_wait_hold<1, ", pv)
    assert loop.index("tl::mbarrier_arrive", wait_qk) < loop.index("tl::AllReduce<tl::MaxOp")
    # the softmax, then the wait for P V, the stage's release, the cast of P and its
    # packing (nothing writes a register a wgmma reads while P V runs), the rescale of O
    wait_pv = loop.index("tl::wgmma_wait_hold<0, ", pv)
    assert loop.index("tl::AllReduce<tl::SumOp", pv) < wait_pv < loop.index("tl::mbarrier_arrive", wait_pv) < \
        loop.index("tl::cast_copy<2", wait_pv) < loop.index("tl::wgmma_pack_a<", wait_pv) < \
        loop.index("o[l", loop.index("tl::wgmma_pack_a<", wait_pv))
    # 8 steps: step 0 before the loop, 1..7 in it, P V(7) after it
    assert "for (int32_t k_1 = 1; k_1 < 8; ++k_1)" in code
    assert code.count("tl::gemm_rs_wgmma_issue<") == 2


def test_sm90_overlap_is_on_by_default_and_can_be_turned_off():
    assert tilelang.compile(attention(), target=SM90).get_kernel_source().count("tl::gemm_rs_wgmma_issue<") == 2
    k = tilelang.compile(attention(), target=SM90, pass_configs={"tl.ws_softmax_overlap": 0})
    assert "gemm_rs_wgmma_issue" not in k.get_kernel_source()
    assert not any("tl.ws_softmax_overlap" in r for r in k.get_remarks()), k.get_remarks()


def test_sm90_one_stage_overlaps_too():
    # K's stage is free again after Q K^T(k), V's after P V(k - 1): with a barrier pair each,
    # neither load waits for a release that comes after it
    k = tilelang.compile(attention(stages=1), target=SM90, pass_configs=OVERLAP)
    assert k.get_kernel_source().count("tl::gemm_rs_wgmma_issue<") == 2
    assert any("runs while" in r for r in k.get_remarks()), k.get_remarks()


def test_sm90_pin_puts_a_branch_on_the_row_sums_before_the_wait_for_pv():
    # tl.ws_softmax_overlap_pin: schedule_after(the last softmax statement's float vector)
    # right before the wait for P V, so that ptxas cannot issue that wait early
    k = tilelang.compile(attention(), target=SM90, pass_configs={**OVERLAP, "tl.ws_softmax_overlap_pin": 1})
    loop = consumer_loop(k.get_kernel_source())
    loop = loop[loop.index("for (int32_t k"):]
    pin = loop.index("tl::schedule_after(l[0]);")
    assert loop.index("tl::AllReduce<tl::SumOp") < pin < loop.index("tl::wgmma_wait_hold<0, ") == \
        loop.index("tl::wgmma_wait_hold<0, ", pin)
    assert "schedule_after" not in tilelang.compile(attention(), target=SM90, pass_configs=OVERLAP).get_kernel_source()


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("key, value", [("tl.ws_softmax_overlap_pin", 1), ("tl.ws_softmax_mask_skip", 0)])
def test_overlap_variants_match_float64(key, value, causal):
    rng = np.random.default_rng(5 + causal)
    seq_q, seq_kv, dim = 256, 256, 64
    q, k, v = (rng.standard_normal((2, n, dim)).astype(np.float16) for n in (seq_q, seq_kv, seq_kv))
    o = np.full((2, seq_q, dim), np.nan, np.float32)
    tilelang.compile(attention(seq_q, seq_kv, dim, block_N=64, causal=causal), pass_configs={**OVERLAP, key: value})(q, k, v, o)
    np.testing.assert_allclose(o, reference(q, k, v, causal), rtol=2e-2, atol=2e-3)


def test_sm90_overlap_declines_where_the_registers_would_not_hold_it():
    # 128 rows in one consumer warpgroup, 128 x 128 tiles: O (128), S (128) and the packed
    # P (64) per thread while P V runs, over the 256 - 48 the consumers keep for them
    k = tilelang.compile(attention(dim=128, block_N=128, threads=128), target=SM90, pass_configs=OVERLAP)
    assert "gemm_rs_wgmma_issue" not in k.get_kernel_source()
    assert any("not applied: O, S and the packed P would hold 320 registers" in r and "over the 208" in r
               for r in k.get_remarks()), k.get_remarks()
    # two warpgroups share the rows: 64 + 64 + 32 fit the 240 - 48
    k = tilelang.compile(attention(dim=128, block_N=128, threads=256), target=SM90, pass_configs=OVERLAP)
    assert k.get_kernel_source().count("tl::gemm_rs_wgmma_issue<") == 2


def test_sm90_qk_overwrites_the_scores_and_the_mask_is_added_while_pv_runs():
    # T.clear(s) before Q K^T: gone; Q K^T's first k step sets scale-d 0 (AccumulateC false)
    src = tilelang.compile(attention(), target=SM90).get_kernel_source()
    loop = consumer_loop(src)
    loop = loop[loop.index("for (int32_t k"):]
    assert "tl::gemm_ss_wgmma_issue<128, 64, 64, false, true, false, 1, 1, 64, 64, false>" in loop, loop
    assert "= 0.0f;" not in loop[:loop.index("tl::gemm_ss_wgmma_issue<")]
    # a causal mask: added to the scores after the wait for Q K^T, while P V(k - 1) runs
    loop = consumer_loop(tilelang.compile(attention(causal=True), target=SM90).get_kernel_source())
    loop = loop[loop.index("for (int32_t k"):]
    qk, pv = loop.index("tl::gemm_ss_wgmma_issue<"), loop.index("tl::gemm_rs_wgmma_issue<")
    add = re.search(r"s\[(l_\d+)\] = \(s\[\1\] \+ \(", loop).start()
    assert "? 0.0f :" not in loop[:qk] and qk < pv < loop.index("tl::wgmma_wait_hold<1, ") < add < \
        loop.index("tl::AllReduce<tl::MaxOp") < loop.index("tl::wgmma_wait_hold<0, ")


def test_sm90_mask_skip_guard_holds_wherever_the_mask_can_change_a_score():
    # tl.ws_softmax_mask_skip (on by default): the causal mask is added under a guard on the
    # block and the step. Checked exhaustively from the generated text: wherever the guard is
    # false, the mask's condition holds (the add would be + 0) for every consumer thread and
    # register. With the key off the add runs in every step.
    unguarded = tilelang.compile(attention(causal=True), target=SM90,
                                 pass_configs={**OVERLAP, "tl.ws_softmax_mask_skip": 0}).get_kernel_source()
    assert re.search(r"s\[(l_\d+)\] = \(s\[\1\] \+ \(", unguarded)
    assert not re.search(r"if \(\((.*) < 0\)\) \{", consumer_loop(unguarded))
    src = tilelang.compile(attention(causal=True), target=SM90, pass_configs=OVERLAP).get_kernel_source()
    loop = consumer_loop(src)
    loop = loop[loop.index("for (int32_t k"):]
    guard = re.search(r"if \(\((.*) < 0\)\) \{", loop)
    mask = re.search(r"s\[(l_\d+)\] = \(s\[\1\] \+ \((.*) \? 0\.0f :", loop)
    assert guard and mask, loop
    reg = mask.group(1)
    guard_expr, cond_expr = guard.group(1), mask.group(2)
    skipped = 0
    for bx in range(2):  # seq_q 256 / block_M 128
        for k_1 in range(1, (bx + 1) * 2):  # the loop's steps (block_N 64, causal)
            if eval(guard_expr, {"bx": bx, "k_1": k_1}) < 0:
                continue
            skipped += 1
            for tx in range(256):
                for r in range(32):
                    assert eval(cond_expr, {"bx": bx, "k_1": k_1, "tx": tx, reg: r}), (bx, k_1, tx, r)
    assert skipped >= 1  # (bx 1, k 1: the block's columns 64..127 lie below its first row 128)


def varlen_attention(seq_q=256, seq_kv=512, dim=64, block_M=128, block_N=64, threads=256):
    """Attention over the first q_len queries and kv_len keys (runtime scalars), masked as a
    varlen attention masks: a score is -1e9 where its row or its column lies past the end."""
    scale = dim ** -0.5 * 1.44269504

    @T.prim_func
    def main(Q: T.Tensor((seq_q, dim), "float16"), K: T.Tensor((seq_kv, dim), "float16"),
             V: T.Tensor((seq_kv, dim), "float16"), q_len: T.int32, kv_len: T.int32,
             O: T.Tensor((seq_q, dim), "float32")):
        with T.Kernel(seq_q // block_M, threads=threads) as bx:
            q_s = T.alloc_shared((block_M, dim), "float16")
            k_s = T.alloc_shared((block_N, dim), "float16")
            v_s = T.alloc_shared((block_N, dim), "float16")
            s = T.alloc_fragment((block_M, block_N), "float32")
            p = T.alloc_fragment((block_M, block_N), "float16")
            o = T.alloc_fragment((block_M, dim), "float32")
            m = T.alloc_fragment((block_M,), "float32")
            m_prev = T.alloc_fragment((block_M,), "float32")
            r = T.alloc_fragment((block_M,), "float32")
            l = T.alloc_fragment((block_M,), "float32")
            s_sum = T.alloc_fragment((block_M,), "float32")
            T.copy(Q[bx * block_M, 0], q_s)
            T.fill(o, 0)
            T.fill(l, 0)
            T.fill(m, -T.infinity("float32"))
            for k in T.Pipelined(T.ceildiv(kv_len, block_N), num_stages=2):
                T.copy(K[k * block_N, 0], k_s)
                T.copy(V[k * block_N, 0], v_s)
                for i, j in T.Parallel(block_M, block_N):
                    s[i, j] = T.if_then_else(bx * block_M + i >= q_len or k * block_N + j >= kv_len, -1e9, 0)
                T.gemm(q_s, k_s, s, transpose_B=True)
                softmax_and_pv(s, p, o, v_s, m, m_prev, r, l, s_sum, scale, True)
            for i, j in T.Parallel(block_M, dim):
                o[i, j] /= l[i]
            T.copy(o, O[bx * block_M, 0])

    return main


@pytest.mark.parametrize("q_len, kv_len", [(200, 300), (256, 512), (97, 64)])
def test_varlen_mask_of_two_bounds_matches_float64(q_len, kv_len):
    rng = np.random.default_rng(q_len + kv_len)
    seq_q, seq_kv, dim = 256, 512, 64
    q = rng.standard_normal((seq_q, dim)).astype(np.float16)
    k, v = (rng.standard_normal((seq_kv, dim)).astype(np.float16) for _ in range(2))
    o = np.full((seq_q, dim), np.nan, np.float32)
    tilelang.compile(varlen_attention(seq_q, seq_kv, dim))(q, k, v, q_len, kv_len, o)
    want = reference(q[None, :q_len], k[None, :kv_len], v[None, :kv_len], False)[0]
    np.testing.assert_allclose(o[:q_len], want, rtol=2e-2, atol=2e-3)


def c_to_python(expr):
    """A generated C condition (fully parenthesized) as a Python expression."""
    expr = re.sub(r"static_cast<int(32|64)_t>", "", expr)
    expr = re.sub(r"int64_t\((-?\d+)LL\)", r"(\1)", expr)
    return expr.replace("||", " or ").replace("&&", " and ")


def test_sm90_mask_of_two_bounds_is_added_only_where_a_bound_cuts_the_block():
    # the varlen mask `row >= q_len or col >= kv_len ? -1e9 : 0` is zero where both bounds
    # hold for every consumer thread and register: the guard is the disjunction of each
    # bound's. Checked exhaustively from the generated text, as the causal guard above.
    k = tilelang.compile(varlen_attention(), target=SM90)
    assert any("is added only in the steps where it can change a score" in r for r in k.get_remarks()), \
        k.get_remarks()
    loop = consumer_loop(k.get_kernel_source())
    loop = loop[loop.index("for (int32_t k"):]
    guard = re.search(r"if \((.*)\) \{\n\s*#pragma unroll\n\s*for \(int32_t (l_\d+) = 0; \2 < 32;", loop)
    mask = re.search(r"s\[(l_\d+)\] = \(s\[\1\] \+ \((.*) \? -1000000000\.0f : 0\.0f\)\);", loop)
    assert guard and mask, loop
    reg, guard_expr, cond_expr = mask.group(1), c_to_python(guard.group(1)), c_to_python(mask.group(2))
    assert " or " in guard_expr, guard_expr
    skipped = 0
    for q_len, kv_len in [(200, 300), (256, 512), (128, 64), (129, 65)]:
        for bx in range(2):
            for k_1 in range(1, -(-kv_len // 64)):
                env = {"bx": bx, "k_1": k_1, "q_len": q_len, "kv_len": kv_len}
                if eval(guard_expr, dict(env)):
                    continue
                skipped += 1
                for tx in range(256):
                    for r in range(32):
                        assert not eval(cond_expr, {**env, "tx": tx, reg: r}), (q_len, kv_len, bx, k_1, tx, r)
    assert skipped >= 10
