"""``tilelang.lower(func, target=...)``: the generated source of a @T.prim_func without
building or loading it (works for "cuda" without a GPU when the arch is named).

Seeing inside: ``tilelang.lower(func, target, trace=True)`` records the IR after each pass
(the printer's TileLang-like text) and each pass's wall time in ``artifact.trace``;
``TILELANG_DUMP_IR_DIR=folder`` writes one numbered file per pass (plus ``timings.txt``)
for every kernel lowered or compiled, ``TILELANG_PASS_PROFILE=1`` prints the pass times;
upstream's pass configs tl.enable_dump_ir / tl.dump_ir_path / tl.pass_profile /
tl.pass_profile_threshold_ms do the same per kernel (docs/export.md)."""
from __future__ import annotations

import os
import re
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
    trace: list = field(default_factory=list)

    @property
    def device_source(self) -> str:
        return self.kernel_source

    @property
    def pass_timings(self) -> list:
        """(pass name, milliseconds) per pass run, in order (with trace=True)."""
        return [(r.name, r.ms) for r in self.trace if r.index > 0]

    def format_trace(self, ir=False) -> str:
        """The passes and their times; with ir=True, each pass's output IR too."""
        out = []
        for r in self.trace:
            head = f"[{r.index:02d}] {r.name}" + (f" ({r.part})" if r.part else "")
            out.append(head if r.index == 0 else f"{head}: {r.ms:.3f} ms")
            if ir:
                out.append(r.ir)
        total = sum(r.ms for r in self.trace)
        out.append(f"total: {total:.3f} ms in {len(self.pass_timings)} passes")
        return "\n".join(out)


@dataclass
class PassRecord:
    """One step of a lowering trace: index 0 is the input, then one per pass run."""

    index: int
    name: str
    ir: str
    ms: float = 0.0
    part: str = ""  # the CUDA kernel (T.Kernel block) when a function has several


def _records(func_node, dumps, times, part=""):
    recs = [PassRecord(0, "input", func_node.script(), 0.0, part)]
    for i, ((name, ir), (tname, ms)) in enumerate(zip(dumps, times), 1):
        assert name == tname
        recs.append(PassRecord(i, name, ir, ms, part))
    return recs


def _at_user_line(fn, *args):
    """fn(*args), a mistake the C++ core finds in it pointing at the user's line (a
    TileLangCompileError), as tilelang.compile's do."""
    from . import _tl
    from .errors import TileLangCompileError

    try:
        return fn(*args)
    except _tl.CompileError as e:
        msg, file, line, col, _, end_col = e.args
        raise TileLangCompileError(msg, file, line, col, end_col) from None


def _lower_traced(lower_fn, node, config, want):
    """(lowered, remarks, (dumps, times)) when `want`, else (lowered, remarks, [])."""
    if not want:
        lowered, remarks, _ = _at_user_line(lower_fn, node, config, False)
        return lowered, remarks, []
    lowered, remarks, dumps, times = _at_user_line(lower_fn, node, config, True, True)
    return lowered, remarks, (dumps, times)


def lower_cuda_kernels(func_node, config, arch, want_trace=False):
    """The CUDA kernels of one prim_func, one per T.Kernel (the compiled kernel launches them
    in order on one stream): ([(lowered, generated source)], remarks, trace records). Both
    tilelang.lower and the JIT's build (jit/cuda_backend.py) lower this way; the split and
    each part's pipeline are the C++ core's (_tl.split_kernels, _tl.lower_cuda)."""
    from . import _tl

    parts = _tl.split_kernels(func_node)
    kernels, remarks, records = [], [], []
    for n, part in enumerate(parts):
        lowered, rs, tr = _lower_traced(_tl.lower_cuda, part, dict(config, **{"tl.target_arch": arch}), want_trace)
        src = _at_user_line(_tl.codegen_cuda, lowered)
        prefix = f"{src.entry}: " if len(parts) > 1 else ""
        remarks.extend(prefix + r for r in rs)
        kernels.append((lowered, src))
        if tr:
            records += _records(part, *tr, part=f"kernel{n}" if len(parts) > 1 else "")
    if len(parts) > 1:
        remarks.append(f"{len(parts)} T.Kernel blocks: {len(parts)} CUDA kernels launched in order on one stream")
    return kernels, remarks, records


_TRUE = ("1", "true", "yes", "on")


def dump_dir(config=None):
    """Where to write the IR after each pass, or None: TILELANG_DUMP_IR_DIR, else upstream's
    pass configs tl.enable_dump_ir (+ tl.dump_ir_path, default ./tilelang_dump_ir)."""
    if os.environ.get("TILELANG_DUMP_IR_DIR"):
        return os.environ["TILELANG_DUMP_IR_DIR"]
    config = config or {}
    if str(config.get("tl.enable_dump_ir", "")).lower() in _TRUE:
        return config.get("tl.dump_ir_path") or os.path.join(os.getcwd(), "tilelang_dump_ir")
    return None


