"""Fragments that no T.gemm constrains live in registers on CUDA (strip layouts).

Compile-only checks of the generated code (no GPU needed); the same kernels' results are
checked on the GPU by the suite's CUDA mode (TILELANG_TEST_CUDA=1), e.g. test_reduce_atomic.
"""
import tilelang
import tilelang.language as T


def compile_sm90(func):
    return tilelang.compile(func, target="cuda -arch=sm_90a")


def row_softmax_kernel(M, N, block_M, block_N, threads):
    @T.prim_func
    def main(X: T.Tensor((M, N), "bfloat16"), Y: T.Tensor((M, N), "bfloat16")):
        with T.Kernel(T.ceildiv(M, block_M), threads=threads) as bx:
            x = T.alloc_fragment((block_M, block_N), "float32")
            y = T.alloc_fragment((block_M, block_N), "bfloat16")
            mx = T.alloc_fragment((block_M,), "float32")
            s = T.alloc_fragment((block_M,), "float32")
            T.copy(X[bx * block_M, 0], x)
            T.reduce_max(x, mx, dim=1)
            for i, j in T.Parallel(block_M, block_N):
                x[i, j] = T.exp(x[i, j] - mx[i])
            T.reduce_sum(x, s, dim=1)
            for i, j in T.Parallel(block_M, block_N):
                y[i, j] = x[i, j] / s[i]
            T.copy(y, Y[bx * block_M, 0])

    return main


def test_elementwise_tiles_and_row_vectors_are_registers():
    k = compile_sm90(row_softmax_kernel(64, 256, 4, 256, 128))
    remarks = "\n".join(k.get_remarks())
    src = k.get_kernel_source()
    assert "fragment x: registers, layout strip(4x256, 128 threads, 32 per row, vec 8)" in remarks, remarks
    assert "fragment mx: registers, layout strip_rows(4" in remarks, remarks
    # 16-byte loads and stores, one warp per row: shuffles only, no shared memory at all.
    assert "tl::cast_copy<8>" in src and "tl::AllReduce<tl::MaxOp, 32>::run(" in src, src
    assert "tl_smem +" not in src and "__syncthreads" not in src, src
    assert k._cuda.resource_usage["spill_stores_bytes"] in (0, None)


def test_rows_split_over_warps_meet_in_shared_memory_behind_barriers():
    # One row over 256 threads: 8 warps per row fold their partials through shared memory.
    k = compile_sm90(row_softmax_kernel(64, 2048, 1, 2048, 256))
    src = k.get_kernel_source()
    remarks = "\n".join(k.get_remarks())
    assert "shared workspace across 8 warps" in remarks, remarks
    publish = src.index("_red[")
    fold = src.index("_red[", publish + 1)
    assert "__syncthreads" in src[publish:fold], src


def test_partial_element_access_keeps_the_tile_in_shared_memory():
    @T.prim_func
    def main(X: T.Tensor((64, 64), "float32"), Y: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as bx:
            x = T.alloc_fragment((64, 64), "float32")
            T.copy(X, x)
            for i in T.Parallel(64):
                Y[i] = x[i, 0]  # one column: not an element-wise use of the whole tile

    k = compile_sm90(main)
    assert "fragment x: kept in shared memory" in "\n".join(k.get_remarks())


def test_register_loop_with_cross_thread_exchange_gets_barriers():
    # Everything but the reduction workspace is in registers, so the k loop holds no
    # block-level work; the workspace is still read and written in it, which needs barriers.
    @T.prim_func
    def main(X: T.Tensor((8, 4096), "float16"), Y: T.Tensor((8,), "float32")):
        with T.Kernel(4, threads=128) as bx:
            x = T.alloc_fragment((2, 512), "float32")
            acc = T.alloc_fragment((2,), "float32")
            T.clear(acc)
            for k in T.serial(8):
                T.copy(X[bx * 2, k * 512], x)
                T.reduce_sum(x, acc, dim=1, clear=False)
            T.copy(acc, Y[bx * 2])

    src = compile_sm90(main).get_kernel_source()
    loop = src[src.index("for (int32_t k"):]
    assert loop.count("__syncthreads") >= 2, src
