"""T.PersistentTileScheduler: worker w of num_workers takes the tiles numbered w, w +
num_workers, ... of an M x N tile grid in upstream's order (clusters of cluster_size rows
first, then panels of swizzle_size tiles across the slow axis, each swept fast axis first).
Checked against a Python model of that order on whichever target the suite runs: which
worker wrote each tile, and on which of its iterations."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu


def model(m_tiles, n_tiles, workers, swizzle, column_major, cluster):
    """(worker, iteration) of each (m, n) of the clustered grid, in the documented order."""
    m = -(-m_tiles // cluster)
    fast, slow = (m, n_tiles) if column_major else (n_tiles, m)
    owner = {}
    for t in range(m * n_tiles):
        panel, within = divmod(t, fast * swizzle)
        first = panel * swizzle
        width = max(1, min(swizzle, slow - first))
        f, s = within // width, first + within % width
        mn = (f, s) if column_major else (s, f)
        owner[mn] = (t % workers, t // workers)
    return m, owner


def walk(m_tiles, n_tiles, workers, swizzle, column_major, cluster):
    m = -(-m_tiles // cluster)

    @T.prim_func
    def main(W: T.Tensor((m, n_tiles), "int32"), I: T.Tensor((m, n_tiles), "int32")):
        with T.Kernel(workers, threads=1) as (block_id,):
            sched = T.PersistentTileScheduler(m_tiles, n_tiles, num_workers=workers, swizzle_size=swizzle,
                                              column_major=column_major, cluster_size=cluster, name="sched")
            sched.init(block_id)
            while sched.valid():
                W[sched.m_idx, sched.n_idx] = block_id
                I[sched.m_idx, sched.n_idx] = sched.current_iter
                sched.next_tile()

    return main


@pytest.mark.parametrize("m_tiles, n_tiles, workers, swizzle, column_major, cluster", [
    (5, 3, 4, 1, True, 1), (5, 3, 4, 2, True, 1), (7, 5, 3, 3, False, 1), (6, 4, 5, 2, True, 2),
    (9, 2, 4, 4, False, 3)])
def test_each_worker_takes_its_tiles_in_upstreams_order(m_tiles, n_tiles, workers, swizzle, column_major, cluster):
    m, owner = model(m_tiles, n_tiles, workers, swizzle, column_major, cluster)
    w = np.full((m, n_tiles), -1, np.int32)
    it = np.full((m, n_tiles), -1, np.int32)
    compile_cpu(walk(m_tiles, n_tiles, workers, swizzle, column_major, cluster))(w, it)
    want_w = np.array([[owner[(i, j)][0] for j in range(n_tiles)] for i in range(m)])
    want_it = np.array([[owner[(i, j)][1] for j in range(n_tiles)] for i in range(m)])
    np.testing.assert_array_equal(w, want_w)
    np.testing.assert_array_equal(it, want_it)


def test_the_stateless_decoder_allocates_nothing(rng):
    @T.prim_func
    def main(M: T.Tensor((12,), "int32"), N: T.Tensor((12,), "int32")):
        with T.Kernel(12, threads=1) as (t,):
            sched = T.PersistentTileScheduler(4, 3, num_workers=12, swizzle_size=2, stateful=False)
            m, n = sched.coord(t)
            M[t] = m
            N[t] = n

    assert "alloc_var" not in main.script()
    got_m, got_n = np.full(12, -1, np.int32), np.full(12, -1, np.int32)
    compile_cpu(main)(got_m, got_n)
    _, owner = model(4, 3, 12, 2, True, 1)
    by_tile = {w: mn for mn, (w, _) in owner.items()}
    assert [(int(a), int(b)) for a, b in zip(got_m, got_n)] == [by_tile[t] for t in range(12)]
    with pytest.raises(Exception, match=r"stateful=False\) has no m_idx"):
        @T.prim_func
        def bad(M: T.Tensor((1,), "int32")):
            with T.Kernel(1, threads=1):
                sched = T.PersistentTileScheduler(4, 3, num_workers=1, stateful=False)
                M[0] = sched.m_idx

        tilelang.compile(bad, target="cpu")


def test_named_state_and_a_while_loop_in_the_script():
    script = walk(5, 3, 4, 2, True, 1).script()
    for name in ("sched_m_idx", "sched_n_idx", "sched_linear_idx", "sched_current_iter", "while"):
        assert name in script, script
