// SPDX-License-Identifier: Apache-2.0
/// \file The CUDA compilers behind BuildCudaCubin: NVRTC opened with dlopen (from
/// $TILELANG_NVRTC_PATH, the system, pip's nvidia wheels or the toolkit), else nvcc run as
/// a process. Both are asked for ptxas' resource report (-v), which the caller parses.
#include <dlfcn.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "cuda_internal.h"
#include "tl/support/file_util.h"

namespace tl::runtime::cuda {
namespace {

using nvrtcProgram = struct _nvrtcProgram*;
using nvrtcResult = int;
constexpr nvrtcResult kNvrtcSuccess = 0;

/// The NVRTC entry points we use (signatures from the NVRTC reference).
struct Nvrtc {
  nvrtcResult (*Version)(int*, int*);
  const char* (*GetErrorString)(nvrtcResult);
  nvrtcResult (*CreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                               const char* const*);
  nvrtcResult (*DestroyProgram)(nvrtcProgram*);
  nvrtcResult (*CompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*GetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*GetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*GetCUBIN)(nvrtcProgram, char*);
  std::string path;  // the library file that was loaded
  int major = 0, minor = 0;
};

bool IsFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool IsDir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Dirname(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

/// Candidate library files, in the order of preference the package documents.
std::vector<std::string> NvrtcCandidates(const std::vector<std::string>& search_dirs) {
  static const char* kSonames[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
  std::vector<std::string> out;
  if (const char* env = std::getenv("TILELANG_NVRTC_PATH"); env && *env) {
    if (IsDir(env)) {
      for (const char* so : kSonames) out.push_back(std::string(env) + "/" + so);
    } else {
      out.push_back(env);
    }
  }
  for (const char* so : kSonames) out.push_back(so);  // the loader's own search path
  // pip's wheels: nvidia-cuda-nvrtc(-cu12) and CUDA 13's nvidia/cu13 layout.
  for (const std::string& dir : search_dirs) {
    for (const char* sub : {"/nvidia/cu13/lib/", "/nvidia/cuda_nvrtc/lib/", "/"}) {
      for (const char* so : kSonames) {
        if (IsFile(dir + sub + so)) out.push_back(dir + sub + so);
      }
    }
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* home = std::getenv(env);
    if (home && *home) {
      for (const char* so : kSonames) out.push_back(std::string(home) + "/lib64/" + so);
    }
  }
  for (const char* so : kSonames) out.push_back(std::string("/usr/local/cuda/lib64/") + so);
  return out;
}

/// Opens the first NVRTC that loads and has every symbol; nullptr (and `tried`) if none.
std::unique_ptr<Nvrtc> OpenNvrtc(const std::vector<std::string>& search_dirs, std::string* tried) {
  for (const std::string& cand : NvrtcCandidates(search_dirs)) {
    void* lib = ::dlopen(cand.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    auto n = std::make_unique<Nvrtc>();
    bool ok = true;
    auto get = [&](auto* slot, const char* name) {
      *slot = reinterpret_cast<std::remove_pointer_t<decltype(slot)>>(::dlsym(lib, name));
      ok = ok && *slot;
    };
    get(&n->Version, "nvrtcVersion");
    get(&n->GetErrorString, "nvrtcGetErrorString");
    get(&n->CreateProgram, "nvrtcCreateProgram");
    get(&n->DestroyProgram, "nvrtcDestroyProgram");
    get(&n->CompileProgram, "nvrtcCompileProgram");
    get(&n->GetProgramLogSize, "nvrtcGetProgramLogSize");
    get(&n->GetProgramLog, "nvrtcGetProgramLog");
    get(&n->GetCUBINSize, "nvrtcGetCUBINSize");
    get(&n->GetCUBIN, "nvrtcGetCUBIN");
    if (!ok || n->Version(&n->major, &n->minor) != kNvrtcSuccess) {
      ::dlclose(lib);
      continue;
    }
    // The file actually loaded (a soname resolves through the loader's search path).
    struct link_map* map = nullptr;
    n->path = ::dlinfo(lib, RTLD_DI_LINKMAP, &map) == 0 && map ? map->l_name : cand;
    return n;  // kept open for the life of the process
  }
  *tried = "libnvrtc.so.13/.12/.so via $TILELANG_NVRTC_PATH, the loader path, " +
           std::to_string(search_dirs.size()) +
           " search dirs (nvidia/cu13/lib, nvidia/cuda_nvrtc/lib), $CUDA_HOME and "
           "/usr/local/cuda/lib64";
  return nullptr;
}

/// NVRTC, loaded once. A failure is not remembered: a later call may pass search dirs.
const Nvrtc* GetNvrtc(const std::vector<std::string>& search_dirs, std::string* tried) {
  static std::mutex mu;
  static std::unique_ptr<Nvrtc> nvrtc;
  std::lock_guard<std::mutex> lock(mu);
  if (!nvrtc) nvrtc = OpenNvrtc(search_dirs, tried);
  return nvrtc.get();
}

/// nvcc on PATH, under $CUDA_HOME, or in /usr/local/cuda; "" if none.
std::string FindNvcc() {
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':')) {
      if (!dir.empty() && ::access((dir + "/nvcc").c_str(), X_OK) == 0) return dir + "/nvcc";
    }
  }
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    const char* home = std::getenv(env);
    if (home && *home && ::access((std::string(home) + "/bin/nvcc").c_str(), X_OK) == 0) {
      return std::string(home) + "/bin/nvcc";
    }
  }
  return ::access("/usr/local/cuda/bin/nvcc", X_OK) == 0 ? "/usr/local/cuda/bin/nvcc" : "";
}

/// nvcc's identity: the last line of --version names the exact build.
std::string NvccIdentity(const std::string& nvcc) {
  static std::mutex mu;
  static std::string path, identity;
  std::lock_guard<std::mutex> lock(mu);
  if (path == nvcc) return identity;
  std::string out;
  if (RunCommand(ShellQuote(nvcc) + " --version", &out) != 0) {
    throw std::runtime_error("nvcc at " + nvcc + " could not be run: " + out);
  }
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) out.pop_back();
  path = nvcc;
  identity = "nvcc " + out.substr(out.rfind('\n') + 1);
  return identity;
}

