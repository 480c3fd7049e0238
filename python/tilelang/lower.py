"""``tilelang.lower(func, target=...)``: the generated source of a @T.prim_func without
building or loading it (works for "cuda" without a GPU when the arch is named)."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class CompiledArtifact:
    """What lowering produced. `kernel_source` is the device code (CUDA C++ or the CPU's C++);
    `host_source` is the same text on the CPU (one file there) and empty on CUDA, whose host
    side is the Python launcher; `remarks` are the compiler's decisions."""

    kernel_source: str
    target: str
    params: list = field(default_factory=list)
    remarks: list = field(default_factory=list)
    host_source: str = ""

    @property
    def device_source(self) -> str:
        return self.kernel_source


def lower(func, target="auto", target_host=None, runtime_only=False, enable_host_codegen=False,
          enable_device_compile=False, pass_configs=None) -> CompiledArtifact:
    from . import _tl
    from .frontend.parser import PrimFunc
    from .jit.target import resolve
    from .transform import config_remarks, key_name

    if not isinstance(func, PrimFunc):
        raise TypeError(f"tilelang.lower: func must be a @T.prim_func, got {type(func).__name__}")
    from .tvm.transform import current_config

    t = resolve(target)
    scoped = current_config()  # `with tilelang.tvm.transform.PassContext(config=...)`
    if scoped:
        pass_configs = dict(scoped, **(pass_configs or {}))
    config = {key_name(k): str(v) for k, v in (pass_configs or {}).items()}
    params = [p.name if hasattr(p, "name") else p.node.var_name for p in func.params]
    if t.kind == "cpu":
        lowered, remarks, _ = _tl.lower_cpu(func.node, config, False)
        source, _, _ = _tl.codegen_cpu(lowered)
        return CompiledArtifact(source, "cpu", params, list(remarks) + config_remarks(pass_configs), source)
    arch = t.arch
    if arch is None:
        ok, why = _tl.cuda_available()
        if not ok:
            raise RuntimeError(f"tilelang.lower: target {target!r} names no arch and there is no usable GPU ({why}); "
                               "write e.g. target='cuda -arch=sm_90a'")
        arch = _tl.device_arch(0)
        if arch == "sm_90":
            arch = "sm_90a"
    sources, remarks = [], []
    for part in _tl.split_kernels(func.node):
        lowered, rs, _ = _tl.lower_cuda(part, dict(config, **{"tl.target_arch": arch}), False)
        sources.append(_tl.codegen_cuda(lowered).code)
        remarks.extend(rs)
    return CompiledArtifact("\n".join(sources), f"cuda -arch={arch}", params, remarks + config_remarks(pass_configs))
