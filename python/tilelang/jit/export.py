"""Ahead-of-time export of a compiled kernel (``kernel.export_library(path)``) and the
introspection behind ``kernel.get_ptx`` / ``get_host_source``.

CPU: ``path`` (a shared library) exports one plain C function,

    int32_t tl_<name>(float* A, float* B, float* C, int64_t M);

(tensors as pointers, then scalars, then the dynamic dimensions, each as int64_t), declared
in ``<path stem>.h`` beside it. The library is the kernel's C++ with that function added,
built by the same host compiler and flags as the JIT (so ``-march=native``: it runs on CPUs
like this one); it needs libgomp and libstdc++ at run time, neither Python nor tilelang.

CUDA: ``path`` receives the cubin, ``<path stem>_launch.c`` a plain C launch function
(driver API, cubin embedded, TMA descriptors encoded per call) and ``<path stem>.h`` its
declaration with the launch facts: the kernel (entry) names in launch order, their
parameters, grid, block, dynamic shared memory, and the TMA descriptors a kernel takes.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import tempfile

_C_TYPES = {
    "float32": "float", "float64": "double", "float16": "uint16_t", "bfloat16": "uint16_t",
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint8": "uint8_t", "uint16": "uint16_t", "uint32": "uint32_t", "uint64": "uint64_t",
    "bool": "uint8_t",
}
_C_KEYWORDS = {"auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else", "enum",
               "extern", "float", "for", "goto", "if", "inline", "int", "long", "register", "restrict", "return",
               "short", "signed", "sizeof", "static", "struct", "switch", "typedef", "union", "unsigned", "void",
               "volatile", "while", "main", "bool", "class", "new", "delete", "template", "this", "operator"}


def c_identifier(name: str) -> str:
    s = re.sub(r"[^0-9A-Za-z_]", "_", name) or "kernel"
    if s[0].isdigit():
        s = "_" + s
    return s + "_" if s in _C_KEYWORDS else s


def _ctype(dtype: str, pointer: bool) -> str:
    base = _C_TYPES.get(dtype)
    if base is None:
        base = "void" if pointer else "int64_t"
    if not pointer and dtype in ("float16", "bfloat16"):
        return "float"  # a scalar is passed by value and converted by the kernel
    return base + "*" if pointer else base


def _paths(path: str):
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    stem = os.path.basename(path)
    for ext in (".so", ".cubin", ".dylib", ".o"):
        if stem.endswith(ext):
            stem = stem[: -len(ext)]
            break
    if stem.startswith("lib") and len(stem) > 3:
        stem = stem[3:]  # libmm.so -> mm.h
    return path, os.path.join(folder, stem + ".h"), stem


def _param_lines(kernel):
    lines = []
    for i, p in enumerate(kernel.params):
        role = ("output" if i in kernel.out_idx else
                "workspace: T.alloc_global, the caller allocates it" if i in getattr(kernel, "workspace_idx", ())
                else "input")
        if p.is_tensor:
            layout = f"strides {p.strides_str()}" if p.strides is not None else "contiguous row-major"
            lines.append(f" *   {p.name}: {p.dtype}[{', '.join(map(str, p.dims))}] ({role}, {layout})")
        else:
            lines.append(f" *   {p.name}: {p.dtype} scalar")
    for name, pi, d, kind in kernel.dynamic_dims:
        what = "dimension"
        if kind == "stride":  # a 4-bit tensor's strides count values: twice its byte strides (the last 1)
            what = "stride (in 4-bit values)" if kernel.params[pi].pack > 1 else "stride (in elements)"
        lines.append(f" *   {name}: dynamic {what} (int64_t) = {kernel.params[pi].name}.{kind}[{d}]")
    return lines


def _write_atomic(path, data: bytes):
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tl-export-")
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


# ---------------------------------------------------------------------------------------- CPU

def c_signature(kernel, symbol: str, typed=True):
    """The exported function's parameter list (C), and one C++ statement per argument that
    stores it into the TLArg array the generated entry point reads."""
    decl, stores = [], []
    slot = 0
    for p in kernel.params:
        name = c_identifier(p.name)
        if p.is_tensor:
            decl.append(f"{_ctype(p.dtype, True) if typed else 'void*'} {name}")
            stores.append(f"args[{slot}].ptr = (void*){name};")
        elif p.is_pointer:
            decl.append(f"void* {name}")
            stores.append(f"args[{slot}].ptr = {name};")
        elif p.dtype.startswith("float") or p.dtype == "bfloat16":
            decl.append(f"{_ctype(p.dtype, False)} {name}")
            stores.append(f"args[{slot}].f = (double){name};")
        else:
            decl.append(f"{_ctype(p.dtype, False)} {name}")
            stores.append(f"args[{slot}].i = (int64_t){name};")
        slot += 1
    seen = {c_identifier(p.name) for p in kernel.params}
    for dim_name, *_ in kernel.dynamic_dims:
        name = c_identifier(dim_name)
        while name in seen:
            name += "_"
        seen.add(name)
        decl.append(f"int64_t {name}")
        stores.append(f"args[{slot}].i = {name};")
        slot += 1
    return decl, stores, slot


def export_cpu(kernel, path, symbol=None):
    from .. import _tl, env
    from .kernel import _cpu_compile_flags

    lib_path, header_path, stem = _paths(path)
    symbol = c_identifier(symbol or f"tl_{kernel.name}")
    decl, stores, nargs = c_signature(kernel, symbol)
    # The generated entry point becomes internal (its name may be `main`, or clash with
    # the program's own symbols); the exported function packs the arguments and calls it.
    entry_decl = f'extern "C" int32_t {kernel.entry}(const TLArg* args)'
    if entry_decl not in kernel.source:
        raise RuntimeError(f"export_library: the entry point of {kernel.name!r} was not found in its source")
    internal = "tl_export_entry_"
    source = kernel.source.replace(entry_decl, f"static int32_t {internal}(const TLArg* args)", 1)
    wrapper_params = ", ".join(decl) or "void"
    source += (
        f"\n// Exported by kernel.export_library: the plain C entry point.\n"
        f'extern "C" __attribute__((visibility("default"))) int32_t {symbol}({wrapper_params}) {{\n'
        f"  TLArg args[{max(nargs, 1)}];\n"
        + "".join(f"  {s}\n" for s in stores)
        + f"  return {internal}(args);\n}}\n")
    built, _, _ = _tl.build_cpu(source, env.kernel_cache_dir(), env.template_dir(),
                                _cpu_compile_flags(kernel.compile_flags, []) + ["-fvisibility=hidden"])
    with open(built, "rb") as f:
        _write_atomic(lib_path, f.read())
    os.chmod(lib_path, 0o755)
    guard = "TL_EXPORT_" + c_identifier(stem).upper() + "_H_"
    header = "\n".join([
        f"/* Generated by tilelang export_library: kernel '{kernel.name}' for the CPU.",
        f" * Library: {os.path.basename(lib_path)} (link with it; it needs libgomp, not Python).",
        " * Arguments, in order:",
        *_param_lines(kernel),
        " * float16 / bfloat16 elements are their raw 16-bit patterns (uint16_t).",
        " * Returns 0 on success. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "#include <stdint.h>",
        "#ifdef __cplusplus",
        'extern "C" {',
        "#endif",
        "",
        f"#define {symbol.upper()}_NUM_ARGS {nargs}",
        f"int32_t {symbol}({', '.join(decl) or 'void'});",
        "",
        "#ifdef __cplusplus",
        "}",
        "#endif",
        f"#endif  /* {guard} */",
        "",
    ])
    _write_atomic(header_path, header.encode())
    return {"library": lib_path, "header": header_path, "symbol": symbol}


# --------------------------------------------------------------------------------------- CUDA

_KIND_C = {"ptr": "void*", "i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double"}


def _kernel_signature(code: str, entry: str) -> str:
    m = re.search(r'extern "C" __global__[^{]*?\b' + re.escape(entry) + r"\s*\(([^)]*)\)", code)
    return " ".join(m.group(0).split()) if m else ""


def export_cuda(kernel, path, symbol=None):
    # A C program may launch it with any sizes: the variant without an alignment promise.
    backend = kernel._cuda.general()
    cubin_path, header_path, stem = _paths(path)
    symbol_given = symbol
    symbol = c_identifier(symbol or f"tl_{kernel.name}").upper()
    with open(backend.cubin_path, "rb") as f:
        cubin = f.read()
    _write_atomic(cubin_path, cubin)
    usage = backend.resource_usage or {}
    lines = [
        f"/* Generated by tilelang export_library: kernel '{kernel.name}' for CUDA {backend.arch}.",
        f" * Cubin: {os.path.basename(cubin_path)} (cuModuleLoad; compiled by {backend.compiler}).",
        f" * {len(backend.srcs)} CUDA kernel(s), launched in this order on one stream.",
        " * Launch arguments of every kernel, in order (cuLaunchKernel's kernelParams):",
        *_param_lines(kernel),
        " * Tensors are device pointers to contiguous row-major data; dynamic dimensions are",
        " * passed as the integer type of each kernel's signature below.",
        f" * Registers: {usage.get('registers')}, spill stores: {usage.get('spill_stores_bytes')} bytes, "
        f"spill loads: {usage.get('spill_loads_bytes')} bytes (ptxas). */",
        f"#ifndef {symbol}_H_",
        f"#define {symbol}_H_",
        "#include <stdint.h>",
        "",
        f"#define {symbol}_ARCH \"{backend.arch}\"",
        f"#define {symbol}_NUM_KERNELS {len(backend.srcs)}",
        f"#define {symbol}_NUM_PARAMS {len(kernel.params)}",
        f"#define {symbol}_NUM_DYNAMIC_DIMS {len(kernel.dynamic_dims)}",
    ]
    any_tma = False
    for k, src in enumerate(backend.srcs):
        p = f"{symbol}_K{k}"
        dyn = bool(src.dynamic_dims) or bool(src.grid_params)
        lines += ["", f"/* kernel {k}: {_kernel_signature(src.code, src.entry)} */",
                  f"#define {p}_ENTRY \"{src.entry}\"",
                  f"#define {p}_ARG_KINDS \"{' '.join(src.arg_kinds)}\"  /* {', '.join(_KIND_C[a] for a in src.arg_kinds)} */"]
        if dyn:
            names = grid_names(kernel, src)
            args = ", ".join(names)
            texts = grid_text(src) + ["1"] * (3 - len(grid_text(src)))
            lines.append(f"/* grid depends on the dynamic dimensions or scalar arguments: {', '.join(texts)} */")
            lines.append(f"#define {p}_GRID_IS_DYNAMIC 1")
            for axis, text in zip("XYZ", texts):
                expr = grid_c_expr(text, names)
                if expr is not None:
                    lines.append(f"#define {p}_GRID_{axis}({args}) ((unsigned int)({expr}))")
                else:
                    lines.append(f"/* {p}_GRID_{axis}: {text} (no C form) */")
        else:
            g = list(src.grid([])) + [1] * (3 - len(src.grid([])))
            lines += [f"#define {p}_GRID_X {g[0]}", f"#define {p}_GRID_Y {g[1]}", f"#define {p}_GRID_Z {g[2]}",
                      f"#define {p}_GRID_IS_DYNAMIC 0"]
        b = list(src.block) + [1] * (3 - len(src.block))
        lines += [f"#define {p}_BLOCK_X {b[0]}", f"#define {p}_BLOCK_Y {b[1]}", f"#define {p}_BLOCK_Z {b[2]}",
                  f"#define {p}_SHARED_BYTES {src.shared_bytes}"
                  "  /* dynamic shared memory; above 48 KiB set CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES */",
                  f"#define {p}_NUM_TMA_DESCRIPTORS {len(src.tma_specs)}"]
        for t, ((arg, dtype, elem, dims, box, swizzle), im2col) in enumerate(zip(src.tma_specs, src.tma_im2col)):
            any_tma = True
            dims_s = ", ".join(str(d) if d >= 0 else f"<launch argument {-(d + 1)}>" for d in dims)
            shape = (f"im2col channels, pixels, stride, lower and upper corners (W, H) {list(im2col)}" if im2col
                     else f"box [{', '.join(map(str, box))}]")
            lines.append(
                f"/* TMA descriptor {t} (a const __grid_constant__ CUtensorMap parameter after the arguments above):"
                f" {'cuTensorMapEncodeIm2col' if im2col else 'cuTensorMapEncodeTiled'} over launch argument {arg}"
                f" ({kernel.params[arg].name if arg < len(kernel.params) else '?'}),"
                f" CUtensorMapDataType {dtype}, {elem}-byte elements, global dims (innermost first) [{dims_s}],"
                f" {shape}, CUtensorMapSwizzle {swizzle} */")
    function = c_identifier(symbol_given or f"tl_{kernel.name}")
    decl = cuda_launcher_params(kernel)
    launcher_path = os.path.join(os.path.dirname(header_path), stem + "_launch.c")
    lines += ["", f"#define {symbol}_USES_TMA {1 if any_tma else 0}", "",
              f"/* The launcher ({os.path.basename(launcher_path)}, the cubin embedded): loads the module into the",
              " * current CUDA context on first use and launches every kernel on `stream` (a CUstream;",
              " * NULL for the default stream), encoding TMA descriptors itself. Returns 0 or a CUresult.",
              " * Build: cc -c " + os.path.basename(launcher_path) + " -I<cuda>/include; link with -lcuda. */",
              "#ifdef __cplusplus", 'extern "C" {', "#endif",
              f"int {function}({', '.join(decl + ['void* stream'])});",
              "#ifdef __cplusplus", "}", "#endif",
              "", f"#endif  /* {symbol}_H_ */", ""]
    _write_atomic(header_path, "\n".join(lines).encode())
    _write_atomic(launcher_path, cuda_launcher_source(kernel, function, os.path.basename(header_path), cubin).encode())
    return {"cubin": cubin_path, "header": header_path, "launcher": launcher_path, "symbol": function}


def cuda_launcher_params(kernel):
    """The launch function's parameters before the stream: device pointers, scalars, then
    the dynamic dimensions (int64_t), named as in the kernel."""
    decl, _, _ = c_signature(kernel, "", typed=False)
    return decl


def cuda_launcher_source(kernel, function, header_name, cubin: bytes) -> str:
    """C source of `function`: the driver-API launch of the kernel's CUDA kernels in order,
    as the JIT's call does (same arguments, grids, blocks, shared memory, TMA maps)."""
    from .cuda_backend import programmatic_launch

    backend = kernel._cuda.general()  # for any sizes, as export_cuda
    decl = cuda_launcher_params(kernel)
    names = [d.split()[-1] for d in decl]  # C names: params, then dynamic dims
    n_params = len(kernel.params)
    dim_names = [d[0] for d in kernel.dynamic_dims]
    c_of_dim = dict(zip(dim_names, names[n_params:]))
    body = []
    # dynamic dimensions under their own names, for the grid expressions
    for dim, cname in c_of_dim.items():
        if dim != cname:
            if not re.fullmatch(r"[A-Za-z_]\w*", dim):
                raise RuntimeError(f"export_library: dynamic dimension {dim!r} is not a C identifier")
            body.append(f"  const int64_t {dim} = {cname};")
    # scalar arguments a grid reads, under their own names too
    for pi in sorted({pi for src in backend.srcs for pi in src.grid_params}):
        pname = kernel.params[pi].name
        if pname != names[pi] and re.fullmatch(r"[A-Za-z_]\w*", pname):
            body.append(f"  const int64_t {pname} = (int64_t){names[pi]};")
    kinds = backend.srcs[0].arg_kinds
    ctype = {"ptr": "void*", "i32": "int32_t", "i64": "int64_t", "f32": "float", "f64": "double"}
    for j, kind in enumerate(kinds):
        body.append(f"  {ctype[kind]} a{j} = ({ctype[kind]}){names[j]};")
    for k, src in enumerate(backend.srcs):
        body.append(f"  /* kernel {k}: {src.entry} */")
        body.append("  {")
        params = [f"&a{j}" for j in range(len(kinds))]
        for t, ((arg, dtype, elem, dims, box, swizzle), im2col) in enumerate(zip(src.tma_specs, src.tma_im2col)):
            rank = len(dims)
            dim_exprs = [str(d) if d >= 0 else f"(cuuint64_t)a{-(d + 1)}" for d in dims]
            strides, acc = [], f"(cuuint64_t){elem}"
            for d in dim_exprs[:-1]:
                acc = f"{acc} * {d}"
                strides.append(acc)
            body += [
                f"    CUtensorMap tma{t};",
                f"    cuuint64_t tma{t}_dims[{rank}] = {{{', '.join(dim_exprs)}}};",
                f"    cuuint64_t tma{t}_strides[{max(rank - 1, 1)}] = {{{', '.join(strides) or '0'}}};",
            ]
            if im2col:  # T.im2col's map (TensorMapSpec::im2col): channels, pixels, stride, corners
                channels, pixels, step, lw, lh, uw, uh = im2col
                body += [
                    f"    int tma{t}_lower[2] = {{{lw}, {lh}}}, tma{t}_upper[2] = {{{uw}, {uh}}};",
                    f"    cuuint32_t tma{t}_steps[4] = {{1, {step}, {step}, 1}};",
                    f"    r = cuTensorMapEncodeIm2col(&tma{t}, (CUtensorMapDataType){dtype}, 4, a{arg}, tma{t}_dims,",
                    f"                                tma{t}_strides, tma{t}_lower, tma{t}_upper, {channels}, {pixels},",
                    f"                                tma{t}_steps, CU_TENSOR_MAP_INTERLEAVE_NONE, (CUtensorMapSwizzle){swizzle},",
                    "                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);",
                    "    if (r != CUDA_SUCCESS) return (int)r;",
                ]
                params.append(f"&tma{t}")
                continue
            body += [
                f"    cuuint32_t tma{t}_box[{rank}] = {{{', '.join(map(str, box))}}};",
                f"    cuuint32_t tma{t}_steps[{rank}] = {{{', '.join(['1'] * rank)}}};",
                f"    r = cuTensorMapEncodeTiled(&tma{t}, (CUtensorMapDataType){dtype}, {rank}, a{arg}, tma{t}_dims,",
                f"                               tma{t}_strides, tma{t}_box, tma{t}_steps, CU_TENSOR_MAP_INTERLEAVE_NONE,",
                f"                               (CUtensorMapSwizzle){swizzle}, CU_TENSOR_MAP_L2_PROMOTION_L2_128B,",
                "                               CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);",
                "    if (r != CUDA_SUCCESS) return (int)r;",
            ]
            params.append(f"&tma{t}")
        if src.dynamic_dims or src.grid_params:
            texts = grid_text(src) + ["1"] * (3 - len(grid_text(src)))
            grid = []
            for text in texts[:3]:
                expr = grid_c_expr(text, grid_names(kernel, src))
                if expr is None:
                    raise RuntimeError(f"export_library: the grid extent {text} of {src.entry} has no C form")
                grid.append(f"(unsigned int)({expr})")
        else:
            g = list(src.grid([])) + [1] * (3 - len(src.grid([])))
            grid = [f"{x}u" for x in g[:3]]
        b = list(src.block) + [1] * (3 - len(src.block))
        body += [
            f"    void* params[] = {{{', '.join(params) or '0'}}};",
            f"    unsigned int gx = {grid[0]}, gy = {grid[1]}, gz = {grid[2]};",
            "    if (gx && gy && gz) {",
        ]
        if programmatic_launch(src, backend.arch):
            # T.pdl_sync: the kernel may start while the previous one in the stream runs, as
            # the JIT launches it (CudaModule.programmatic_launch)
            body += [
                "      CUlaunchAttribute attr;",
                "      memset(&attr, 0, sizeof attr);",
                "      attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;",
                "      attr.value.programmaticStreamSerializationAllowed = 1;",
                f"      CUlaunchConfig config = {{gx, gy, gz, {b[0]}, {b[1]}, {b[2]}, {src.shared_bytes}u, (CUstream)stream,",
                "                                &attr, 1};",
                f"      r = cuLaunchKernelEx(&config, tl_functions[{k}], params, 0);",
            ]
        else:
            body += [
                f"      r = cuLaunchKernel(tl_functions[{k}], gx, gy, gz, {b[0]}, {b[1]}, {b[2]}, {src.shared_bytes}u,",
                "                         (CUstream)stream, params, 0);",
            ]
        body += [
            "      if (r != CUDA_SUCCESS) return (int)r;",
            "    }",
            "  }",
        ]
    entries = ", ".join(f'"{src.entry}"' for src in backend.srcs)
    shared = ", ".join(f"{src.shared_bytes}u" for src in backend.srcs)
    n = len(backend.srcs)
    return "\n".join([
        f"/* Generated by tilelang export_library: launcher of kernel '{kernel.name}' for CUDA {backend.arch}.",
        " * Needs only the CUDA driver (libcuda): the cubin is embedded below. Not thread-safe on its",
        " * first call (module load); later calls from several threads are fine. */",
        "#include <cuda.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        f'#include "{header_name}"',
        "",
        "static const unsigned char tl_cubin[] = {",
        _wrap_bytes(cubin),
        "};",
        f"static const char* const tl_entries[{n}] = {{{entries}}};",
        f"static const unsigned int tl_shared_bytes[{n}] = {{{shared}}};",
        "static CUcontext tl_context;",
        "static CUmodule tl_module;",
        f"static CUfunction tl_functions[{n}];",
        "",
        "/* Loads the module into the current context (again when the context changed). */",
        "static CUresult tl_load(void) {",
        "  CUcontext ctx = 0;",
        "  CUresult r = cuCtxGetCurrent(&ctx);",
        "  if (r != CUDA_SUCCESS) return r;",
        "  if (!ctx) return CUDA_ERROR_INVALID_CONTEXT;",
        "  if (tl_module && ctx == tl_context) return CUDA_SUCCESS;",
        "  r = cuModuleLoadData(&tl_module, tl_cubin);",
        "  if (r != CUDA_SUCCESS) return r;",
        f"  for (int k = 0; k < {n}; ++k) {{",
        "    r = cuModuleGetFunction(&tl_functions[k], tl_module, tl_entries[k]);",
        "    if (r != CUDA_SUCCESS) return r;",
        "    if (tl_shared_bytes[k] > 48u * 1024u) {",
        "      r = cuFuncSetAttribute(tl_functions[k], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,",
        "                             (int)tl_shared_bytes[k]);",
        "      if (r != CUDA_SUCCESS) return r;",
        "    }",
        "  }",
        "  tl_context = ctx;",
        "  return CUDA_SUCCESS;",
        "}",
        "",
        f"int {function}({', '.join(decl + ['void* stream'])}) {{",
        "  CUresult r = tl_load();",
        "  if (r != CUDA_SUCCESS) return (int)r;",
        *body,
        "  return 0;",
        "}",
        "",
    ])