CompileOutput CompileNvrtc(const Nvrtc& n, const std::string& source, const std::string& arch,
                           const std::vector<std::string>& include_dirs,
                           const std::vector<std::string>& flags) {
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-std=c++17", "-default-device",
                                   "--ptxas-options=-v", "-lineinfo"};
  for (const auto& dir : include_dirs) opts.push_back("-I" + dir);
  for (const auto& f : flags) opts.push_back(f);
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());

  nvrtcProgram prog = nullptr;
  nvrtcResult rc = n.CreateProgram(&prog, source.c_str(), "tl_kernel.cu", 0, nullptr, nullptr);
  if (rc != kNvrtcSuccess) {
    throw std::runtime_error(std::string("nvrtcCreateProgram failed: ") + n.GetErrorString(rc));
  }
  // Destroys the program on every path out, including exceptions.
  struct Guard {
    const Nvrtc& n;
    nvrtcProgram& p;
    ~Guard() { n.DestroyProgram(&p); }
  } guard{n, prog};
  rc = n.CompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  CompileOutput out;
  size_t log_size = 0;
  if (n.GetProgramLogSize(prog, &log_size) == kNvrtcSuccess && log_size > 1) {
    out.log.resize(log_size);
    n.GetProgramLog(prog, out.log.data());
    while (!out.log.empty() && out.log.back() == '\0') out.log.pop_back();
  }
  if (rc != kNvrtcSuccess) {
    std::string cmd = "nvrtc";
    for (const auto& o : opts) cmd += " " + o;
    throw std::runtime_error(std::string("NVRTC failed to compile the kernel (") +
                             n.GetErrorString(rc) + ")\n" + cmd + "\n" + out.log);
  }
  size_t size = 0;
  if (n.GetCUBINSize(prog, &size) != kNvrtcSuccess || size == 0) {
    throw std::runtime_error("NVRTC produced no cubin for " + arch +
                             " (a virtual compute_XX architecture gives PTX only; use sm_XX)");
  }
  out.cubin.resize(size);
  n.GetCUBIN(prog, out.cubin.data());
  return out;
}

