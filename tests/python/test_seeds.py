"""The example programs of the seed articles, as written there (only sizes and target differ)."""
import numpy as np

import tilelang
import tilelang.language as T
from conftest import assert_close, f64, poison, rand

# ---- seed 000: @T.prim_func with T.Buffer parameters, tilelang.compile(..., target=...)
# Ragged sizes (not multiples of the 128/128/32 tiles) exercise the edge clipping.
M, N, K = 200, 136, 72
BLOCK_M, BLOCK_N, BLOCK_K = 128, 128, 32


@T.prim_func
def matmul_kernel(
    A: T.Buffer((M, K), "float16"),
    B: T.Buffer((K, N), "float16"),
    C: T.Buffer((M, N), "float16"),
):
    with T.Kernel(T.ceildiv(N, BLOCK_N), T.ceildiv(M, BLOCK_M), threads=128) as (bx, by):
        A_shared = T.alloc_shared((BLOCK_M, BLOCK_K), "float16")
        B_shared = T.alloc_shared((BLOCK_K, BLOCK_N), "float16")
        C_local = T.alloc_fragment((BLOCK_M, BLOCK_N), "float32")

        T.clear(C_local)

        for k in T.Pipelined(T.ceildiv(K, BLOCK_K), num_stages=2):
            T.copy(A[by * BLOCK_M : (by + 1) * BLOCK_M, k * BLOCK_K : (k + 1) * BLOCK_K], A_shared)
            T.copy(B[k * BLOCK_K : (k + 1) * BLOCK_K, bx * BLOCK_N : (bx + 1) * BLOCK_N], B_shared)
            T.gemm(A_shared, B_shared, C_local)

        T.copy(C_local, C[by * BLOCK_M : (by + 1) * BLOCK_M, bx * BLOCK_N : (bx + 1) * BLOCK_N])


def test_seed_prim_func_buffer_matmul(rng):
    compiled_kernel = tilelang.compile(matmul_kernel, target="cpu")
    a = rand(rng, (M, K), "float16")
    b = rand(rng, (K, N), "float16")
    c = poison((M, N), "float16")
    assert compiled_kernel(a, b, c) is None
    assert_close(c, f64(a) @ f64(b), "float16")
    src = compiled_kernel.get_kernel_source()
    assert isinstance(src, str) and "matmul_kernel" in src


# ---- seed 003: eager style, several annotations on one line with `;`
@tilelang.jit
def matmul(A, B, block_M=128, block_N=128, block_K=32):
    M, N, K = T.const("M, N, K")
    A: T.Tensor((M, K), T.float16); B: T.Tensor((K, N), T.float16)  # noqa: E702
    C = T.empty((M, N), T.float16)
    with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=128) as (bx, by):
        A_s, B_s = T.alloc_shared((block_M, block_K), T.float16), T.alloc_shared((block_K, block_N), T.float16)
        C_l = T.alloc_fragment((block_M, block_N), T.float32)
        T.clear(C_l)
        for k in T.Pipelined(T.ceildiv(K, block_K), num_stages=3):
            T.copy(A[by*block_M, k*block_K], A_s)
            T.copy(B[k*block_K, bx*block_N], B_s)
            T.gemm(A_s, B_s, C_l)
        T.copy(C_l, C[by*block_M, bx*block_N])
    return C


def test_seed_eager_matmul(rng):
    a = rand(rng, (150, 70), "float16")
    b = rand(rng, (70, 130), "float16")
    c = matmul(a, b)
    assert c.shape == (150, 130) and c.dtype == np.float16
    assert_close(c, f64(a) @ f64(b), "float16")
    # .compile with the T.const values and other block sizes, then call with tensors
    kernel = matmul.compile(M=40, N=24, K=52, block_M=16, block_N=16, block_K=16)
    a2, b2 = rand(rng, (40, 52), "float16"), rand(rng, (52, 24), "float16")
    assert_close(kernel(a2, b2), f64(a2) @ f64(b2), "float16")
    assert "A_s" in kernel.get_kernel_source()
    # the same shapes again: the in-process cache returns the same kernel object
    assert matmul.compile(M=40, N=24, K=52, block_M=16, block_N=16, block_K=16) is kernel
