"""compile_flags written for nvcc (upstream builds with nvcc; its examples pass -O3,
-Wno-..., --expt-relaxed-constexpr, --ptxas-options=-v,--register-usage-level=10): the
in-process compiler takes what it has a form of, and says which flags it ignored."""
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _in_process_flags, _search_dirs

HAVE_NVCC, _ = _tl.find_cuda_compiler(_search_dirs())


def test_nvcc_only_flags_are_dropped_with_a_remark():
    remarks = []
    flags = _in_process_flags(["-O3", "-Wno-deprecated-declarations", "-w", "--expt-relaxed-constexpr",
                               "--expt-extended-lambda", "-DNDEBUG", "-U__CUDA_NO_HALF_OPERATORS__",
                               "--ptxas-options=-v,--register-usage-level=10", "-Xptxas=-O3"], remarks)
    assert flags == ["-w", "-DNDEBUG", "-U__CUDA_NO_HALF_OPERATORS__", "--ptxas-options=-v",
                     "--ptxas-options=--register-usage-level=10", "-Xptxas=-O3"]
    dropped = [r.split(":")[0] for r in remarks]
    assert dropped == ["compile flag -O3", "compile flag -Wno-deprecated-declarations",
                       "compile flag --expt-relaxed-constexpr", "compile flag --expt-extended-lambda"]
    assert all("ignored" in r for r in remarks)


@pytest.mark.skipif(not HAVE_NVCC, reason="no CUDA compiler")
def test_upstream_example_flags_compile():
    @T.prim_func
    def add_one(A: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128):
            tx = T.get_thread_binding()
            A[tx] = A[tx] + 1.0

    kernel = tilelang.compile(add_one, target="cuda -arch=sm_90a",
                              compile_flags=["-O3", "-Wno-deprecated-declarations", "--expt-relaxed-constexpr",
                                             "--expt-extended-lambda", "--ptxas-options=-v,--register-usage-level=10",
                                             "-DNDEBUG"])
    assert any(r.startswith("compile flag -O3:") for r in kernel.get_remarks())
