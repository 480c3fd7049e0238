"""Programmatic dependent launch: a kernel with T.pdl_sync waits for the previous grid itself
(griddepcontrol.wait), so it is launched with programmatic stream serialization allowed and may
start while the previous kernel in the stream still runs; T.pdl_trigger lets it. The launch
choice is read from the generated code without a GPU; results are checked against numpy on
whichever target the suite runs, and back to back on the GPU's stream where there is one."""
import re
import shutil

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from conftest import compile_cpu
from tilelang import _tl


def producer(n, block=128):
    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    B[bx * block + i] = A[bx * block + i] * 2.0
            T.pdl_trigger()

    return main


def consumer(n, block=128):
    @T.prim_func
    def main(B: T.Tensor((n,), "float32"), C: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=block) as bx:
            T.pdl_sync()
            for i in T.Parallel(block):
                if bx * block + i < n:
                    C[bx * block + i] = B[bx * block + i] + 1.0

    return main


def _cuda_source(func):
    lowered, _, _ = _tl.lower_cuda(func.node, {"tl.target_arch": "sm_90a"}, False)
    return _tl.codegen_cuda(lowered)


def test_only_a_kernel_that_waits_is_launched_programmatically():
    waits, triggers = _cuda_source(consumer(1000)), _cuda_source(producer(1000))
    assert waits.programmatic_launch and "tl::cudaGridDependencySynchronize();" in waits.code
    # the trigger alone does not change how its own kernel is launched
    assert not triggers.programmatic_launch
    assert "tl::cudaTriggerProgrammaticLaunchCompletion();" in triggers.code


def test_exported_launcher_launches_it_programmatically(tmp_path):
    import os
    import subprocess

    from tilelang.jit.cuda_backend import _search_dirs

    if not _tl.find_cuda_compiler(_search_dirs())[0]:
        pytest.skip("needs a CUDA compiler (NVRTC)")
    waits = tilelang.compile(consumer(1000), target="cuda -arch=sm_90a")
    launcher_path = waits.export_library(str(tmp_path / "waits.cubin"))["launcher"]
    launcher = open(launcher_path).read()
    assert "CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION" in launcher and "cuLaunchKernelEx(" in launcher
    plain = tilelang.compile(producer(1000), target="cuda -arch=sm_90a")
    paths = plain.export_library(str(tmp_path / "plain.cubin"))
    assert "cuLaunchKernelEx(" not in open(paths["launcher"]).read()
    include = next((os.path.join(r, "include") for r in (os.environ.get("CUDA_HOME"), "/usr/local/cuda")
                    if r and os.path.exists(os.path.join(r, "include", "cuda.h"))), None)
    cc = os.environ.get("CC", "cc")
    if include is None or not shutil.which(cc):
        return
    subprocess.run([cc, "-Wall", "-Werror", "-c", launcher_path, f"-I{include}", f"-I{tmp_path}",
                    "-o", str(tmp_path / "w.o")], check=True, capture_output=True)


def test_results_match_numpy():
    n = 1000
    a = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    b, c = np.full(n, np.nan, np.float32), np.full(n, np.nan, np.float32)
    compile_cpu(producer(n))(a, b)
    compile_cpu(consumer(n))(b, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


def test_back_to_back_on_the_stream():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    n = 1 << 20
    first, second = tilelang.compile(producer(n), target="cuda"), tilelang.compile(consumer(n), target="cuda")
    # sm_90+ (griddepcontrol): the kernel that waits may start early; before, none does
    hopper = int(re.match(r"sm_(\d+)", second._cuda.arch).group(1)) >= 90
    assert second._cuda._load().programmatic_launch == hopper and not first._cuda._load().programmatic_launch
    b, c = torch.empty(n, device="cuda"), torch.empty(n, device="cuda")
    # each consumer reads what the producer just wrote, with no synchronization between them
    for step in range(20):
        a = torch.full((n,), float(step), device="cuda")
        first(a, b)
        second(b, c)
        assert torch.equal(c, torch.full_like(c, 2.0 * step + 1.0)), step
