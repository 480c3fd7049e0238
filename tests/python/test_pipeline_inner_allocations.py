"""A T.Pipelined body that allocates its own tiles (upstream's reducer GEMV): a fragment that
layout inference keeps in shared memory, loaded from global memory in the body, is not staged
by the pipeline (its prologue load would run before the tile exists: an internal compiler
error in code generation before); the answer is numpy's on whichever target the suite runs."""
import numpy as np

import tilelang.language as T
from conftest import assert_close, compile_cpu, f64, poison


def reducer_gemv(M=256, N=256, bm=128, bn=128):
    @T.prim_func
    def main(a: T.Tensor((M, N), "float16"), x: T.Tensor((N,), "float16"), o: T.Tensor((M,), "float32")):
        with T.Kernel(M // bm, threads=256) as bx:
            acc = T.alloc_reducer(bm, "float32", replication="all")
            T.clear(acc)
            for k in T.Pipelined(N // bn, num_stages=2):
                a_s = T.alloc_shared((bm, bn), "float16")
                T.copy(a[bx * bm, k * bn], a_s)
                a_f = T.alloc_fragment((bm, bn), "float16")
                T.copy(a_s, a_f)
                x_f = T.alloc_fragment(bn, "float16")
                T.copy(x[k * bn], x_f)
                for i, j in T.Parallel(bm, bn):
                    acc[i] += a_f[i, j] * x_f[j]
            T.finalize_reducer(acc)
            T.copy(acc, o[bx * bm])

    return main


def test_reducer_gemv_with_tiles_allocated_in_the_loop():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 256)).astype(np.float16)
    x = rng.standard_normal(256).astype(np.float16)
    o = poison((256,))
    compile_cpu(reducer_gemv())(a, x, o)
    assert_close(o, f64(a) @ f64(x), dtype="float16")


def test_reducer_gemv_generates_cuda():
    from tilelang import _tl
    # sm_80: a cp.async pipeline of a_s alone; sm_90a: a TMA producer warpgroup loads it (the
    # tiles allocated in the body are hoisted before the loop, which stays at the top level)
    for arch, pipeline in (("sm_80", "cp.async pipeline over 1 copies"),
                           ("sm_90a", "warp-specialized, 2 stages; a producer warpgroup loads 1 copies with TMA")):
        lowered, remarks, _ = _tl.lower_cuda(reducer_gemv().node, {"tl.target_arch": arch}, False)
        code = _tl.codegen_cuda(lowered).code
        assert "x_f" in code and any(pipeline in r for r in remarks), remarks
