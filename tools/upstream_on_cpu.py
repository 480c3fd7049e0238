"""A pytest plugin that runs upstream TileLang's CUDA tests on our CPU target: kernels asked for
on "cuda" (or "auto") compile for the CPU, and torch tensors asked for on "cuda" are made on the
CPU. The tests compare with torch, so a wrong value is a CPU-target bug (or a test about CUDA
itself). No GPU needed:

    cd <upstream checkout>/testing/python/language
    PYTHONPATH=/path/to/this/repo/tools python -m pytest -p upstream_on_cpu -n 2 --timeout 90 .

(examples: run each test file from its own folder, with that folder on PYTHONPATH too).

With UPSTREAM_ON_CPU_SM90_LOG=<file>, every kernel compiled for the CPU is also lowered for
sm_90a (CUDA source, no GPU), and one JSON line per kernel is appended to <file>: the test,
the kernel, "ok" or the error, and the remarks. A kernel that runs right on the CPU but does
not lower for Hopper, or that a remark says falls back there, shows up without a GPU:

    python tools/upstream_on_cpu.py <file>    # a summary of the log"""
import json
import os
import sys

if __name__ == "__main__":  # the summary of a log (no torch, no tilelang needed)
    from collections import Counter

    rows = [json.loads(line) for line in open(sys.argv[1])]
    bad = [r for r in rows if r["status"] != "ok"]
    print(f"{len(rows)} kernels lowered for sm_90a, {len(bad)} refused")
    for r in bad:
        print(f"  {r['test']}: {r['kernel']}: {r['status']}")
    # (our remarks' words for a slower path than the fast one: see the compiler's remarks)
    words = ("not TMA", "falls back", "fallback", "mma.sync", "element loop", "not warp-specialized",
             "runs in order", "not wgmma", "kept in shared memory", "stored by the threads",
             "converted through shared memory", "scalar", "not vectorized", "spilled")
    hits = Counter(m for r in rows for m in r["remarks"] if any(w in m for w in words))
    print(f"remarks naming a slower path ({sum(hits.values())}):")
    for m, n in hits.most_common(60):
        print(f"  {n:4d}  {m[:220]}")
    sys.exit(0)

import torch
from torch.overrides import TorchFunctionMode

import tilelang.testing
from tilelang.jit import target as _target

# upstream's requires_cuda_compute_version* decorators ask this
tilelang.testing.cuda_compute_version = lambda *a, **k: (9, 0)

_parse = _target.parse


def _cpu_target(target):
    t = _parse(target)
    return _target.Target("cpu") if t.kind in ("cuda", "auto") else t


_target.parse = _cpu_target


def _on_cpu(device):
    if isinstance(device, (str, torch.device)) and "cuda" in str(device):
        return torch.device("cpu")
    return device


class _TensorsOnCpu(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        if "device" in kwargs:
            kwargs["device"] = _on_cpu(kwargs["device"])
        if func is torch.Tensor.cuda:
            return args[0]
        if func is torch.Tensor.to:
            args = tuple(_on_cpu(a) for a in args)
        return func(*args, **kwargs)


_TensorsOnCpu().__enter__()
torch.cuda.synchronize = lambda *a, **k: None
torch.cuda.is_available = lambda: True
torch.cuda.current_device = lambda: 0
torch.cuda.get_device_capability = lambda *a, **k: (9, 0)
torch.cuda.get_device_name = lambda *a, **k: "CPU (tools/upstream_on_cpu.py)"


_SM90_LOG = os.environ.get("UPSTREAM_ON_CPU_SM90_LOG")
if _SM90_LOG:
    import importlib

    from tilelang.jit import kernel as _kernel

    _lower = importlib.import_module("tilelang.lower")  # (the package's `lower` is the function)

    _compile = _kernel.JITKernel._compile

    def _compile_and_lower_for_hopper(self, verbose):
        out = _compile(self, verbose)
        try:
            _, remarks, _ = _lower.lower_cuda_kernels(self.func.node, dict(self.pass_configs or {}), "sm_90a")
            status = "ok"
        except Exception as e:  # noqa: BLE001 (any refusal is what the log is for)
            remarks, status = [], f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
        with open(_SM90_LOG, "a") as f:
            f.write(json.dumps({"test": os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0],
                                "kernel": getattr(self.func, "name", "?"), "status": status,
                                "remarks": [str(r) for r in remarks]}) + "\n")
        return out

    _kernel.JITKernel._compile = _compile_and_lower_for_hopper
