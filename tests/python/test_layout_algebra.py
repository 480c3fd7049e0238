"""The layout algebra of tilelang.layout (Layout / Fragment: output shape, linearized index,
repeat, expand, equality; the bank swizzles), each checked against brute-force evaluation of
the index functions on every point."""
import itertools
import random

import numpy as np
import pytest

from tilelang import _ffi_api
from tilelang.layout import (Fragment, Layout, make_full_bank_swizzled_layout, make_half_bank_swizzled_layout,
                             make_linear_layout, make_quarter_bank_swizzled_layout, make_swizzled_layout)
from tilelang.tvm import arith, tirx


def points(shape):
    return itertools.product(*(range(d) for d in shape))


def table(layout):
    """{logical index: physical indices}, calling the layout on Python ints."""
    return {p: tuple(int(v) for v in layout(*p)) for p in points(layout.get_input_shape())}


def at(expr, point):
    """The value of an expression of the layouts' input variables (i0, i1, ...: shared by every
    layout, as upstream's placeholders are) at `point`."""
    return Layout([1] * len(point), lambda *idx: expr).map_forward_index(list(point))[0]


CASES = [
    ([8, 64], lambda i, j: i * 64 + j),
    ([2, 32], lambda i, j: [j, i]),
    ([64], lambda i: [i // 32, i % 32]),
    ([4, 6], lambda i, j: [j // 2, i, j % 2]),
    ([3, 5, 4], lambda i, j, k: [k, (j * 3 + i) % 15]),
]


@pytest.mark.parametrize("shape,fn", CASES)
def test_output_shape_and_linearized_index_match_brute_force(shape, fn):
    lay = Layout(shape, fn)
    t = table(lay)
    out_shape = list(np.array(list(t.values())).max(axis=0) + 1)
    assert lay.get_output_shape() == out_shape
    linear = lay.get_linearized_forward_index()
    for p, out in t.items():
        assert lay.map_forward_index(list(p)) == list(out)
        assert at(linear, p) == int(np.ravel_multi_index(out, out_shape))


@pytest.mark.parametrize("shape,fn", CASES)
def test_repeat_tiles_the_layout_with_a_leading_copy_index(shape, fn):
    base = Layout(shape, fn)
    bt = table(base)
    for dim in range(-len(shape), len(shape)):
        for factor in (2, 3):
            rep = base.repeat(dim=dim, factor=factor)
            d = dim % len(shape)
            assert rep.get_input_shape() == [s * factor if k == d else s for k, s in enumerate(shape)]
            for p, out in table(rep).items():
                inner = tuple(v % shape[k] if k == d else v for k, v in enumerate(p))
                assert out == (p[d] // shape[d],) + bt[inner]
            assert rep.get_output_shape() == [factor] + base.get_output_shape()
    assert base.repeat(dim=0, factor=1) is base


def test_repeat_and_expand_refuse_bad_arguments():
    atom = Layout([8, 64], lambda i, j: i * 64 + j)
    for dim, factor in ((0, 0), (0, -1), (2, 2), (-3, 2)):
        with pytest.raises(ValueError):
            atom.repeat(dim=dim, factor=factor)
        with pytest.raises(ValueError):
            _ffi_api.Layout_repeat(atom, dim, factor)  # the C++ core's own checks
    with pytest.raises(TypeError):
        atom.repeat(dim=0.5, factor=2)
    for bad in (0, [-1], [2, 0]):
        with pytest.raises(ValueError):
            atom.expand(bad)
    with pytest.raises(TypeError):
        atom.expand("4")
    assert atom.expand([]) is atom and atom.expand(()) is atom


@pytest.mark.parametrize("shape,fn", CASES)
def test_expand_forwards_the_leading_dimensions(shape, fn):
    base = Layout(shape, fn)
    bt = table(base)
    ex = base.expand([2, 3])
    assert ex.get_input_shape() == [2, 3] + shape
    for p, out in table(ex).items():
        assert out == p[:2] + bt[p[2:]]
    assert ex.get_output_shape() == [2, 3] + base.get_output_shape()


def test_is_equal_compares_the_maps_not_their_spelling():
    assert Layout([16, 8], lambda i, j: i * 8 + j).is_equal(Layout([16, 8], lambda a, b: b + a * 8))
    assert Layout([16, 8], lambda i, j: [i, j]).is_equal(Layout([16, 8], lambda i, j: [i * 1, j + 0]))
    # equal only on the domain: j // 8 is always 0 for j < 8
    assert Layout([16, 8], lambda i, j: i + j // 8).is_equal(Layout([16, 8], lambda i, j: i))
    # decided point by point where the simplifier cannot: XOR commutes
    assert Layout([8, 8], lambda i, j: [i, i ^ j]).is_equal(Layout([8, 8], lambda i, j: [i, j ^ i]))
    assert not Layout([32, 4], lambda i, j: i * 4 + j).is_equal(Layout([32, 4], lambda i, j: j * 4 + i))
    assert not Layout([32, 4], lambda i, j: [i, j]).is_equal(Layout([32, 4], lambda i, j: [j, i]))
    assert not Layout([32, 4], lambda i, j: i * 4 + j).is_equal(Layout([16, 8], lambda i, j: i * 8 + j))
    assert not Layout([32, 4], lambda i, j: tirx.const(0, "int32")).is_equal(Layout([32, 4], lambda i, j: i))
    assert not Layout([8, 8], lambda i, j: [i, i ^ j]).is_equal(Layout([8, 8], lambda i, j: [i, i | j]))


def test_random_layouts_repeat_and_expand_agree_with_brute_force():
    rng = random.Random(7)
    for _ in range(25):
        shape = [rng.choice([2, 3, 4, 8]) for _ in range(rng.choice([1, 2]))]
        a, b, c = rng.randint(1, 5), rng.randint(1, 3), rng.choice([2, 4])

        def fn(*idx, a=a, b=b, c=c):
            s = idx[0] * a + (idx[-1] // c) * b
            return [s, idx[-1] % c]

        lay = Layout(shape, fn)
        dim, factor = rng.randrange(len(shape)), rng.choice([2, 3])
        rep = lay.repeat(dim, factor).expand([2])
        bt = table(lay)
        for p, out in table(rep).items():
            q = p[1:]
            inner = tuple(v % shape[k] if k == dim else v for k, v in enumerate(q))
            assert out == (p[0], q[dim] // shape[dim]) + bt[inner]
        assert rep.is_equal(lay.repeat(dim, factor).expand(2))
        assert not rep.is_equal(lay.repeat(dim, factor).expand(3))


SWIZZLES = [(make_full_bank_swizzled_layout, 128), (make_half_bank_swizzled_layout, 64),
            (make_quarter_bank_swizzled_layout, 32)]


@pytest.mark.parametrize("make,width", SWIZZLES)
@pytest.mark.parametrize("dtype,rows,cols", [("float16", 8, 64), ("float16", 16, 128), ("float32", 8, 32),
                                             ("float8_e4m3fn", 16, 128)])
def test_bank_swizzles_are_the_hardware_patterns(make, width, dtype, rows, cols):
    buf = tirx.decl_buffer((rows, cols), dtype, name="S", scope="shared")
    lay = make(buf)
    elem = {"float16": 2, "float32": 4, "float8_e4m3fn": 1}[dtype]
    chunks = width // 16
    seen = set()
    for (i, j), (r, c) in table(lay).items():
        byte = (i * cols + j) * elem
        # CUTLASS's Swizzle<log2(chunks), 4, 3> on byte offsets: the 16-byte chunk number XOR
        # the 128-byte line number, in log2(chunks) bits
        want = byte ^ (((byte >> 7) & (chunks - 1)) << 4)
        assert (r * cols + c) * elem == want
        seen.add((r, c))
    assert len(seen) == rows * cols and all(0 <= r < rows and 0 <= c < cols for r, c in seen)


@pytest.mark.parametrize("make,width", SWIZZLES)
def test_stacked_tiles_take_the_expanded_2d_swizzle(make, width):
    layout2d = make(tirx.decl_buffer((8, 64), "float16", name="A2", scope="shared"))
    assert make(tirx.decl_buffer((2, 8, 64), "float16", name="A3", scope="shared")).is_equal(layout2d.expand([2]))
    assert make(tirx.decl_buffer((3, 2, 8, 64), "float16", name="A4", scope="shared")).is_equal(
        layout2d.expand([3, 2]))
    assert not make(tirx.decl_buffer((2, 8, 64), "float16", name="A3", scope="shared")).is_equal(
        make_linear_layout(tirx.decl_buffer((2, 8, 64), "float16", name="L", scope="shared")))


def test_make_swizzled_layout_picks_the_widest_swizzle_that_fits():
    wide = tirx.decl_buffer((8, 64), "float16", name="W", scope="shared")    # 128-byte rows
    narrow = tirx.decl_buffer((8, 16), "float16", name="N", scope="shared")  # 32-byte rows
    odd = tirx.decl_buffer((8, 12), "float16", name="O", scope="shared")     # 24-byte rows
    assert make_swizzled_layout(wide).is_equal(make_full_bank_swizzled_layout(wide))
    assert make_swizzled_layout(narrow).is_equal(make_quarter_bank_swizzled_layout(narrow))
    assert make_swizzled_layout(odd).is_equal(make_linear_layout(odd))


def test_fragment_constructors_and_equality():
    both = Fragment([32, 4], forward_fn=lambda i, j: (i, j))
    split = Fragment([32, 4], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: j)
    assert both.is_equal(split) and split.is_equal(both)
    assert not split.is_equal(Fragment([32, 4], forward_thread_fn=lambda i, j: i, forward_index_fn=lambda i, j: i))
    assert not split.is_equal(Fragment([32, 4], forward_thread_fn=lambda i, j: j * 32 + i,
                                       forward_index_fn=lambda i, j: j))
    assert not split.is_equal(Layout([32, 4], lambda i, j: j))  # a Fragment is not a Layout's equal
    assert split.get_thread_size() == 32 and split.map_forward_thread([5, 2]) == 5
    # replicated: the thread function takes the replica number; the thread size counts replicas
    rep4 = Fragment([32, 4], forward_thread_fn=lambda i, j, rep: i * 4 + rep, replicate=4)
    assert rep4.get_thread_size() == 128
    assert rep4.is_equal(Fragment([32, 4], forward_thread_fn=lambda a, b, r: r + a * 4, replicate=4))
    assert not rep4.is_equal(Fragment([32, 4], forward_thread_fn=lambda i, j, rep: i * 4 + rep, replicate=2))
    with pytest.raises(ValueError, match="forward_thread_fn"):
        Fragment([4, 4])


def test_arith_analyzer_proves_equal_expressions():
    a = Layout([2, 32], lambda i, j: [j, i]).get_linearized_forward_index()
    b = Layout([2, 32], lambda i, j: j * 2 + i).get_linearized_forward_index()
    an = arith.Analyzer()
    assert an.can_prove_equal(a, b)
    assert not an.can_prove_equal(a, b + 1)


def test_fragment_replicate_adds_thread_copies():
    from tilelang.layout import make_gemm_fragment_8x8

    base = make_gemm_fragment_8x8()
    two = base.replicate(2)
    assert two.replicate_count == 2 and two.get_thread_size() == 64
    want = Fragment([8, 8], forward_thread_fn=lambda i, j, rep: j // 2 + 4 * i + 32 * rep,
                    forward_index_fn=lambda i, j: [j % 2], replicate=2)
    assert two.is_equal(want) and not two.is_equal(base)
    four = two.replicate(2)  # replicas of replicas: numbered on
    assert four.get_thread_size() == 128
    assert four.is_equal(Fragment([8, 8], forward_thread_fn=lambda i, j, rep: j // 2 + 4 * i + 32 * rep,
                                  forward_index_fn=lambda i, j: [j % 2], replicate=4))
    assert base.replicate(1) is base
    with pytest.raises(ValueError):
        base.replicate(0)
    # tiling a replicated fragment onto more threads keeps its replicas
    tiled = two.repeat([2, 1], repeat_on_thread=True)
    assert tiled.get_thread_size() == 128 and tiled.replicate_count == 2
    for (i, j) in points([16, 8]):
        assert sorted(tiled._threads_at((i, j))) == sorted(t + 64 * (i // 8) for t in two._threads_at((i % 8, j)))


def test_swizzle_of_a_symbolic_tile_is_a_named_hint():
    import tilelang.language as T

    n = T.dynamic("n")

    class Tile:
        shape, dtype = (n, 64), "float16"

    lay = make_swizzled_layout(Tile())
    assert lay.kind == "swizzled" and lay.forward_fn is None


def test_an_expanded_layout_orders_a_global_tensor(rng):
    """A derived layout (expand of a transpose) as a global tensor's storage order: element
    (b, i, j) of Y is stored at [b, j, i] of a (2, 8, 4) array."""
    import tilelang.language as T
    from conftest import compile_cpu

    order = Layout((4, 8), lambda i, j: [j, i]).expand([2])

    @T.prim_func
    def main(X: T.Tensor((2, 4, 8), "float32"), Y: T.Tensor((2, 4, 8), "float32")):
        with T.Kernel(1, threads=32) as bx:
            T.annotate_layout({Y: order})
            for b, i, j in T.Parallel(2, 4, 8):
                Y[b, i, j] = X[b, i, j]

    x = rng.standard_normal((2, 4, 8)).astype(np.float32)
    y = np.full((2, 8, 4), np.nan, np.float32)  # the storage: the layout's output extents
    compile_cpu(main)(x, y.reshape(2, 4, 8))
    np.testing.assert_array_equal(y, x.transpose(0, 2, 1))


def _row_major(point, shape):
    flat = 0
    for i, extent in zip(point, shape):
        flat = flat * extent + i
    return flat


@pytest.mark.parametrize("shape,fn,new_shape", [
    ([8, 64], lambda i, j: i * 64 + j, [512]),
    ([4, 6], lambda i, j: [j // 2, i, j % 2], [2, 12]),
    ([3, 5, 4], lambda i, j, k: [k, (j * 3 + i) % 15], [60]),
    ([64], lambda i: [i // 32, i % 32], [4, 4, 4]),
])
def test_reshape_reads_the_new_indices_row_major(shape, fn, new_shape):
    lay = Layout(shape, fn)
    old = table(lay)
    old_points = list(points(shape))
    reshaped = lay.reshape(new_shape)
    assert reshaped.get_input_shape() == new_shape
    for p in points(new_shape):
        want = old[old_points[_row_major(p, new_shape)]]
        assert tuple(int(v) for v in reshaped(*p)) == want
        assert tuple(reshaped.map_forward_index(list(p))) == want  # (the traced, symbolic form)
    assert lay.reshape(shape) is lay


def test_fragment_reshape_keeps_each_elements_thread_and_register():
    frag = Fragment([8, 8], forward_thread_fn=lambda i, j, r: (i * 8 + j) // 4 + 16 * r, replicate=2,
                    forward_index_fn=lambda i, j: j % 4)
    flat = frag.reshape([64])
    for i, j in points([8, 8]):
        for r in range(2):
            assert flat.forward_thread_fn(i * 8 + j, r) == frag.forward_thread_fn(i, j, r)
        assert flat.map_forward_thread([i * 8 + j, 1]) == frag.map_forward_thread([i, j, 1])
        assert flat(i * 8 + j) == frag(i, j)
    assert flat.replicate_count == 2


def test_reshape_refuses_what_it_cannot_do():
    lay = Layout([8, 8], lambda i, j: [j, i])
    with pytest.raises(ValueError, match=r"shape \[60\] has 60 elements, but the layout's input shape \[8, 8\] has 64"):
        lay.reshape([60])
    with pytest.raises(NotImplementedError, match="a view of elements of another width"):
        lay.reshape([128], rescale_num=2, rescale_den=1)
    with pytest.raises(ValueError, match="rescale_num and rescale_den must be positive ints"):
        lay.reshape([64], rescale_num=0)
