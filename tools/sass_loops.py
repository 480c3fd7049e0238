"""The main loop of generated CUDA kernels in static SASS, side by side, on a machine without
a GPU (a development aid, not a test).

    python -m tools.sass_loops ours.cu [upstream.cu] [--upstream-pkg DIR] [--lines N]

`ours.cu` is a kernel source from our package (`kernel.get_kernel_source()`, compiled with
this repository's device headers and the device-library switches the JIT passes);
`upstream.cu` one from upstream TileLang (`tools.offline_peer` writes both for an example
kernel; compiled with the headers of the unpacked wheel in --upstream-pkg). Each is compiled
by nvcc for sm_90a with line information and disassembled by nvdisasm (the toolkit's, or the
`nvidia-cuda-nvdisasm` wheel's: on PATH, named by NVDISASM, or found in site-packages).
Printed per side: ptxas' registers and spills, the instruction count, and for the longest
loop (the backward branch spanning the most code: a kernel's main loop) its instruction mix,
its local-memory (spill) instructions by source line and the lines with the most
instructions. Static counts say where code and spills are, not where time goes
(scripts/ncu_compare.sh does that on the GPU); lines follow nvcc's line table, so code the
compiler hoists or merges is charged to one of the lines it came from."""
import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def find_tool(name):
    """`name` (NVDISASM names nvdisasm) on PATH, under $CUDA_HOME/bin or /usr/local/cuda/bin,
    or in a pip nvidia wheel."""
    found = os.environ.get(name.upper()) or shutil.which(name)
    if found:
        return found
    for d in (os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin"), "/usr/local/cuda/bin"):
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    for site in sys.path:
        for cand in glob.glob(os.path.join(site, "nvidia", "*", "bin", name)):
            if os.access(cand, os.X_OK):
                return cand
    sys.exit(f"sass_loops: {name} not found (CUDA toolkit, or pip install nvidia-cuda-{name})")


def compile_and_disassemble(src, includes, extra, workdir):
    """(ptxas' report, nvdisasm's listing with line information) of `src` built for sm_90a."""
    cubin = os.path.join(workdir, os.path.basename(src) + ".cubin")
    cmd = [find_tool("nvcc"), "-cubin", "-arch=sm_90a", "-O3", "-std=c++17", "-lineinfo", "-w", "-Xptxas", "-v",
           "-o", cubin, src] + [f"-I{i}" for i in includes] + list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"sass_loops: nvcc failed on {src}:\n{r.stderr[-3000:]}")
    usage = " ".join(line.split(":", 1)[-1].strip() for line in r.stderr.splitlines()
                     if "registers" in line or "spill" in line)
    dis = subprocess.run([find_tool("nvdisasm"), "--print-line-info-inline", "-c", cubin], capture_output=True,
                         text=True, check=True).stdout
    return usage, dis


def parse(disasm, src):
    """[(address, instruction text, kernel-source line)] and {label: address}."""
    base = os.path.basename(src)
    out, labels, line, pending = [], {}, None, None
    for raw in disasm.splitlines():
        s = raw.strip()
        if s.startswith("//## File"):
            lines = [int(n) for f, n in re.findall(r'"([^"]+)", line (\d+)', s) if os.path.basename(f) == base]
            if lines:
                line = lines[-1]  # the outermost call in the kernel's own file
            continue
        m = re.match(r"\.L_x_(\d+):", s)
        if m:
            pending = int(m.group(1))
            continue
        m = re.match(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", s)
        if m:
            addr = int(m.group(1), 16)
            if pending is not None:
                labels[pending], pending = addr, None
            out.append((addr, m.group(2), line))
    return out, labels


def opcode(text):
    words = text.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def longest_loop(ins, labels):
    best = None
    for addr, text, _ in ins:
        if opcode(text) != "BRA":
            continue
        m = re.search(r"\.L_x_(\d+)", text)
        target = labels.get(int(m.group(1))) if m else None
        if target is not None and target < addr and (best is None or addr - target > best[1] - best[0]):
            best = (target, addr)
    return best


def report(name, src, usage, disasm, n_lines):
    ins, labels = parse(disasm, src)
    text = open(src).read().splitlines()
    print(f"== {name}: {src}\n   ptxas: {usage}\n   instructions: {len(ins)}")
    loop = longest_loop(ins, labels)
    if loop is None:
        print("   no loop")
        return
    body = [x for x in ins if loop[0] <= x[0] <= loop[1]]
    mix = collections.Counter(opcode(t) for _, t, _ in body)
    print(f"   longest loop {loop[0]:#x}-{loop[1]:#x}: {len(body)} instructions")
    print("   mix: " + " ".join(f"{k}:{v}" for k, v in mix.most_common(24)))
    spills = collections.Counter(ln for _, t, ln in body if opcode(t) in ("LDL", "STL"))
    print(f"   local-memory instructions in the loop: {sum(spills.values())}, by line: "
          + ", ".join(f"L{ln}:{n}" for ln, n in spills.most_common(10)))
    per_line = collections.Counter(ln for _, _, ln in body)
    for ln, n in per_line.most_common(n_lines):
        where = text[ln - 1].strip()[:110] if ln and ln <= len(text) else "?"
        print(f"   {n:5d}  L{ln}: {where}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("ours")
    p.add_argument("upstream", nargs="?")
    p.add_argument("--upstream-pkg", default="/tmp/upstream-tilelang", help="an unpacked upstream wheel")
    p.add_argument("--lines", type=int, default=15, help="source lines listed per side")
    a = p.parse_args(argv)
    from tilelang import _tl

    root = os.path.join(HERE, "..")
    with tempfile.TemporaryDirectory() as work:
        # (the device-library switches the JIT passes: native 16-bit arithmetic, ...; no fast
        # math unless tl.enable_fast_math, as the JIT)
        usage, dis = compile_and_disassemble(a.ours, [os.path.join(root, "templates")],
                                             list(_tl.cuda_compile_defines({})), work)
        report("ours", a.ours, usage, dis, a.lines)
        if a.upstream:
            pkg = os.path.join(a.upstream_pkg, "tilelang")
            usage, dis = compile_and_disassemble(
                a.upstream, [os.path.join(pkg, "src"), os.path.join(pkg, "3rdparty", "cutlass", "include")],
                ["-DNDEBUG"], work)  # (upstream builds without --use_fast_math unless tl.enable_fast_math)
            report("upstream", a.upstream, usage, dis, a.lines)


if __name__ == "__main__":
    main()
