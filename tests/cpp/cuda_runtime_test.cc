// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA runtime layer on a machine that may have no GPU and no driver: cubins
/// are built (NVRTC and nvcc, when found) and cached, ptxas' report is parsed, and the
/// driver queries answer "unavailable" with a reason instead of crashing.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tl/runtime/cuda_module.h"

namespace tl::runtime {
namespace {

const char* kKernel = R"(
extern "C" __global__ void vec_add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

/// Temporary dirs, removed when the test program exits.
struct TempDirs {
  std::vector<std::string> dirs;
  ~TempDirs() {
    for (const auto& d : dirs) std::filesystem::remove_all(d);
  }
} temp_dirs;

std::string TempDir() {
  char tmpl[] = "/tmp/tl_cuda_test_XXXXXX";
  char* dir = ::mkdtemp(tmpl);
  if (!dir) throw std::runtime_error("mkdtemp failed");
  temp_dirs.dirs.push_back(dir);
  return dir;
}

/// Builds twice for `arch` with `compiler`: the first compiles, the second hits the cache.
void BuildTwice(const std::string& compiler, const std::string& arch) {
  CudaBuildOptions opts;
  opts.arch = arch;
  opts.cache_dir = TempDir();
  opts.compiler = compiler;
  CudaBuildResult first = BuildCudaCubin(kKernel, opts);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_NE(first.compiler.find(compiler), std::string::npos) << first.compiler;
  std::ifstream cubin(first.cubin_path, std::ios::binary);
  char magic[4] = {};
  cubin.read(magic, 4);
  EXPECT_EQ(std::string(magic, 4), "\x7f" "ELF") << "a cubin is an ELF file";
  EXPECT_GT(first.usage.registers, 0) << first.log;
  EXPECT_EQ(first.usage.spill_stores_bytes, 0);
  ASSERT_EQ(first.per_function.count("vec_add"), 1u) << first.log;

  CudaBuildResult second = BuildCudaCubin(kKernel, opts);
  EXPECT_TRUE(second.cache_hit);
  EXPECT_EQ(second.cubin_path, first.cubin_path);
  EXPECT_EQ(second.usage.registers, first.usage.registers) << "usage survives a cache hit";

  // Another architecture or flag is another cache entry.
  opts.flags = {"--use_fast_math"};
  CudaBuildResult third = BuildCudaCubin(kKernel, opts);
  EXPECT_FALSE(third.cache_hit);
  EXPECT_NE(third.cubin_path, first.cubin_path);
}

bool HaveCompiler(const std::string& which) {
  try {
    CudaBuildOptions opts;
    opts.arch = "sm_80";
    opts.cache_dir = TempDir();
    opts.compiler = which;
    BuildCudaCubin("extern \"C\" __global__ void k() {}", opts);
    return true;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    return msg.find("could not be loaded") == std::string::npos &&
           msg.find("no CUDA compiler") == std::string::npos;
  }
}

TEST(CudaRuntime, NvrtcBuildsAndCaches) {
  if (!HaveCompiler("nvrtc")) GTEST_SKIP() << "NVRTC not found";
  BuildTwice("nvrtc", "sm_80");
  BuildTwice("nvrtc", "sm_90a");
}

TEST(CudaRuntime, NvccBuildsAndCaches) {
  if (!HaveCompiler("nvcc")) GTEST_SKIP() << "nvcc not found";
  BuildTwice("nvcc", "sm_80");
  BuildTwice("nvcc", "sm_90a");
}

TEST(CudaRuntime, CompileErrorCarriesTheLog) {
  std::string description;
  if (!FindCudaCompiler({}, &description)) GTEST_SKIP() << description;
  CudaBuildOptions opts;
  opts.arch = "sm_80";
  opts.cache_dir = TempDir();
  try {
    BuildCudaCubin("extern \"C\" __global__ void k() { undeclared_name = 1; }", opts);
    FAIL() << "expected a compile error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_name"), std::string::npos) << e.what();
  }
}

TEST(CudaRuntime, HeaderEditsInvalidateTheCache) {
  std::string description;
  if (!FindCudaCompiler({}, &description)) GTEST_SKIP() << description;
  std::string inc = TempDir();
  std::ofstream(inc + "/my.h") << "#define VALUE 1\n";
  CudaBuildOptions opts;
  opts.arch = "sm_80";
  opts.cache_dir = TempDir();
  opts.include_dirs = {inc};
  const char* src = "#include \"my.h\"\nextern \"C\" __global__ void k(int* p) { *p = VALUE; }";
  EXPECT_FALSE(BuildCudaCubin(src, opts).cache_hit);
  EXPECT_TRUE(BuildCudaCubin(src, opts).cache_hit);
  std::ofstream(inc + "/my.h") << "#define VALUE 2\n";
  EXPECT_FALSE(BuildCudaCubin(src, opts).cache_hit);
}

TEST(CudaRuntime, RejectsBadArch) {
  CudaBuildOptions opts;
  opts.arch = "compute_80";
  opts.cache_dir = TempDir();
  EXPECT_THROW(BuildCudaCubin(kKernel, opts), std::invalid_argument);
}

TEST(CudaRuntime, ParsesPtxasReport) {
  const char* log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'gemm' for 'sm_90a'\n"
      "ptxas info    : Function properties for gemm\n"
      "    16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 128 registers, used 1 barriers, 32768 bytes smem, 400 bytes cmem[0]\n"
      "ptxas info    : Function properties for helper\n"
      "    999 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'small' for 'sm_90a'\n"
      "ptxas info    : Function properties for small\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, 360 bytes cmem[0]\n";
  std::map<std::string, ResourceUsage> funcs;
  ResourceUsage u = ParsePtxasLog(log, &funcs);
  EXPECT_EQ(u.registers, 128);
  EXPECT_EQ(u.shared_bytes, 32768);
  EXPECT_EQ(u.stack_bytes, 16) << "device function 'helper' is not an entry";
  EXPECT_EQ(u.spill_stores_bytes, 8);
  EXPECT_EQ(u.spill_loads_bytes, 12);
  ASSERT_EQ(funcs.size(), 2u);
  EXPECT_EQ(funcs["small"].registers, 10);
  EXPECT_EQ(funcs["small"].shared_bytes, 0);
}

TEST(CudaRuntime, DriverQueriesDoNotCrash) {
  std::string reason;
  bool available = CudaAvailable(&reason);
  if (available) {
    EXPECT_TRUE(reason.empty());
    EXPECT_GT(CudaDeviceCount(), 0);
    EXPECT_EQ(CudaDeviceArch(0).rfind("sm_", 0), 0u);
    return;
  }
  EXPECT_FALSE(reason.empty());
  EXPECT_EQ(CudaDeviceCount(), 0);
  EXPECT_THROW(CudaDeviceArch(0), std::runtime_error);
  try {
    CudaModule m("/nonexistent.cubin", "k");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot read cubin"), std::string::npos) << e.what();
  }
  std::string description;
  if (!FindCudaCompiler({}, &description)) return;
  CudaBuildOptions opts;
  opts.arch = "sm_80";
  opts.cache_dir = TempDir();
  CudaBuildResult built = BuildCudaCubin(kKernel, opts);
  try {
    CudaModule m(built.cubin_path, "vec_add");
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("CUDA is not available"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tl::runtime
