"""A pytest plugin that runs upstream TileLang's CUDA tests on our CPU target: kernels asked for
on "cuda" (or "auto") compile for the CPU, and torch tensors asked for on "cuda" are made on the
CPU. The tests compare with torch, so a wrong value is a CPU-target bug (or a test about CUDA
itself). No GPU needed:

    cd <upstream checkout>/testing/python/language
    PYTHONPATH=/path/to/this/repo/tools python -m pytest -p upstream_on_cpu -n 2 --timeout 90 .

(examples: run each test file from its own folder, with that folder on PYTHONPATH too)."""
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
