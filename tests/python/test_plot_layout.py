"""tilelang.tools: the register layouts the CUDA lowering chooses (fragment_layouts, no
GPU needed) and layout pictures (plot_layout: SVG always, PNG/PDF with matplotlib)."""
import pytest

import tilelang.language as T
from tilelang.layout import Fragment, Layout
from tilelang.tools import fragment_layouts, plot_layout


def _gemm_with_row_max(M=128, N=128, K=64):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float32"),
             R: T.Tensor((M,), "float32")):
        with T.Kernel(N // 64, M // 64, threads=128) as (bx, by):
            a = T.alloc_shared((64, 32), "float16")
            b = T.alloc_shared((32, 64), "float16")
            c = T.alloc_fragment((64, 64), "float32")
            m = T.alloc_fragment((64,), "float32")
            T.clear(c)
            for ko in T.Pipelined(K // 32, num_stages=2):
                T.copy(A[by * 64, ko * 32], a)
                T.copy(B[ko * 32, bx * 64], b)
                T.gemm(a, b, c)
            T.reduce_max(c, m, dim=1)
            T.copy(c, C[by * 64, bx * 64])
            T.copy(m, R[by * 64:(by + 1) * 64])

    return gemm


def test_fragment_layouts_follow_the_mma_accumulator_layout():
    layouts = fragment_layouts(_gemm_with_row_max(), "cuda -arch=sm_80")
    assert set(layouts) == {"c", "m"}
    c = layouts["c"]
    assert c.get_input_shape() == [64, 64] and c.num_threads == 128
    # PTX ISA, mma.m16n8k16 accumulators: lane l holds rows l/4 and l/4 + 8 and columns
    # 2(l % 4), 2(l % 4) + 1 of each 16x8 tile (here the first warp's first tile)
    for lane in range(32):
        for r in (lane // 4, lane // 4 + 8):
            for col in (2 * (lane % 4), 2 * (lane % 4) + 1):
                assert c.thread_of(r, col) == lane
    # every element is held by exactly one thread, every register holds one element
    seen = {(c.thread_of(i, j), c.local_of(i, j)) for i in range(64) for j in range(64)}
    assert len(seen) == 64 * 64 and all(c.replicas_of(i, j) == 1 for i in range(64) for j in range(64))
    # the row maxima: each row's value is held by the threads that hold parts of the row
    m = layouts["m"]
    assert m.get_input_shape() == [64, 1]
    row_threads = {i: {c.thread_of(i, j) for j in range(64)} for i in range(64)}
    for i in range(64):
        assert m.thread_of(i) in row_threads[i]
        assert m.replicas_of(i) == len(row_threads[i])


@pytest.mark.cpu_target  # the suite's CUDA mode reads target "cpu" as CUDA
def test_fragment_layouts_needs_a_cuda_target():
    with pytest.raises(ValueError, match="CUDA target"):
        fragment_layouts(_gemm_with_row_max(), "cpu")


def test_plot_layout_writes_an_svg_of_a_fragment(tmp_path):
    f = Fragment((4, 8), forward_thread_fn=lambda i, j: (i // 2) * 4 + j // 2,
                 forward_index_fn=lambda i, j: (i % 2) * 2 + j % 2)
    paths = plot_layout(f, str(tmp_path), "frag", formats="svg")
    text = open(paths[0]).read()
    assert paths == [str(tmp_path / "frag.svg")] and text.startswith("<svg")
    assert text.count("<rect") == 32 and ">T7<" in text and ">L3<" in text


def test_plot_layout_of_a_compiled_fragment_and_of_a_layout(tmp_path):
    c = fragment_layouts(_gemm_with_row_max(), "cuda -arch=sm_80")["c"]
    text = open(plot_layout(c, str(tmp_path), "c", formats=["svg"])[0]).read()
    assert text.count("<rect") == 64 * 64 and "mma_acc(64x64" in text
    lay = Layout((4, 4), forward_fn=lambda i, j: [j, i])  # a transpose
    text = open(plot_layout(lay, str(tmp_path), "t", formats="svg")[0]).read()
    assert text.count("<rect") == 16 and ">3, 1<" in text


def test_plot_layout_png_and_pdf_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    f = Fragment((2, 4), forward_thread_fn=lambda i, j: j, forward_index_fn=lambda i, j: i)
    for path in plot_layout(f, str(tmp_path), "f", formats="all"):
        assert open(path, "rb").read(4) in (b"%PDF", b"\x89PNG", b"<svg")


def test_plot_layout_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="formats"):
        plot_layout(Fragment((2, 2), forward_thread_fn=lambda i, j: 0), str(tmp_path), formats="jpeg")
    with pytest.raises(TypeError, match="T.Layout or T.Fragment"):
        plot_layout([[0, 1]], str(tmp_path), formats="svg")
