"""kernel.export_library: a CPU kernel becomes a shared library plus a C header that a plain
C program links against (no Python, no tilelang at run time); a CUDA kernel becomes its
cubin plus a header of launch facts (compiled for sm_90a without a GPU). Also the
introspection around it: get_host_source, show_source, resource_usage, get_ptx."""
import os
import shutil
import subprocess

import numpy as np
import pytest

import tilelang
import tilelang.language as T
from tilelang import _tl
from tilelang.jit.cuda_backend import _search_dirs
from conftest import assert_close

HAVE_CC = shutil.which(os.environ.get("CC", "cc")) is not None
HAVE_NVRTC, NVRTC = _tl.find_cuda_compiler(_search_dirs())


def scaled_matmul(block_M=32, K=64, N=48):
    M = T.dynamic("M")

    @T.prim_func
    def main(A: T.Tensor((M, K), "float32"), B: T.Tensor((K, N), "float32"), alpha: T.float32,
             C: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(N, 16), T.ceildiv(M, block_M), threads=128) as (bx, by):
            A_s = T.alloc_shared((block_M, 16), "float32")
            B_s = T.alloc_shared((16, 16), "float32")
            C_f = T.alloc_fragment((block_M, 16), "float32")
            T.clear(C_f)
            for k in T.Pipelined(T.ceildiv(K, 16), num_stages=2):
                T.copy(A[by * block_M, k * 16], A_s)
                T.copy(B[k * 16, bx * 16], B_s)
                T.gemm(A_s, B_s, C_f)
            for i, j in T.Parallel(block_M, 16):
                C_f[i, j] = C_f[i, j] * alpha
            T.copy(C_f, C[by * block_M, bx * 16])

    return main


# The C program fills A and B by these formulas, calls the exported function and writes C.
C_PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "mm.h"

