"""A pipelined loop whose loads and GEMM sit under `if mask[...]:` (upstream's block-sparse
GEMM): the float64 answer on whichever target the suite runs, and on sm_90a, from the generated
code without a GPU, the producer warpgroup loading only the tiles the mask keeps (a skipped tile
still completes its stage with a bare arrival) while the consumers skip their GEMM."""
import numpy as np
import pytest

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison


def block_sparse_gemm(M, N, K, bm=64, bn=64, bk=32, stages=2, threads=128, guard_on_shared=False):
    mask_shape = (M // bm, N // bn, K // bk)

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), Mask: T.Tensor(mask_shape, "bool"),
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(N // bn, M // bm, threads=threads) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            m_s = T.alloc_shared((K // bk,), "bool")
            acc = T.alloc_fragment((bm, bn), "float32")
            for i in T.Parallel(K // bk):
                m_s[i] = Mask[by, bx, i]
            T.clear(acc)
            for k in T.Pipelined(K // bk, num_stages=stages):
                if (m_s[k] if guard_on_shared else Mask[by, bx, k]):
                    T.copy(A[by * bm, k * bk], A_s)
                    T.copy(B[k * bk, bx * bn], B_s)
                    T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * bm, bx * bn])

    return main, mask_shape


def reference(a, b, mask, bm, bn, bk):
    M, N = a.shape[0], b.shape[1]
    c = np.zeros((M, N))
    for i in range(M // bm):
        for j in range(N // bn):
            for k in range(a.shape[1] // bk):
                if mask[i, j, k]:
                    c[i * bm:(i + 1) * bm, j * bn:(j + 1) * bn] += (
                        f64(a[i * bm:(i + 1) * bm, k * bk:(k + 1) * bk]) @ f64(b[k * bk:(k + 1) * bk, j * bn:(j + 1) * bn]))
    return c


EVERY_STEP = {"tl.ws_skip_masked_steps": False}  # the trip count's stages, bare arrivals


@pytest.mark.parametrize("stages, configs", [(1, None), (2, None), (3, None), (2, EVERY_STEP), (3, EVERY_STEP)])
def test_block_sparse_gemm_matches_float64(stages, configs):
    func, mask_shape = block_sparse_gemm(128, 128, 256, stages=stages)
    rng = np.random.default_rng(stages)
    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 128)).astype(np.float16)
    mask = rng.random(mask_shape) > 0.5
    mask[0, 0, :] = False  # a tile with nothing to add
    mask[1, 1, :] = True
    c = poison((128, 128))
    compile_cpu(func, pass_configs=configs)(a, b, mask, c)
    assert_close(c, reference(a, b, mask, 64, 64, 32), dtype="float16")


def _roles(code):
    """(producer, consumer) parts of a warp-specialized kernel's code."""
    return (code[code.index("tl::warpgroup_reg_dealloc"):code.index("} else {\n    tl::warpgroup_reg_alloc")],
            code[code.index("tl::warpgroup_reg_alloc"):])


def _step_counter(role):
    """The name of a role's counter of kept steps, checked to count up."""
    import re

    name = re.search(r"int32_t (tl_ws_step\w*) = 0;", role).group(1)
    assert f"{name} = ({name} + 1);" in role, role
    return name


def _hopper(func, configs=None):
    from tilelang import _tl
    lowered, remarks, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a", **(configs or {})}, False)
    return _tl.codegen_cuda(lowered).code, list(remarks)


def test_skipped_k_tiles_can_take_no_stage():
    """tl.ws_skip_masked_steps (on by default): both roles count the steps the mask keeps and
    take stages and phases from that count, so a masked k-tile costs no barrier handshake
    (upstream's order)."""
    code, remarks = _hopper(block_sparse_gemm(128, 128, 256)[0])
    assert any("the k-tiles its guard skips take no stage" in r for r in remarks), remarks
    producer, consumer = _roles(code)
    for role in (producer, consumer):
        name = _step_counter(role)
        assert f"tl::floormod({name}, 2)" in role, role  # the stage (2 stages) from the count, not from k
    assert "tl::mbarrier_arrive((&tl_ws_bars[(k & 1)]));" not in producer, producer  # no bare arrivals
    # with the key off: the trip count's stages, a bare arrival for a masked tile
    code, _ = _hopper(block_sparse_gemm(128, 128, 256)[0], {"tl.ws_skip_masked_steps": "0"})
    assert "tl_ws_step" not in code


def test_producer_skips_the_loads_the_mask_drops():
    code, remarks = _hopper(block_sparse_gemm(128, 128, 256)[0], {"tl.ws_skip_masked_steps": "0"})
    assert any("warp-specialized" in r and "2 copies with TMA" in r for r in remarks), remarks
    producer = code[code.index("tl_ws_bars[((k & 1) + 2)]"):code.index("} else {\n    tl::warpgroup_reg_alloc")]
    # the expect-tx and the loads under the mask; otherwise a bare arrival on the full barrier
    assert "if (Mask[" in producer and "tl::mbarrier_arrive_expect_tx(" in producer, producer
    assert "} else {" in producer and "tl::mbarrier_arrive((&tl_ws_bars[(k & 1)]));" in producer, producer
    consumer = code[code.index("tl::warpgroup_reg_alloc"):]
    assert "if (Mask[" in consumer and "gemm_ss_wgmma" in consumer


def test_a_guard_on_a_tile_the_kernel_writes_is_not_hoisted():
    """The producer cannot read what the consumers wrote: such a loop is not specialized."""
    code, remarks = _hopper(block_sparse_gemm(128, 128, 256, guard_on_shared=True)[0])
    assert not any("warp-specialized," in r for r in remarks), remarks


def test_a_tile_also_used_outside_the_guard_is_not_hoisted():
    """`if mask: copy A_s; gemm` then an unconditional read of A_s: in a skipped iteration the
    program reads the last tile it loaded, which a pipeline stage would not hold. Such loops
    keep their loads under the guard (no specialization), and the answer is unchanged."""
    M = N = 64
    K, bk = 128, 32

    @T.prim_func
    def main(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), Mask: T.Tensor((K // bk,), "bool"),
             C: T.Tensor((M, N), "float32"), Last: T.Tensor((K // bk, M, bk), "float16")):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((M, bk), "float16")
            B_s = T.alloc_shared((bk, N), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            T.clear(acc)
            T.clear(A_s)
            for k in T.Pipelined(K // bk, num_stages=2):
                if Mask[k]:
                    T.copy(A[0, k * bk], A_s)
                    T.copy(B[k * bk, 0], B_s)
                    T.gemm(A_s, B_s, acc)
                T.copy(A_s, Last[k, 0, 0])
            T.copy(acc, C)

    code, remarks = _hopper(main)
    assert not any("warp-specialized," in r for r in remarks), remarks
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    mask = np.array([True, False, True, False])
    c, last = poison((M, N)), poison((K // bk, M, bk), "float16")
    compile_cpu(main)(a, b, mask, c, last)
    assert_close(c, reference(a, b, mask.reshape(1, 1, -1), M, N, bk), dtype="float16")
    want_last = np.stack([a[:, 0:32], a[:, 0:32], a[:, 64:96], a[:, 64:96]])
    np.testing.assert_array_equal(last, want_last)


def block_sparse_two_gemms(seq=256, d=64, bm=64, bn=64):
    """Upstream's block-sparse attention, without the softmax: the block mask is copied into a
    tile before a one-stage loop whose body runs under `if block_mask[k]:`, K feeds the first
    GEMM and V the second. O[rows] = sum over kept k of half(Q K_k^T) V_k."""
    nb = seq // bn

    @T.prim_func
    def main(Q: T.Tensor((seq, d), "float16"), K: T.Tensor((seq, d), "float16"), V: T.Tensor((seq, d), "float16"),
             Mask: T.Tensor((seq // bm, nb), "bool"), O: T.Tensor((seq, d), "float32")):
        with T.Kernel(seq // bm, threads=128) as bx:
            Q_s = T.alloc_shared((bm, d), "float16")
            K_s = T.alloc_shared((bn, d), "float16")
            V_s = T.alloc_shared((bn, d), "float16")
            block_mask = T.alloc_fragment((nb,), "bool")
            s = T.alloc_fragment((bm, bn), "float32")
            s_cast = T.alloc_fragment((bm, bn), "float16")
            o = T.alloc_fragment((bm, d), "float32")
            T.copy(Q[bx * bm, 0], Q_s)
            T.copy(Mask[bx, :], block_mask)
            T.clear(o)
            for k in T.Pipelined(nb, num_stages=1):
                if block_mask[k] != 0:
                    T.copy(K[k * bn, 0], K_s)
                    T.clear(s)
                    T.gemm(Q_s, K_s, s, transpose_B=True)
                    T.copy(s, s_cast)
                    T.copy(V[k * bn, 0], V_s)
                    T.gemm(s_cast, V_s, o)
            T.copy(o, O[bx * bm, 0])

    return main


def test_a_mask_copied_into_a_tile_is_read_by_the_producer_from_its_tensor():
    """The consumers copy the mask into block_mask; the producer, which does not run that
    copy, reads the same elements from Mask. K and V get barriers of their own (one stage:
    V's load overlaps the first GEMM, the next K's the second), as upstream does."""
    code, remarks = _hopper(block_sparse_two_gemms())
    assert any("warp-specialized, 1 stages" in r and "2 mbarrier full/empty pair(s)" in r for r in remarks), remarks
    producer, _ = _roles(code)
    assert "Mask[" in producer and "block_mask[" not in producer, producer
    # with ws_skip_masked_steps off the consumers keep reading their own tile
    code, _ = _hopper(block_sparse_two_gemms(), {"tl.ws_skip_masked_steps": "0"})
    _, consumer = _roles(code)
    assert "block_mask[" in consumer, consumer


def test_two_groups_under_one_mask_count_their_steps():
    """K and V, each with a barrier pair, under the one `if block_mask[k]:`: both roles count
    the steps the mask keeps and take both groups' stages and phases from the count, so a
    masked k-tile costs no handshake on either pair; the consumers read the mask from its
    tensor as the producer does, and their copy of it into the tile (never read now) is gone."""
    code, remarks = _hopper(block_sparse_two_gemms())
    assert any("the k-tiles its guard skips take no stage" in r for r in remarks), remarks
    producer, consumer = _roles(code)
    for role in (producer, consumer):
        name = _step_counter(role)
        # one stage: both pairs' phases from the count, none from k
        assert role.count(f"tl::floormod(({name} + 1), 2)" if role is producer else f"tl::floormod({name}, 2)") == 2, role
        assert "(k & 1)" not in role and "(k_1 & 1)" not in role, role
    assert "tl::mbarrier_arrive((&tl_ws_bars[0]))" not in producer, producer  # no bare arrivals
    assert "block_mask" not in consumer and "Mask[" in consumer, consumer


@pytest.mark.parametrize("pattern", ["random", "none", "all"])
def test_block_sparse_two_gemms_match_float64(pattern):
    import tilelang

    rng = np.random.default_rng(23)
    q, k, v = (rng.standard_normal((256, 64)).astype(np.float16) * np.float16(0.25) for _ in range(3))
    mask = {"random": rng.random((4, 4)) > 0.5, "none": np.zeros((4, 4), bool), "all": np.ones((4, 4), bool)}[pattern]
    out = poison((256, 64))
    tilelang.compile(block_sparse_two_gemms())(q, k, v, mask, out)
    want = np.zeros((256, 64))
    for i in range(4):
        for j in range(4):
            if mask[i, j]:
                s = (f64(q[i * 64:(i + 1) * 64]) @ f64(k[j * 64:(j + 1) * 64]).T).astype(np.float16)
                want[i * 64:(i + 1) * 64] += f64(s) @ f64(v[j * 64:(j + 1) * 64])
    np.testing.assert_allclose(out, want, rtol=2e-2, atol=2e-2)