def _wrap_bytes(data: bytes, per_line=24) -> str:
    return "\n".join("  " + ",".join(str(b) for b in data[i:i + per_line]) + ","
                     for i in range(0, len(data), per_line))


_C_CAST = {"int64": "int64_t", "int32": "int32_t", "uint32": "uint32_t", "uint64": "uint64_t"}


def grid_c_expr(text: str, dims):
    """The printer's form of a grid extent as a C expression over the dynamic dimensions
    `dims`, or None when it uses anything beyond casts, integer literals, + - * and // of
    non-negative values (then the header gives the expression as a comment only)."""
    out = re.sub(r'T\.Cast\("(int64|int32|uint32|uint64)",\s*', lambda m: f"(({_C_CAST[m.group(1)]})", text)
    out = re.sub(r"T\.(?:u?int(?:32|64))\((-?\d+)\)", r"((int64_t)\1)", out)
    out = out.replace("//", "/")  # sizes are non-negative: floor division is C's division
    rest = re.sub(r"\b(" + "|".join(map(re.escape, dims)) + r")\b", "", out) if dims else out
    rest = re.sub(r"\b(int64_t|int32_t|uint32_t|uint64_t)\b|\d+", "", rest)
    if re.search(r"[^\s()+\-*/]", rest):
        return None
    # each dimension is a macro argument: parenthesize it
    return re.sub(r"\b(" + "|".join(map(re.escape, dims)) + r")\b", r"(\1)", out) if dims else out


