// SPDX-License-Identifier: Apache-2.0
/// \file Host-compiler driver with a content-addressed disk cache, and dlopen loading.
#include "tl/support/file_util.h"
#include "tl/runtime/cpu_module.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

namespace tl::runtime {
namespace {

uint64_t Fnv1a(const std::string& data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

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

/// Contents of the device headers, hashed once per process, so that a header change
/// invalidates cached libraries.
const std::string& HeaderHash(const std::string& include_dir) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::string> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(include_dir);
  if (it != cache.end()) return it->second;
  std::string all;
  for (const char* f : {"tl_cpu.h", "types.h", "math.h", "atomic.h", "gemm.h"}) {
    all += ReadFile(include_dir + "/" + f);
  }
  return cache[include_dir] = ContentHash(all);
}

}  // namespace

std::string ContentHash(const std::string& data) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx",
                static_cast<unsigned long long>(Fnv1a(data, 0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(Fnv1a(data, 0x84222325cbf29ce4ULL)));
  return buf;
}

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

  std::string key = ContentHash(source + "\n//" + CompilerIdentity(compiler) + "\n//" + flag_str +
                                "\n//" + HeaderHash(options.include_dir));
  std::string dir = options.cache_dir + "/cpu/" + key.substr(0, 2);
  std::string lib = dir + "/" + key + ".so";
  CpuBuildResult result;
  result.library_path = lib;
  if (FileExists(lib)) {
    result.cache_hit = true;
    return result;
  }
  MakeDirs(dir);
  // Unique temporary names: concurrent builders of the same key each write their own
  // files and the last rename wins; rename(2) is atomic, so readers see a whole file.
  std::random_device rd;
  std::string tmp_tag = "." + std::to_string(::getpid()) + "." + std::to_string(rd()) + ".tmp";
  std::string src_path = dir + "/" + key + ".cpp";
  std::string tmp_src = src_path + tmp_tag, tmp_lib = lib + tmp_tag;
  {
    std::ofstream out(tmp_src, std::ios::binary);
    out << source;
    if (!out) throw std::runtime_error("cannot write kernel source to " + tmp_src);
  }
  std::string cmd = compiler + flag_str + " -I" + ShellQuote(options.include_dir) + " -x c++ " +
                    ShellQuote(tmp_src) + " -o " + ShellQuote(tmp_lib);
  result.command = cmd;
  std::string output;
  int status = RunCommand(cmd, &output);
  if (status != 0 || !FileExists(tmp_lib)) {
    ::unlink(tmp_src.c_str());
    ::unlink(tmp_lib.c_str());
    throw std::runtime_error("host C++ compiler failed (exit " + std::to_string(status) + ")\n" +
                             cmd + "\n" + output);
  }
  ::rename(tmp_src.c_str(), src_path.c_str());
  if (::rename(tmp_lib.c_str(), lib.c_str()) != 0) {
    ::unlink(tmp_lib.c_str());
    throw std::runtime_error("cannot move the compiled kernel into the cache at " + lib);
  }
  return result;
}

CpuModule::CpuModule(const std::string& path, const std::string& entry) {
  // RTLD_NODELETE: unloading a kernel library could unload the OpenMP runtime it pulled
  // in while OpenMP worker threads still run.
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!handle_) throw std::runtime_error(std::string("cannot load kernel library: ") + ::dlerror());
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
