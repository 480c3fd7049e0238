"""T.get_cluster_dims / _size / _id / _ids / _extent / _extents: which cluster of the grid a
block belongs to, as plain arithmetic on the block indices (the same on every target). Each
block writes its answers and they are compared with the cluster tiling computed here; on the
CPU target in CI, and on CUDA (real clusters) under TILELANG_TEST_CUDA=1 (conftest.py)."""
import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import poison
from tilelang.errors import TileLangCompileError


def cluster_table(gx, gy, cluster_dims):
    """Each block (bx, by) writes: its cluster id along x and y, the cluster extents along x,
    y and z, the cluster size and the cluster dims (9 values)."""

    @T.prim_func
    def main(Out: T.Tensor((gy, gx, 9), "int32")):
        with T.Kernel(gx, gy, threads=32, cluster_dims=cluster_dims) as (bx, by):
            ids = T.get_cluster_ids()
            ext = T.get_cluster_extents()
            dims = T.get_cluster_dims()
            if T.get_thread_binding() == 0:
                Out[by, bx, 0] = ids[0]
                Out[by, bx, 1] = T.get_cluster_id(1)
                Out[by, bx, 2] = ext[0]
                Out[by, bx, 3] = ext[1]
                Out[by, bx, 4] = ext[2]
                Out[by, bx, 5] = T.get_cluster_size()
                Out[by, bx, 6] = dims[0]
                Out[by, bx, 7] = dims[1]
                Out[by, bx, 8] = dims[2]

    return main


def expected(gx, gy, dims):
    cx, cy, cz = dims
    out = np.zeros((gy, gx, 9), np.int32)
    for by in range(gy):
        for bx in range(gx):
            out[by, bx] = [bx // cx, by // cy, -(-gx // cx), -(-gy // cy), 1, cx * cy * cz, cx, cy, cz]
    return out


@pytest.mark.parametrize("gx,gy,cluster_dims,dims", [
    (8, 6, (2, 1, 1), (2, 1, 1)),
    (8, 6, (2, 3, 1), (2, 3, 1)),
    (4, 4, 4, (4, 1, 1)),  # an int is the x extent
    (6, 5, None, (1, 1, 1)),  # no clusters: every block its own
])
def test_cluster_queries_give_the_cluster_tiling(gx, gy, cluster_dims, dims):
    kernel = tilelang.compile(cluster_table(gx, gy, cluster_dims), target="cpu")  # (CUDA under TILELANG_TEST_CUDA)
    out = poison((gy, gx, 9), "int32")
    kernel(out)
    np.testing.assert_array_equal(out, expected(gx, gy, dims))


def test_cluster_id_along_an_unlaunched_dimension_is_zero():
    @T.prim_func
    def main(Out: T.Tensor((4, 2), "int32")):
        with T.Kernel(4, threads=1, cluster_dims=(2, 1, 1)) as bx:
            Out[bx, 0] = T.get_cluster_id(0)
            Out[bx, 1] = T.get_cluster_id(2)

    out = poison((4, 2), "int32")
    tilelang.compile(main, target="cpu")(out)
    np.testing.assert_array_equal(out, [[0, 0], [0, 0], [1, 0], [1, 0]])


def test_cluster_id_on_a_dynamic_grid():
    n = T.dynamic("n")

    @T.prim_func
    def main(Out: T.Tensor((n, 2), "int32")):
        with T.Kernel(n, threads=1, cluster_dims=(2, 1, 1)) as bx:
            Out[bx, 0] = T.get_cluster_id(0)
            Out[bx, 1] = T.get_cluster_extent(0)

    out = poison((6, 2), "int32")
    tilelang.compile(main, target="cpu")(out)
    np.testing.assert_array_equal(out, [[i // 2, 3] for i in range(6)])


def test_cluster_queries_name_a_bad_dimension():
    with pytest.raises(TileLangCompileError, match=r"T.get_cluster_id: dim must be 0, 1 or 2, got 3"):
        @T.prim_func
        def main(Out: T.Tensor((4,), "int32")):
            with T.Kernel(4, threads=1) as bx:
                Out[bx] = T.get_cluster_id(3)


def test_cluster_queries_outside_a_kernel_are_refused():
    with pytest.raises(TileLangCompileError, match=r"T.get_cluster_size must be used inside `with T.Kernel"):
        @T.prim_func
        def main(Out: T.Tensor((4,), "int32")):
            s = T.get_cluster_size()  # noqa: F841
            with T.Kernel(4, threads=1) as bx:
                Out[bx] = 0