def grid_names(kernel, src):
    """The names a grid extent may use: the dynamic dimensions, then the scalar parameters it reads."""
    return [d[0] for d in src.dynamic_dims] + [kernel.params[pi].name for pi in src.grid_params]


def grid_text(src):
    text = getattr(src, "grid_text", None)
    if text is not None:
        return list(text)
    return ["?"] * 3


# --------------------------------------------------------------------------------------- SASS

def _cuda_tool(name):
    for folder in [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"]:
        if folder and os.access(os.path.join(folder, "bin", name), os.X_OK):
            return os.path.join(folder, "bin", name)
    return shutil.which(name)


def cuda_sass(cubin_path) -> str:
    """SASS of a cubin: `cuobjdump --dump-sass`, else `nvdisasm`."""
    import subprocess

    for tool, args in (("cuobjdump", ["--dump-sass"]), ("nvdisasm", ["-c"])):
        exe = _cuda_tool(tool)
        if exe is None:
            continue
        run = subprocess.run([exe, *args, cubin_path], capture_output=True, text=True)
        if run.returncode != 0:
            raise RuntimeError(f"get_sass: {tool} failed on {cubin_path}: {run.stderr.strip()[:500]}")
        return run.stdout
    raise RuntimeError("get_sass needs cuobjdump or nvdisasm (CUDA toolkit) on PATH, under $CUDA_HOME/bin or "
                       "/usr/local/cuda/bin; neither was found (get_ptx needs neither)")


# ---------------------------------------------------------------------------------------- PTX

def _nvrtc():
    from .. import _tl
    from .cuda_backend import _search_dirs

    candidates = []
    if os.environ.get("TILELANG_NVRTC_PATH"):
        candidates.append(os.environ["TILELANG_NVRTC_PATH"])
    ok, desc = _tl.find_cuda_compiler(_search_dirs())
    m = re.search(r"\(([^)]*libnvrtc[^)]*)\)", desc or "")
    if ok and m:
        candidates.append(m.group(1))
    candidates += ["libnvrtc.so", "/usr/local/cuda/lib64/libnvrtc.so"]
    for c in candidates:
        try:
            return ctypes.CDLL(c)
        except OSError:
            continue
    raise RuntimeError("get_ptx: no NVRTC library could be loaded (set TILELANG_NVRTC_PATH)")


def cuda_ptx(kernel) -> str:
    """PTX for the kernel's CUDA source, from NVRTC (compute_XX of the kernel's arch)."""
    from .cuda_backend import _templates_root

    backend = kernel._cuda
    lib = _nvrtc()
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), backend.source.encode(), b"tl_kernel.cu", 0, None, None)
    if rc != 0:
        raise RuntimeError(f"nvrtcCreateProgram failed ({rc})")
    try:
        opts = [f"--gpu-architecture={backend.arch.replace('sm_', 'compute_')}", "-std=c++17", "-default-device",
                "-lineinfo", f"-I{_templates_root()}"]
        opts += list(backend.nvrtc_flags)  # the kernel's own: compile_flags, fast math, definitions
        argv = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        rc = lib.nvrtcCompileProgram(prog, len(opts), argv)
        if rc != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise RuntimeError(f"NVRTC failed to produce PTX ({rc}):\n{log.value.decode(errors='replace')}")
        size = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, buf)
        return buf.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


