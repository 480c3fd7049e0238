"""Side by side without a GPU (a development aid, not a test): the CUDA source that ours and
upstream TileLang generate for one kernel of upstream's examples, and what ptxas makes of
each (registers, spilled bytes, SASS instructions), on the CPU machine.

    python -m tools.offline_peer --examples /tmp/upsrc/examples --upstream-pkg /tmp/upstream-tilelang \\
        flash_attention example_mha_fwd_varlen flashattn \\
        "8, 12000, 12000, 64, 128, False, block_M=128, block_N=128, num_stages=2, threads=256" --out /tmp/peer

Each side runs in a process of its own (never both packages in one process). Upstream's side
needs a Python of the wheel's version (`--upstream-python`, e.g. pyenv's 3.12) with numpy,
ml_dtypes, typing_extensions, cloudpickle, psutil and tqdm; torch is replaced by a stand-in
module when it is not installed (lowering needs none of it). Ours compiles for the arch of
TILELANG_CUDA_ARCH (sm_90a here). With nvdisasm (on PATH or NVDISASM) the SASS is written next to
each source and its instructions counted. The example's module is imported, so its other imports must
be there (einops, ...; `--ours-python` names a Python that has them for our side). `args` is the
function's argument list as Python source.
`python -m tools.sass_loops <ours.cu> <upstream.cu>` then compares the two sources' main loops
(instruction mix and spills by source line).
"""
from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

# Run in the side's own process: `sys.argv[1:]` = examples folder, family, module, function, args, out.
_SIDE = textwrap.dedent(r'''
    import importlib, sys, types
    examples, family, module, function, args, out, side = sys.argv[1:8]
    try:
        import torch  # noqa: F401
    except ImportError:  # lowering needs none of torch: a stand-in for the examples' imports
        class _Base:
            apply = None
        class _Any:
            def __init__(self, *a, **k): pass
            def __call__(self, *a, **k):
                return a[0] if len(a) == 1 and callable(a[0]) and not k else _Any()
            def __getattr__(self, n): return _Any()
            def __mro_entries__(self, b): return (_Base,)
        class _Mod(types.ModuleType):
            def __getattr__(self, n):
                if n.startswith("__"): raise AttributeError(n)
                return _Any()
        for n in ["torch", "torch.nn", "torch.nn.functional", "torch.utils", "torch.utils.dlpack", "torch.cuda"]:
            m = _Mod(n); m.__path__ = []; sys.modules[n] = m
        t = sys.modules["torch"]
        for d in ["bfloat16", "float16", "float32", "half", "float", "int32", "int8", "uint8", "int64", "bool",
                  "float8_e4m3fn", "float8_e5m2", "float64", "int16", "uint16", "uint32", "uint64"]:
            setattr(t, d, d)
        t.__version__ = "2.8.0"
        for c in ["Tensor", "dtype", "device", "Size", "Generator", "Stream"]:
            setattr(t, c, type(c, (), {}))
    import os as _os
    if _os.environ.get("OFFLINE_PEER_CAPABILITY"):  # --device-capability: examples that ask torch which GPU
        _cap = tuple(int(x) for x in _os.environ["OFFLINE_PEER_CAPABILITY"].split("."))
        _props = types.SimpleNamespace(major=_cap[0], minor=_cap[1], name="offline", multi_processor_count=132,
                                       total_memory=80 << 30)
        _c = sys.modules.get("torch.cuda") or sys.modules["torch"].cuda
        sys.modules["torch"].cuda = _c  # (the stand-in's attributes are new objects on each access)
        _c.is_available = lambda: True
        _c.current_device = lambda: 0
        _c.get_device_capability = lambda *a, **k: _cap
        _c.get_device_properties = lambda *a, **k: _props
    sys.path.insert(0, examples + "/" + family)
    import tilelang
    m = importlib.import_module(module)
    f = getattr(m, function)
    a, kw = eval("(lambda *a, **kw: (a, kw))(" + args + ")")
    # a JIT-decorated function, or a plain one returning a T.prim_func
    plain = not hasattr(f, "jit_impl") and not hasattr(f, "get_tir") and not hasattr(f, "func")
    if side == "ours":
        # a JIT's compile() builds without running (an eager JIT's sizes are its keywords: a
        # call would want tensors and a GPU); else the factory's prim_func
        made = f.compile(*a, **kw) if hasattr(f, "compile") else f(*a, **kw)
        if hasattr(made, "get_kernel_source"):
            src = made.get_kernel_source()
        else:  # a T.prim_func: lowered as the JIT would (its arch, TILELANG_PASS_CONFIGS)
            import os
            from tilelang.jit.kernel import _environment_pass_configs

            arch = os.environ.get("TILELANG_CUDA_ARCH", "sm_90a")
            src = tilelang.lower(made, target=f"cuda -arch={arch}", pass_configs=_environment_pass_configs()).kernel_source
    else:  # upstream: the prim_func of its JIT (or autotuner) wrapper, lowered for sm_90a
        from tilelang import tvm
        jit = getattr(f, "jit_impl", f)
        prim = f(*a, **kw) if plain else jit.get_tir(*a, **kw) if hasattr(jit, "get_tir") else jit.func(*a, **kw)
        target = tvm.target.Target({"kind": "cuda", "arch": "sm_90a"})
        # (the decorator's pass configs, as its own compile would apply them)
        configs = {getattr(k, "value", k): v for k, v in (getattr(jit, "pass_configs", None) or {}).items()}
        with tvm.transform.PassContext(config=configs), target:
            src = tilelang.lower(prim, target=target).kernel_source
    open(out, "w").write(src)
''')


