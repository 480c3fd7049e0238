// SPDX-License-Identifier: Apache-2.0
/// \file Host-compiler driver with a content-addressed disk cache, and dlopen loading.
#include "tl/support/cache_entry.h"
#include "tl/support/file_util.h"
#include "tl/runtime/cpu_module.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace tl::runtime {
namespace {

/// Bumped when the calling convention of generated libraries (TLArg), the fixed flags or
/// the cache layout change; with the package version it enters every key.
constexpr const char* kCacheVersion = "tl-cpu-cache-2 tilelang-0.1.0";

/// The compiler's identity (its --version banner), computed once per process.
const std::string& CompilerIdentity(const std::string& compiler) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(compiler);
  if (it != cache.end()) return it->second;
  std::string out;
  if (RunCommand(compiler + " --version", &out) != 0) {
    throw std::runtime_error("the host C++ compiler '" + compiler +
                             "' could not be run (set CXX to a working compiler): " + out);
  }
  return cache[compiler] = out.substr(0, out.find('\n'));
}

/// Names and contents of every header in the include folder, and of the headers shared
/// with CUDA that they include from the folder above (`#include "../float8.h"`), hashed
/// once per process, so that editing or adding a header invalidates cached libraries.
const std::string& HeaderHash(const std::string& include_dir) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(include_dir);
  if (it != cache.end()) return it->second;
  std::vector<std::string> files;
  ListFiles(include_dir, &files);
  std::sort(files.begin(), files.end());
  std::string all;
  std::vector<std::string> shared;
  for (const std::string& f : files) {
    const std::string text = ReadFile(f);
    all += f.substr(include_dir.size()) + "\n" + ContentHash(text) + "\n";
    const std::string mark = "#include \"../";
    for (size_t at = text.find(mark); at != std::string::npos; at = text.find(mark, at + 1)) {
      const size_t from = at + mark.size(), to = text.find('"', from);
      if (to != std::string::npos) shared.push_back(text.substr(from, to - from));
    }
  }
  std::sort(shared.begin(), shared.end());
  shared.erase(std::unique(shared.begin(), shared.end()), shared.end());
  for (const std::string& name : shared) {
    all += "../" + name + "\n" + ContentHash(ReadFile(include_dir + "/../" + name)) + "\n";
  }
  return cache[include_dir] = ContentHash(all);
}

/// What -march=native means on this machine: the processor's model and feature flags,
/// so that a cache folder shared between machines never hands one a library built for
/// another's instruction set.
const std::string& HostCpuIdentity() {
  static const std::string identity = [] {
    std::ifstream in("/proc/cpuinfo");
    std::string line, model, flags;
    while (std::getline(in, line) && (model.empty() || flags.empty())) {
      if (model.empty() && line.rfind("model name", 0) == 0) model = line;
      if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0)) flags = line;
    }
    return model + "\n" + flags;
  }();
  return identity;
}

/// Environment variables that change what the compiler includes or links.
std::string CompilerEnvironment() {
  std::string out;
  for (const char* name : {"CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "LIBRARY_PATH"}) {
    const char* v = std::getenv(name);
    if (v && *v) out += std::string(name) + "=" + v + "\n";
  }
  return out;
}

}  // namespace

std::string ContentHash(const std::string& data) { return ContentHash128(data); }

CpuBuildResult BuildCpuLibrary(const std::string& source, const CpuBuildOptions& options) {
  std::string compiler = options.compiler;
  if (compiler.empty()) {
    const char* env = std::getenv("CXX");
    compiler = env && *env ? env : "c++";
  }
  std::vector<std::string> flags = {"-std=c++17", "-O3", "-march=native", "-fopenmp",
                                    "-shared", "-fPIC", "-fno-math-errno"};
  for (const auto& f : options.extra_flags) flags.push_back(f);
  std::string flag_str;
  for (const auto& f : flags) flag_str += " " + f;

  std::string key = ContentHash(source + "\n//" + kCacheVersion + "\n//" + compiler + "\n//" +
                                CompilerIdentity(compiler) + "\n//" + flag_str + "\n//" +
                                HeaderHash(options.include_dir) + "\n//" + HostCpuIdentity() +
                                "\n//" + CompilerEnvironment());
  std::string dir = options.cache_dir + "/cpu/" + key.substr(0, 2);
  CpuBuildResult result;
  std::vector<std::string> paths;
  std::string problem;
  CacheLookup found = LookupCacheEntry(dir, key, {".so"}, &paths, &problem);
  if (found == CacheLookup::kHit) {
    result.library_path = paths[0];
    result.cache_hit = true;
    return result;
  }
  MakeDirs(dir);
  // The source goes to a name every builder of this key shares (written atomically, the
  // same bytes from each), so concurrent builds produce the same library.
  std::string src_path = dir + "/" + key + ".cpp";
  WriteAtomically(src_path, source);
  std::string tmp_lib = TempPathFor(dir + "/" + key + ".so");
  std::string cmd = compiler + flag_str + " -I" + ShellQuote(options.include_dir) + " -x c++ " +
                    ShellQuote(src_path) + " -o " + ShellQuote(tmp_lib);
  result.command = cmd;
  std::string output;
  int status = RunCommand(cmd, &output);
  if (status != 0 || !FileExists(tmp_lib)) {
    ::unlink(tmp_lib.c_str());
    throw std::runtime_error("host C++ compiler failed (exit " + std::to_string(status) + ")\n" +
                             cmd + "\n" + output);
  }
  result.library_path = StoreCacheEntry(dir, key, {{".so", tmp_lib}})[0];
  if (found == CacheLookup::kBroken) {
    // A damaged file is replaced by the rename when the rebuild gives the same bytes; it is
    // never deleted here, since a concurrent healer may have just stored that name again.
    AddCacheWarning("tilelang: " + problem + "; the kernel library was rebuilt");
  }
  return result;
}

namespace {

/// Marks the OpenMP runtime that kernel libraries pull in as never to be unloaded: when
/// the last kernel library is closed, its worker threads may still be parked in it.
void PinOpenMpRuntime() {
  static std::atomic<bool> pinned{false};
  if (pinned.load(std::memory_order_acquire)) return;
  for (const char* name : {"libgomp.so.1", "libomp.so.5", "libomp.so", "libiomp5.so"}) {
    if (::dlopen(name, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) pinned.store(true);
  }
}

}  // namespace

CpuModule::CpuModule(const std::string& path, const std::string& entry) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) throw std::runtime_error(std::string("cannot load kernel library: ") + ::dlerror());
  PinOpenMpRuntime();
  entry_ = reinterpret_cast<int32_t (*)(const TLArg*)>(::dlsym(handle_, entry.c_str()));
  if (!entry_) {
    ::dlclose(handle_);
    handle_ = nullptr;
    throw std::runtime_error("kernel library " + path + " has no entry point " + entry);
  }
}

CpuModule::~CpuModule() {
  if (handle_) ::dlclose(handle_);
}

int32_t CpuModule::Run(const std::vector<TLArg>& args) const { return entry_(args.data()); }

}  // namespace tl::runtime