# ------------------------------------------------------------------------------ host side

def host_description(kernel) -> str:
    """A readable account of what the host does when the kernel is called."""
    lines = [f"// Host side of kernel {kernel.name!r} (target {kernel.target}); the call path is Python",
             "// (tilelang/jit/kernel.py), shown here as the steps it takes.", "//",
             f"// {kernel.name}({', '.join(kernel.params[i].name for i in kernel.in_idx)})"]
    step = 1
    for i in kernel.in_idx:
        p = kernel.params[i]
        if p.is_tensor:
            lines.append(f"// {step}. check {p.name}: dtype {p.dtype}, shape {p.shape_str()}, contiguous"
                         + (", on the CUDA device" if kernel.target == "cuda" else ""))
        else:
            lines.append(f"// {step}. check {p.name}: a {p.dtype} scalar in range")
        step += 1
    for name, pi, d, kind in kernel.dynamic_dims:
        what = "stride" if kind == "stride" else "dimension"
        lines.append(f"// {step}. bind dynamic {what} {name} = {kernel.params[pi].name}.{kind}[{d}]")
        step += 1
    for i in kernel.alloc_idx:
        p = kernel.params[i]
        what = "output" if i in kernel.out_idx else "workspace (T.alloc_global, freed after the call)"
        lines.append(f"// {step}. allocate {what} {p.name}: {p.dtype}{p.shape_str()}")
        step += 1
    args = [p.name for p in kernel.params] + [n for n, *_ in kernel.dynamic_dims]
    if kernel.target == "cpu":
        lines.append(f"// {step}. call {kernel.entry}(TLArg[{len(args)}] = {{{', '.join(args)}}}) in "
                     f"{getattr(kernel, 'library_path', '?')}; the grid runs as an OpenMP loop nest")
    else:
        b = kernel._cuda
        for k, src in enumerate(b.srcs):
            grid = src.grid([]) if not (src.dynamic_dims or src.grid_params) else grid_text(src)
            tma = f", plus {len(src.tma_specs)} TMA descriptor(s) encoded from the tensors" if src.tma_specs else ""
            lines.append(f"// {step}. launch {src.entry}<<<grid({', '.join(map(str, grid))}), block("
                         f"{', '.join(map(str, src.block))}), {src.shared_bytes} B dynamic shared>>>"
                         f"({', '.join(args)}{tma}) on the current torch stream")
            step += 1
    lines.append("// then return the output(s)" if kernel.out_idx else "// then return None")
    return "\n".join(lines) + "\n"