int main(int argc, char** argv) {
  const int64_t M = atoi(argv[1]), K = 64, N = 48;
  float* A = malloc(sizeof(float) * M * K);
  float* B = malloc(sizeof(float) * K * N);
  float* C = malloc(sizeof(float) * M * N);
  for (int64_t i = 0; i < M * K; ++i) A[i] = (float)((i * 7) % 13) * 0.25f - 1.5f;
  for (int64_t i = 0; i < K * N; ++i) B[i] = (float)((i * 5) % 11) * 0.5f - 2.0f;
  int32_t status = tl_mm(A, B, 0.75f, C, M);
  if (status != 0) return 10 + status;
  FILE* f = fopen(argv[2], "wb");
  fwrite(C, sizeof(float), (size_t)(M * N), f);
  fclose(f);
  return 0;
}
"""


def _inputs(M, K=64, N=48):
    a = ((np.arange(M * K) * 7) % 13 * 0.25 - 1.5).astype(np.float32).reshape(M, K)
    b = ((np.arange(K * N) * 5) % 11 * 0.5 - 2.0).astype(np.float32).reshape(K, N)
    return a, b


@pytest.mark.cpu_target
@pytest.mark.skipif(not HAVE_CC, reason="no system C compiler")
def test_cpu_export_links_into_a_plain_c_program(tmp_path):
    kernel = tilelang.compile(scaled_matmul(), out_idx=[-1], target="cpu")
    out = tmp_path / "artifact"
    paths = kernel.export_library(str(out / "libmm.so"), symbol="tl_mm")
    assert paths == {"library": str(out / "libmm.so"), "header": str(out / "mm.h"), "symbol": "tl_mm"}
    header = (out / "mm.h").read_text()
    assert "int32_t tl_mm(float* A, float* B, float alpha, float* C, int64_t M);" in header
    assert "M: dynamic dimension (int64_t) = A.shape[0]" in header

    (tmp_path / "prog.c").write_text(C_PROGRAM)
    exe = tmp_path / "prog"
    # The kernel's own entry is named `main`, like the C program's: the export keeps it internal.
    subprocess.run([os.environ.get("CC", "cc"), "-O2", str(tmp_path / "prog.c"), f"-I{out}", str(out / "libmm.so"),
                    f"-Wl,-rpath,{out}", "-o", str(exe)], check=True, capture_output=True)
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert "python" not in ldd.lower() and "_tl" not in ldd
    env = {"PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "2"}  # no Python paths, no tilelang
    for M in (70, 128):  # a partial last tile, then whole tiles
        result_file = tmp_path / f"c{M}.bin"
        subprocess.run([str(exe), str(M), str(result_file)], check=True, env=env, cwd="/")
        c_from_c = np.fromfile(result_file, dtype=np.float32).reshape(M, 48)
        a, b = _inputs(M)
        assert_close(c_from_c, (a.astype(np.float64) @ b.astype(np.float64)) * 0.75, "float32")
        np.testing.assert_array_equal(c_from_c, kernel(a, b, 0.75))


@pytest.mark.cpu_target
@pytest.mark.skipif(not HAVE_CC, reason="no system C compiler")
def test_cpu_export_default_symbol_and_half_types(tmp_path):
    @T.prim_func
    def add_one(X: T.Tensor((16,), "float16"), n: T.int32, Y: T.Tensor((16,), "float16")):
        with T.Kernel(1, threads=16) as bx:
            for i in T.Parallel(16):
                Y[i] = X[i] + T.cast(n, "float16")

    kernel = tilelang.compile(add_one, out_idx=[-1], target="cpu")
    paths = kernel.export_library(str(tmp_path / "add_one.so"))
    assert paths["symbol"] == "tl_add_one"
    header = open(paths["header"]).read()
    assert "int32_t tl_add_one(uint16_t* X, int32_t n, uint16_t* Y);" in header
    # the header is valid C and C++
    for compiler, src in ((os.environ.get("CC", "cc"), "t.c"), ("c++", "t.cc")):
        if shutil.which(compiler):
            (tmp_path / src).write_text('#include "add_one.h"\nint f(void) { return TL_ADD_ONE_NUM_ARGS; }\n')
            subprocess.run([compiler, "-c", "-Wall", "-Werror", f"-I{tmp_path}", str(tmp_path / src), "-o",
                            str(tmp_path / (src + ".o"))], check=True, capture_output=True)


@pytest.mark.cpu_target
def test_cpu_introspection():
    kernel = tilelang.compile(scaled_matmul(), out_idx=[-1], target="cpu")
    host = kernel.get_host_source()
    assert "bind dynamic dimension M = A.shape[0]" in host and "allocate output C" in host
    assert kernel.host_source == host
    assert kernel.resource_usage == {} and kernel.n_regs is None and kernel.n_spills is None
    with pytest.raises(tilelang.TileLangRuntimeError, match="for CUDA kernels"):
        kernel.get_ptx()
    with pytest.raises(ValueError):
        kernel.show_source("device")


@pytest.mark.cpu_target
def test_show_source(capsys):
    kernel = tilelang.compile(scaled_matmul(), out_idx=[-1], target="cpu")
    kernel.show_source("both")
    out = capsys.readouterr().out
    assert kernel.get_kernel_source() in out and "Host side of kernel" in out


needs_nvrtc = pytest.mark.skipif(not HAVE_NVRTC, reason=f"no CUDA compiler: {NVRTC}")


def ws_gemm(M=512, N=512, K=512, bm=128, bn=128, bk=64, stages=3):
    @T.prim_func
    def gemm(A: T.Tensor((M, K), "float16"), B: T.Tensor((K, N), "float16"), C: T.Tensor((M, N), "float16")):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), threads=256) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for k in T.Pipelined(T.ceildiv(K, bk), num_stages=stages):
                T.copy(A[by * bm, k * bk], A_s)
                T.copy(B[k * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            T.copy(C_l, C[by * bm, bx * bn])

    return gemm


@needs_nvrtc
def test_cuda_export_writes_cubin_and_launch_header(tmp_path):
    kernel = tilelang.compile(ws_gemm(), out_idx=[-1], target="cuda -arch=sm_90a")
    paths = kernel.export_library(str(tmp_path / "gemm.cubin"))
    cubin = open(paths["cubin"], "rb").read()
    assert cubin[:4] == b"\x7fELF" and cubin == open(kernel._cuda.cubin_path, "rb").read()
    header = open(paths["header"]).read()
    src = kernel._cuda.src
    assert f'#define TL_GEMM_K0_ENTRY "{src.entry}"' in header
    assert "#define TL_GEMM_K0_GRID_X 4" in header and "#define TL_GEMM_K0_GRID_Y 4" in header
    assert f"#define TL_GEMM_K0_BLOCK_X {src.block[0]}" in header
    assert f"#define TL_GEMM_K0_SHARED_BYTES {src.shared_bytes}" in header
    # a warp-specialized GEMM takes one TMA descriptor per operand and one for C (its epilogue
    # is a TMA store: cuda-stage-accumulator-stores), and the header says so
    assert len(src.tma_specs) == 3
    assert "#define TL_GEMM_USES_TMA 1" in header and "#define TL_GEMM_K0_NUM_TMA_DESCRIPTORS 3" in header
    assert header.count("cuTensorMapEncodeTiled over launch argument") == 3
    assert f"Registers: {kernel.n_regs}," in header
    # the header is valid C
    if HAVE_CC:
        (tmp_path / "t.c").write_text('#include "gemm.h"\nconst char* e = TL_GEMM_K0_ENTRY;\n'
                                      "int s = TL_GEMM_K0_SHARED_BYTES * TL_GEMM_USES_TMA;\n")
        subprocess.run([os.environ.get("CC", "cc"), "-c", f"-I{tmp_path}", str(tmp_path / "t.c"), "-o",
                        str(tmp_path / "t.o")], check=True, capture_output=True)


@needs_nvrtc
def test_cuda_introspection_without_a_gpu(tmp_path):
    kernel = tilelang.compile(scaled_matmul(), out_idx=[-1], target="cuda -arch=sm_80")
    usage = kernel.resource_usage
    assert set(usage) >= {"registers", "spill_stores_bytes", "spill_loads_bytes"}
    if usage["registers"] is not None:
        assert kernel.n_regs == usage["registers"] > 0
        assert kernel.n_spills == usage["spill_stores_bytes"] + usage["spill_loads_bytes"]
    assert kernel.n_max_threads == 128
    ptx = kernel.get_ptx()
    assert ".target sm_80" in ptx and ".entry main_kernel" in ptx
    kernel.export_ptx(str(tmp_path / "k.ptx"))
    assert (tmp_path / "k.ptx").read_text() == ptx
    host = kernel.get_host_source()
    assert "launch main_kernel<<<grid(" in host and "block(128, 1, 1)" in host
    # a dynamic grid is written as its expression in the exported header
    paths = kernel.export_library(str(tmp_path / "mm.cubin"))
    header = open(paths["header"]).read()
    assert "#define TL_MAIN_K0_GRID_IS_DYNAMIC 1" in header and "grid depends on the dynamic dimensions" in header
    # ... and as C macros of the dynamic dimensions, which agree with the launcher's grid
    if HAVE_CC:
        (tmp_path / "g.c").write_text('#include <stdio.h>\n#include "mm.h"\nint main(void) {\n'
                                      '  for (int m = 1; m < 200; m += 23) printf("%u %u %u\\n", TL_MAIN_K0_GRID_X(m), '
                                      "TL_MAIN_K0_GRID_Y(m), TL_MAIN_K0_GRID_Z(m));\n  return 0;\n}\n")
        subprocess.run([os.environ.get("CC", "cc"), f"-I{tmp_path}", str(tmp_path / "g.c"), "-o", str(tmp_path / "g")],
                       check=True, capture_output=True)
        got = subprocess.run([str(tmp_path / "g")], check=True, capture_output=True, text=True).stdout.split("\n")
        want = [" ".join(map(str, kernel._cuda.src.grid([m]))) for m in range(1, 200, 23)]
        assert got[:-1] == want


@needs_nvrtc
def test_cuda_launcher_compiles_as_c(tmp_path):
    """The launcher is plain C against cuda.h (compiled, not run: no GPU needed)."""
    include = _cuda_include()
    if not HAVE_CC or include is None:
        pytest.skip("needs a C compiler and cuda.h")
    for func, arch in ((ws_gemm(), "sm_90a"), (scaled_matmul(), "sm_80")):
        kernel = tilelang.compile(func, out_idx=[-1], target=f"cuda -arch={arch}")
        paths = kernel.export_library(str(tmp_path / f"{kernel.name}.cubin"))
        header = open(paths["header"]).read()
        assert f"int {paths['symbol']}(" in header and "void* stream" in header
        subprocess.run([os.environ.get("CC", "cc"), "-Wall", "-Werror", "-c", paths["launcher"], f"-I{include}",
                        f"-I{tmp_path}", "-o", str(tmp_path / f"{kernel.name}.o")], check=True, capture_output=True)


def _cuda_include():
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "include", "cuda.h")):
            return os.path.join(root, "include")
    return None


# A C program: reads the inputs from files, copies them to the GPU, calls the exported
# launcher on the default stream and writes the output back. No Python, no tilelang.
CUDA_C_PROGRAM = r"""
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include "@HEADER@"