def pass_profile(config=None):
    """None, or the threshold (ms) above which per-pass times are printed to stderr:
    TILELANG_PASS_PROFILE=1 or the pass config tl.pass_profile (threshold from
    TILELANG_PASS_PROFILE_THRESHOLD_MS / tl.pass_profile_threshold_ms, default 0)."""
    config = config or {}
    on = os.environ.get("TILELANG_PASS_PROFILE", "").lower() in _TRUE or \
        str(config.get("tl.pass_profile", "")).lower() in _TRUE
    if not on:
        return None
    for value in (config.get("tl.pass_profile_threshold_ms"), os.environ.get("TILELANG_PASS_PROFILE_THRESHOLD_MS")):
        try:
            return float(value)
        except (TypeError, ValueError):
            continue  # unset, or not a number: print every pass
    return 0.0


def tracing_requested(pass_configs=None) -> bool:
    """Whether lowering should be traced for a dump folder or a pass profile."""
    from .transform import key_name

    config = {key_name(k): str(v) for k, v in (pass_configs or {}).items()}
    return dump_dir(config) is not None or pass_profile(config) is not None


def _print_profile(records, name, target, threshold):
    import sys

    total = sum(r.ms for r in records)
    print(f"[tilelang] pass profile of {name} ({target}): {total:.3f} ms in {len(records) - 1 if records else 0} "
          f"passes" + (f", those over {threshold:g} ms:" if threshold else ":"), file=sys.stderr)
    for r in records:
        if r.index and r.ms >= threshold:
            print(f"[tilelang]   {(r.part + '.') if r.part else ''}{r.index:02d} {r.name:32s} {r.ms:10.3f} ms",
                  file=sys.stderr)


def write_trace(records, folder, name, target):
    """One numbered file per pass under folder/<name>-<target>/, plus timings.txt.
    Returns that subfolder."""
    sub = os.path.join(folder, re.sub(r"[^0-9A-Za-z_.-]", "_", f"{name}-{target}"))
    os.makedirs(sub, exist_ok=True)
    lines = []
    for r in records:
        prefix = f"{r.part}." if r.part else ""
        fname = f"{prefix}{r.index:02d}_{r.name}.py"
        with open(os.path.join(sub, fname), "w") as f:
            f.write(f"# {name} ({target}{', ' + r.part if r.part else ''}): IR after {r.name}"
                    + (f", {r.ms:.3f} ms" if r.index else "") + "\n")
            f.write(r.ir if r.ir.endswith("\n") else r.ir + "\n")
        if r.index:
            lines.append(f"{prefix}{r.index:02d} {r.name:32s} {r.ms:10.3f} ms")
    lines.append(f"total {sum(r.ms for r in records):.3f} ms")
    with open(os.path.join(sub, "timings.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return sub


def lower(func, target="auto", target_host=None, runtime_only=False, enable_host_codegen=False,
          enable_device_compile=False, pass_configs=None, trace=False) -> CompiledArtifact:
    """With trace=True the artifact's `trace` holds a PassRecord per pass (IR and wall time);
    TILELANG_DUMP_IR_DIR (or tl.enable_dump_ir) also writes them to files, and
    TILELANG_PASS_PROFILE (or tl.pass_profile) prints the times."""
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
    if getattr(func, "pass_configs", None):  # the function's own (T.annotate_pass_configs), as compile
        pass_configs = dict(func.pass_configs, **(pass_configs or {}))
    config = {key_name(k): str(v) for k, v in (pass_configs or {}).items()}
    params = [p.name if hasattr(p, "name") else p.node.var_name for p in func.params]
    folder = dump_dir(config)
    profile = pass_profile(config)
    want = trace or folder is not None or profile is not None
    if t.kind == "cpu":
        lowered, remarks, tr = _lower_traced(_tl.lower_cpu, func.node, config, want)
        source, _, _ = _at_user_line(_tl.codegen_cpu, lowered)
        records = _records(func.node, *tr) if tr else []
        if folder:
            write_trace(records, folder, func.name, "cpu")
        if profile is not None:
            _print_profile(records, func.name, "cpu", profile)
        return CompiledArtifact(source, "cpu", params, list(remarks) + config_remarks(pass_configs, "cpu"), source,
                                records)
    arch = t.arch
    if arch is None:
        # the rule tilelang.compile follows: TILELANG_CUDA_ARCH, else the current device's
        # arch (sm_90 as sm_90a)
        from .jit.cuda_backend import default_arch

        arch = default_arch()
    kernels, remarks, records = lower_cuda_kernels(func.node, config, arch, want)
    sources = [src.code for _, src in kernels]
    if folder:
        write_trace(records, folder, func.name, arch)
    if profile is not None:
        _print_profile(records, func.name, arch, profile)
    return CompiledArtifact("\n".join(sources), f"cuda -arch={arch}", params, remarks + config_remarks(pass_configs, "cuda"),
                            "", records)