CompileOutput CompileNvcc(const std::string& nvcc, const std::string& source,
                          const std::string& arch, const std::vector<std::string>& include_dirs,
                          const std::vector<std::string>& flags, const std::string& work_dir) {
  std::random_device rd;
  std::string base = work_dir + "/nvcc." + std::to_string(::getpid()) + "." + std::to_string(rd());
  std::string src = base + ".cu", cubin = base + ".cubin";
  {
    std::ofstream f(src, std::ios::binary);
    f << source;
    if (!f) throw std::runtime_error("cannot write kernel source to " + src);
  }
  std::string cmd = ShellQuote(nvcc) + " -cubin -arch=" + arch + " -std=c++17 -Xptxas -v -lineinfo";
  for (const auto& dir : include_dirs) cmd += " -I" + ShellQuote(dir);
  for (const auto& f : flags) cmd += " " + ShellQuote(f);
  cmd += " -o " + ShellQuote(cubin) + " " + ShellQuote(src);
  CompileOutput out;
  int status = RunCommand(cmd, &out.log);
  std::ifstream in(cubin, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  out.cubin = ss.str();
  ::unlink(src.c_str());
  ::unlink(cubin.c_str());
  if (status != 0 || out.cubin.empty()) {
    throw std::runtime_error("nvcc failed to compile the kernel (exit " + std::to_string(status) +
                             ")\n" + cmd + "\n" + out.log);
  }
  return out;
}

}  // namespace

CompilerChoice ChooseCompiler(const std::string& want, const std::vector<std::string>& search_dirs) {
  if (!want.empty() && want != "nvrtc" && want != "nvcc") {
    throw std::invalid_argument("unknown CUDA compiler '" + want + "' (use \"nvrtc\" or \"nvcc\")");
  }
  std::string tried;
  if (want != "nvcc") {
    if (const Nvrtc* n = GetNvrtc(search_dirs, &tried)) {
      std::string version = std::to_string(n->major) + "." + std::to_string(n->minor);
      struct stat st{};
      ::stat(n->path.c_str(), &st);
      // The file size tells apart updates that report the same major.minor.
      return {"nvrtc", "nvrtc " + version + " size " + std::to_string(st.st_size),
              "nvrtc " + version + " (" + n->path + ")", n->path};
    }
    if (want == "nvrtc") {
      throw std::runtime_error("NVRTC could not be loaded (tried " + tried +
                               "); pip install nvidia-cuda-nvrtc, or set TILELANG_NVRTC_PATH");
    }
  }
  std::string nvcc = FindNvcc();
  if (nvcc.empty()) {
    throw std::runtime_error(
        "no CUDA compiler found: NVRTC could not be loaded (tried " + tried +
        ") and nvcc is not on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin; pip install "
        "nvidia-cuda-nvrtc, set TILELANG_NVRTC_PATH, or install the CUDA toolkit");
  }
  std::string identity = NvccIdentity(nvcc);
  return {"nvcc", identity, identity + " (" + nvcc + ")", nvcc};
}

CompileOutput Compile(const CompilerChoice& compiler, const std::string& source,
                      const std::string& arch, const std::vector<std::string>& include_dirs,
                      const std::vector<std::string>& flags, const std::string& work_dir) {
  if (compiler.kind == "nvrtc") {
    std::string unused;
    const Nvrtc* n = GetNvrtc({}, &unused);  // loaded by ChooseCompiler already
    if (!n) throw std::runtime_error("NVRTC was chosen but is no longer loaded");
    return CompileNvrtc(*n, source, arch, include_dirs, flags);
  }
  return CompileNvcc(compiler.path, source, arch, include_dirs, flags, work_dir);
}

std::string ToolkitIncludeDir(const CompilerChoice& compiler) {
  // <root>/lib64/libnvrtc.so, <root>/bin/nvcc and the wheels' nvidia/cu13/lib all keep
  // the headers in ../include, beside the lib or bin folder.
  std::string include = Dirname(Dirname(compiler.path)) + "/include";
  return IsFile(include + "/cuda_fp16.h") ? include : "";
}

}  // namespace tl::runtime::cuda
