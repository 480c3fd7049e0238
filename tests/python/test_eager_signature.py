"""A @tilelang.jit function whose signature annotates its tensors (`A: T.Tensor[(128, 128),
T.float32]`) is an eager kernel whatever its body holds, here only a call of a @T.macro
that launches the kernel (upstream's test_jit2_many_annot); a function whose annotations are
plain Python types (`M: int`) still builds and returns a @T.prim_func."""
import numpy as np

import tilelang
import tilelang.language as T
from conftest import poison, rand


@T.macro
def _copy_tiles(A, B):
    M, N = A.shape
    with T.Kernel(T.ceildiv(M, 32), T.ceildiv(N, 32), threads=64) as (bx, by):
        T.copy(A[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32], B[bx * 32:bx * 32 + 32, by * 32:by * 32 + 32])


@tilelang.jit(target="cpu")
def copy_static(A: T.Tensor[[64, 96], T.float32], B: T.Tensor[[64, 96], T.float32]):
    _copy_tiles(A, B)


@tilelang.jit(target="cpu")
def scale_lazy(M: int, N: int, factor: float = 2.0):
    @T.prim_func
    def main(A: T.Tensor((M, N), T.float32), B: T.Tensor((M, N), T.float32)):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(M, N):
                B[i, j] = A[i, j] * factor

    return main


def test_signature_annotations_make_the_body_the_kernel(rng):
    assert not copy_static.is_lazy_mode()
    a = rand(rng, (64, 96))
    b = poison((64, 96))
    copy_static(a, b)
    np.testing.assert_array_equal(b, a)
    # its tensors' shapes are all in the signature: compiled without arguments
    assert "copy_static" in copy_static.get_kernel_source()


def test_python_type_annotations_keep_the_lazy_style(rng):
    assert scale_lazy.is_lazy_mode()
    kernel = scale_lazy(8, 4)
    a = rand(rng, (8, 4))
    b = poison((8, 4))
    kernel(a, b)
    np.testing.assert_array_equal(b, a * 2)
