"""Seeing inside the compiler: the IR after each pass and each pass's wall time, from
tilelang.lower(..., trace=True) and from TILELANG_DUMP_IR_DIR (CPU; CUDA lowering without a GPU)."""
import os

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl


def kernel_func(n=256, block=64):
    @T.prim_func
    def scale_add(X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, block), threads=64) as bx:
            t = T.alloc_shared((block,), "float32")
            T.copy(X[bx * block], t)
            for i in T.Parallel(block):
                Y[bx * block + i] = t[i] * 2.0 + 1.0

    return scale_add


CPU_PASSES = ["lower-buffer-views", "lower-ldmatrix-operands", "raise-parallel-copies", "check-target-features", "privatize-reducers",
              "normalize-role-branches", "stage-ws-pipelines",
              "expand-global-layout-tile-ops",
              "report-layout-annotations", "report-packed-tensors", "cpu-emulate-threads",
              "simplify", "check-tile-bounds", "guard-global-access", "apply-global-layouts", "shrink-tiles-to-tensors",
              "cpu-lower-gemm",
              "lower-tile-ops", "simplify", "contract-half-fma", "legalize-index-width"]
TILE_OPS_AT = CPU_PASSES.index("lower-tile-ops") + 1  # its number in the trace (0 is the input)


@pytest.mark.cpu_target  # the CPU pipeline's passes
def test_lower_trace_records_each_pass_with_its_ir_and_time():
    art = tilelang.lower(kernel_func(), target="cpu", trace=True)
    names = [r.name for r in art.trace]
    assert names[0] == "input" and names[1:] == CPU_PASSES
    assert [r.index for r in art.trace] == list(range(len(names)))
    assert all(r.ms >= 0 for r in art.trace) and sum(ms for _, ms in art.pass_timings) > 0
    # the input still has the tile copy; after lowering it is a loop
    assert "T.copy(" in art.trace[0].ir
    lowered = next(r for r in art.trace if r.name == "lower-tile-ops").ir
    assert "T.copy(" not in lowered and "for " in lowered
    text = art.format_trace(ir=True)
    assert f"[{TILE_OPS_AT:02d}] lower-tile-ops:" in text and "total:" in text
    # without trace=True nothing is recorded
    assert tilelang.lower(kernel_func(), target="cpu").trace == []


@pytest.mark.cpu_target  # the CPU pipeline's passes
def test_timings_come_from_the_cpp_pipeline():
    lowered, remarks, dumps, times = _tl.lower_cpu(kernel_func().node, {}, False, True)
    assert dumps == [] and [n for n, _ in times] == CPU_PASSES
    assert len(_tl.lower_cpu(kernel_func().node, {}, False)) == 3  # the old form is unchanged


@pytest.mark.cpu_target  # the CPU pipeline's passes
def test_dump_dir_gets_one_numbered_file_per_pass(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DUMP_IR_DIR", str(tmp_path))
    tilelang.lower(kernel_func(), target="cpu")
    sub = tmp_path / "scale_add-cpu"
    files = sorted(os.listdir(sub))
    assert files[0] == "00_input.py" and files[-1] == "timings.txt"
    assert files[1:-1] == [f"{i:02d}_{n}.py" for i, n in enumerate(CPU_PASSES, 1)]
    assert "IR after lower-tile-ops" in (sub / f"{TILE_OPS_AT:02d}_lower-tile-ops.py").read_text()
    timings = (sub / "timings.txt").read_text().splitlines()
    assert len(timings) == len(CPU_PASSES) + 1 and timings[-1].startswith("total")


@pytest.mark.cpu_target  # the CPU pipeline's passes
def test_dump_dir_also_applies_to_compiled_kernels(tmp_path, monkeypatch):
    monkeypatch.setenv("TILELANG_DUMP_IR_DIR", str(tmp_path / "dumps"))
    kernel = tilelang.compile(kernel_func(128), out_idx=[-1], target="cpu")
    x = np.arange(128, dtype=np.float32)
    np.testing.assert_array_equal(kernel(x), x * 2 + 1)
    assert (tmp_path / "dumps" / "scale_add-cpu" / f"{len(CPU_PASSES):02d}_legalize-index-width.py").exists()


def test_cuda_trace_without_a_gpu():
    art = tilelang.lower(kernel_func(), target="cuda -arch=sm_80", trace=True)
    names = [r.name for r in art.trace]
    assert names[0] == "input" and "cuda-bind-threads" in names and "cuda-insert-barriers" in names
    assert all(r.part == "" for r in art.trace)


@pytest.mark.cpu_target  # the CPU pipeline's passes
def test_upstream_pass_configs_dump_and_profile(tmp_path, monkeypatch, capfd):
    monkeypatch.delenv("TILELANG_DUMP_IR_DIR", raising=False)
    configs = {tilelang.PassConfigKey.TL_ENABLE_DUMP_IR: True, tilelang.PassConfigKey.TL_DUMP_IR_DIR: str(tmp_path),
               "tl.pass_profile": True}
    kernel = tilelang.compile(kernel_func(64), out_idx=[-1], target="cpu", pass_configs=configs)
    assert (tmp_path / "scale_add-cpu" / f"{TILE_OPS_AT:02d}_lower-tile-ops.py").exists()
    err = capfd.readouterr().err
    assert "pass profile of scale_add (cpu)" in err and "lower-tile-ops" in err
    assert not any("no effect" in r for r in kernel.get_remarks())


@pytest.mark.cpu_target  # the CPU pipeline's passes
def test_pass_profile_environment_threshold(monkeypatch, capfd):
    monkeypatch.setenv("TILELANG_PASS_PROFILE", "1")
    monkeypatch.setenv("TILELANG_PASS_PROFILE_THRESHOLD_MS", "1e9")
    tilelang.lower(kernel_func(), target="cpu")
    err = capfd.readouterr().err
    assert "those over 1e+09 ms" in err and "simplify" not in err