static void* load(const char* path, size_t bytes) {
  void* p = malloc(bytes);
  FILE* f = fopen(path, "rb");
  if (!f || fread(p, 1, bytes, f) != bytes) exit(3);
  fclose(f);
  return p;
}

#define CHECK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { fprintf(stderr, "%s: %d\n", #x, r_); return 4; } } while (0)

int main(int argc, char** argv) {
  size_t a_bytes = strtoull(argv[1], 0, 10), b_bytes = strtoull(argv[2], 0, 10), c_bytes = strtoull(argv[3], 0, 10);
  long long m = atoll(argv[4]);
  CUdevice dev; CUcontext ctx; CUdeviceptr a, b, c;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  void* ha = load(argv[5], a_bytes); void* hb = load(argv[6], b_bytes); void* hc = malloc(c_bytes);
  CHECK(cuMemAlloc(&a, a_bytes)); CHECK(cuMemAlloc(&b, b_bytes)); CHECK(cuMemAlloc(&c, c_bytes));
  CHECK(cuMemcpyHtoD(a, ha, a_bytes)); CHECK(cuMemcpyHtoD(b, hb, b_bytes));
  int status = @CALL@;
  if (status != 0) { fprintf(stderr, "launch: %d\n", status); return 5; }
  CHECK(cuCtxSynchronize());
  CHECK(cuMemcpyDtoH(hc, c, c_bytes));
  FILE* f = fopen(argv[7], "wb");
  fwrite(hc, 1, c_bytes, f);
  fclose(f);
  (void)m;
  return 0;
}
"""


@pytest.mark.parametrize("case", ["tma_gemm", "dynamic_scaled"])
def test_cuda_export_runs_from_a_c_program(tmp_path, case):
    torch = pytest.importorskip("torch")
    include = _cuda_include()
    if not torch.cuda.is_available() or not HAVE_CC or include is None:
        pytest.skip("needs a GPU, torch, a C compiler and cuda.h")
    rng = np.random.default_rng(11)
    if case == "tma_gemm":
        if torch.cuda.get_device_capability() < (9, 0):
            pytest.skip("TMA needs Hopper")
        kernel = tilelang.compile(ws_gemm(), out_idx=[-1], target="cuda")
        a = rng.standard_normal((512, 512)).astype(np.float16)
        b = rng.standard_normal((512, 512)).astype(np.float16)
        m, out_shape, out_dtype, call = 512, (512, 512), np.float16, "tl_gemm((void*)a, (void*)b, (void*)c, 0)"
        expected = kernel(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()).cpu().numpy()
    else:
        kernel = tilelang.compile(scaled_matmul(), out_idx=[-1], target="cuda")
        m = 77
        a, b = rng.standard_normal((m, 64)).astype(np.float32), rng.standard_normal((64, 48)).astype(np.float32)
        out_shape, out_dtype = (m, 48), np.float32
        call = "tl_main((void*)a, (void*)b, 0.75f, (void*)c, (int64_t)m, 0)"
        expected = kernel(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), 0.75).cpu().numpy()
    torch.cuda.synchronize()
    paths = kernel.export_library(str(tmp_path / "k.cubin"))
    (tmp_path / "prog.c").write_text(CUDA_C_PROGRAM.replace("@HEADER@", "k.h").replace("@CALL@", call))
    lib = os.path.join(os.path.dirname(include), "lib64", "stubs")
    subprocess.run([os.environ.get("CC", "cc"), str(tmp_path / "prog.c"), paths["launcher"], f"-I{include}",
                    f"-I{tmp_path}", f"-L{lib}", "-lcuda", "-o", str(tmp_path / "prog")], check=True,
                   capture_output=True)
    a.tofile(tmp_path / "a.bin")
    b.tofile(tmp_path / "b.bin")
    c_bytes = int(np.prod(out_shape)) * np.dtype(out_dtype).itemsize
    run = subprocess.run([str(tmp_path / "prog"), str(a.nbytes), str(b.nbytes), str(c_bytes), str(m),
                          str(tmp_path / "a.bin"), str(tmp_path / "b.bin"), str(tmp_path / "c.bin")],
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    got = np.fromfile(tmp_path / "c.bin", dtype=out_dtype).reshape(out_shape)
    # the same cubin on the same inputs: the same bits
    np.testing.assert_array_equal(got, expected)
    ref = a.astype(np.float64) @ b.astype(np.float64) * (1.0 if case == "tma_gemm" else 0.75)
    assert_close(got, ref, "float16" if case == "tma_gemm" else "float32", rtol=2e-2 if case == "tma_gemm" else 1e-4)


@needs_nvrtc
def test_sass_of_a_cuda_kernel(tmp_path):
    """cuobjdump (the GPU machine has it) disassembles the cubin; without it the error says
    which tools are needed."""
    from tilelang.jit.export import _cuda_tool

    kernel = tilelang.compile(ws_gemm(), out_idx=[-1], target="cuda -arch=sm_90a")
    if _cuda_tool("cuobjdump") is None and _cuda_tool("nvdisasm") is None:
        with pytest.raises(RuntimeError, match="cuobjdump or nvdisasm"):
            kernel.get_sass()
        return
    sass = kernel.get_sass()
    assert "HGMMA" in sass and "UTMALDG" in sass  # wgmma fed by TMA
    kernel.export_sass(str(tmp_path / "k.sass"))
    assert (tmp_path / "k.sass").read_text() == sass


@needs_nvrtc
def test_cuda_arch_from_the_environment(monkeypatch):
    """TILELANG_CUDA_ARCH names the arch of target='cuda' (a build machine without a GPU)."""
    monkeypatch.setenv("TILELANG_CUDA_ARCH", "sm_80")
    kernel = tilelang.compile(scaled_matmul(), out_idx=[-1], target="cuda")
    assert kernel._cuda.arch == "sm_80" and ".target sm_80" in kernel.get_ptx()


@needs_nvrtc
def test_cuda_grid_from_a_scalar_argument_is_exported(tmp_path):
    @T.prim_func
    def rows(A: T.Tensor((1024,), "float32"), n: T.int32):
        with T.Kernel(T.ceildiv(n, 128), threads=128) as bx:
            for i in T.Parallel(128):
                if bx * 128 + i < n:
                    A[bx * 128 + i] = A[bx * 128 + i] * 2

    kernel = tilelang.compile(rows, target="cuda -arch=sm_90a")
    src = kernel._cuda.src
    assert list(src.grid_params) == [1] and list(src.grid([300])) == [3, 1, 1]
    header = open(kernel.export_library(str(tmp_path / "rows.cubin"))["header"]).read()
    assert "#define TL_ROWS_K0_GRID_IS_DYNAMIC 1" in header and "TL_ROWS_K0_GRID_X(n)" in header
    assert "<<<grid(" in kernel.get_host_source() and "(A, n) on the current torch stream" in kernel.get_host_source()