def ptxas_stats(cu: Path, includes: list[str], extra: list[str]) -> str:
    """Registers, spills and SASS instruction count of `cu` compiled for sm_90a by nvcc."""
    cubin = cu.with_suffix(".cubin")
    cmd = ["nvcc", "-arch=sm_90a", "-cubin", "-std=c++17", "-O3", "-w", "-Xptxas", "-v", "-o", str(cubin), str(cu)]
    cmd += [f"-I{i}" for i in includes] + extra
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        return "nvcc failed: " + r.stderr.strip().splitlines()[-1]
    info = " ".join(ln.strip() for ln in r.stderr.splitlines() if "registers" in ln or "spill" in ln)
    regs = re.findall(r"Used (\d+) registers", info)
    spills = re.findall(r"(\d+) bytes spill stores", info)
    stats = f"registers {max(map(int, regs), default=0)}, spilled {sum(map(int, spills))} bytes"
    # (nvdisasm: the toolkit's, or pip's nvidia-cuda-nvdisasm, named by NVDISASM)
    nvdisasm = os.environ.get("NVDISASM") or shutil.which("nvdisasm")
    if nvdisasm:
        sass = subprocess.run([nvdisasm, "-c", str(cubin)], capture_output=True, text=True).stdout
        cu.with_suffix(".sass").write_text(sass)
        instructions = len(re.findall(r"^\s+/\*[0-9a-f]{4,}\*/", sass, re.M))
        stats += f", {instructions} SASS instructions"
    return stats


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("family"), p.add_argument("module"), p.add_argument("function"), p.add_argument("args")
    p.add_argument("--examples", required=True, help="upstream's examples/ folder")
    p.add_argument("--upstream-pkg", required=True, help="an unpacked upstream wheel")
    p.add_argument("--upstream-python", default=os.path.expanduser("~/.pyenv/versions/3.12.1/bin/python3"))
    p.add_argument("--ours-python", default=sys.executable,
                   help="the Python for our side (default: this one), e.g. one with torch and triton for "
                        "examples that import them at module level; our package must import there")
    p.add_argument("--out", default="/tmp/offline_peer")
    p.add_argument("--device-capability", default="",
                   help="e.g. 9.0: torch.cuda answers as if that GPU were present (examples that pick their "
                        "code by the device, as the convolution example's is_hopper)")
    a = p.parse_args(argv)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    root = Path(__file__).resolve().parents[1]
    # ours compiles with the device-library switches the JIT passes (native 16-bit arithmetic,
    # hardware float8 conversions, ...); without them ptxas sees the portable emulations
    from tilelang import _tl

    ours_defines = list(_tl.cuda_compile_defines({}))
    sides = {
        "ours": ([a.ours_python], {"TILELANG_DEFAULT_TARGET": "cuda", "OFFLINE_PEER_CAPABILITY": a.device_capability,
                                    "TILELANG_CUDA_ARCH": os.environ.get("TILELANG_CUDA_ARCH", "sm_90a")},
                 [str(root / "templates")], ours_defines),
        "upstream": ([a.upstream_python], {"PYTHONPATH": a.upstream_pkg, "OFFLINE_PEER_CAPABILITY": a.device_capability},
                     [f"{a.upstream_pkg}/tilelang/src", f"{a.upstream_pkg}/tilelang/3rdparty/cutlass/include"],
                     ["-DNDEBUG"]),  # (upstream builds without --use_fast_math unless tl.enable_fast_math)
    }
    for side, (py, env, includes, extra) in sides.items():
        cu = out / f"{a.module}_{side}.cu"
        r = subprocess.run(py + ["-c", _SIDE, a.examples, a.family, a.module, a.function, a.args, str(cu), side],
                           env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        if r.returncode:
            # the error and the frames just above it (the example's line, or the package's)
            print(f"{side}: failed:\n  " + "\n  ".join((r.stderr.strip().splitlines() or ["?"])[-7:]))
            continue
        print(f"{side}: {cu} ({len(cu.read_text().splitlines())} lines): {ptxas_stats(cu, includes, extra)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
