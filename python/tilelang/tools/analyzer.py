"""``tilelang.tools.Analyzer``: a roofline estimate of a kernel from its tile operations.

FLOPs are counted from the T.gemm calls (2 * M * N * K each) and global traffic from the
T.copy calls that read or write global memory, each times the grid size and the trip
counts of the loops around it, as the kernel is written (before lowering). Element-wise
loops are not counted. The device's peak figures come from a short table of data-sheet
numbers (dense FP16 tensor-core TFLOPS, memory bandwidth) by GPU name; for another device
they are None, and so is the estimated time."""
from __future__ import annotations

from dataclasses import dataclass

# GPU name (as the driver reports it) -> (dense FP16 tensor TFLOPS, memory GB/s), data sheets.
_PEAKS = {"H200": (989.4, 4800.0), "H100": (989.4, 3350.0), "A100": (312.0, 2039.0)}


@dataclass(frozen=True)
class AnalysisResult:
    total_flops: int
    total_global_bytes: int
    estimated_time: float | None      # seconds: the larger of compute and memory time
    expected_tflops: float | None     # the device's peak
    expected_bandwidth_GBps: float | None


class Analyzer:
    def __init__(self, fn, device):
        from .. import _tl

        node = getattr(fn, "node", fn)
        if not isinstance(node, _tl.PrimFunc):
            raise TypeError(f"Analyzer takes a @T.prim_func kernel (e.g. kernel.get_tir(...)), got {type(fn).__name__}")
        self.fn, self.device = node, device
        self.total_flops = 0
        self.total_global_bytes = 0

    def ir_pass(self) -> "Analyzer":
        from .. import _tl

        for kind, a, b, c, times in _tl.tile_op_counts(self.fn):
            if times < 0 or a < 0 or b < 0 or c < 0:
                raise ValueError("Analyzer: the kernel has loop or tile extents that are not compile-time constants")
            if kind == "gemm":
                self.total_flops += 2 * a * b * c * times
            else:
                self.total_global_bytes += a * b * times
        return self

    def calculate(self) -> AnalysisResult:
        name = str(getattr(self.device, "name", ""))
        peak = next((v for k, v in _PEAKS.items() if k in name), None)
        if peak is None:
            return AnalysisResult(self.total_flops, self.total_global_bytes, None, None, None)
        tflops, gbps = peak
        t = max(self.total_flops / (tflops * 1e12), self.total_global_bytes / (gbps * 1e9))
        return AnalysisResult(self.total_flops, self.total_global_bytes, t, tflops, gbps)

    @classmethod
    def analysis(cls, fn, device) -> AnalysisResult:
        return cls(fn, device).ir_pass().calculate()
