// SPDX-License-Identifier: Apache-2.0
/// \file BuildCudaCubin: a content-addressed disk cache in front of the CUDA compilers,
/// and the parser for ptxas' resource report. The compiler log is stored beside each
/// cubin so that a cache hit still knows its registers, spills and shared memory.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>

#include "cuda_internal.h"
#include "tl/support/cache_entry.h"
#include "tl/support/file_util.h"
#include "tl/runtime/cpu_module.h"
#include "tl/runtime/cuda_module.h"
#include "tl/target/cuda_target.h"

namespace tl::runtime {
namespace {

/// Bumped when the fixed compiler options or the cache layout change.
constexpr const char* kCacheVersion = "tl-cuda-cache-2 tilelang-0.1.0";
/// Headers beyond this many bytes in one include dir are keyed by size and mtime only,
/// so that passing a whole toolkit include dir does not read hundreds of megabytes.
constexpr size_t kHeaderContentBudget = 16u << 20;

/// A hash of the headers a kernel may include, so that editing one invalidates the cache.
std::string HeaderDigest(const std::vector<std::string>& include_dirs) {
  std::string all;
  for (const std::string& dir : include_dirs) {
    std::vector<std::string> files;
    ListFiles(dir, &files);
    std::sort(files.begin(), files.end());
    size_t budget = kHeaderContentBudget;
    for (const std::string& f : files) {
      struct stat st;
      if (::stat(f.c_str(), &st) != 0) continue;
      all += f + "\n";
      if (static_cast<size_t>(st.st_size) <= budget) {
        budget -= st.st_size;
        all += ContentHash(ReadFile(f));
      } else {
        all += std::to_string(st.st_size) + ":" + std::to_string(st.st_mtim.tv_sec) + "." +
               std::to_string(st.st_mtim.tv_nsec);
      }
    }
  }
  return ContentHash(all);
}

/// "sm_90a" from "sm_90a" or "90a"; rejects anything that is not a real architecture.
std::string NormalizeArch(const std::string& arch) { return target::CudaTarget::Parse(arch).arch; }

/// The number just before `suffix` in `line` ("... 128 registers" -> 128), or -1.
int64_t NumberBefore(const std::string& line, const std::string& suffix) {
  size_t pos = line.find(suffix);
  if (pos == std::string::npos) return -1;
  size_t end = pos;
  while (end > 0 && line[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1]))) --begin;
  return begin == end ? -1 : std::stoll(line.substr(begin, end - begin));
}

/// The name quoted or named after `marker` in a ptxas line, or "".
std::string NameAfter(const std::string& line, const std::string& marker) {
  size_t pos = line.find(marker);
  if (pos == std::string::npos) return "";
  std::string rest = line.substr(pos + marker.size());
  if (!rest.empty() && rest[0] == '\'') return rest.substr(1, rest.find('\'', 1) - 1);
  return rest.substr(0, rest.find_first_of(" \r"));
}

}  // namespace

ResourceUsage ParsePtxasLog(const std::string& log,
                            std::map<std::string, ResourceUsage>* per_function) {
  std::map<std::string, ResourceUsage> funcs;
  std::string current;  // the entry function the following lines describe
  std::stringstream ss(log);
  std::string line;
  while (std::getline(ss, line)) {
    if (std::string n = NameAfter(line, "Compiling entry function "); !n.empty()) {
      current = n;
      funcs[current];
      continue;
    }
    if (line.find("Function properties for ") != std::string::npos) {
      // Non-entry (device) functions have properties too; their lines are not counted.
      std::string n = NameAfter(line, "Function properties for ");
      current = funcs.count(n) ? n : "";
      continue;
    }
    if (current.empty()) continue;
    ResourceUsage& u = funcs[current];
    auto take = [&](int64_t* field, const char* suffix) {
      int64_t v = NumberBefore(line, suffix);
      if (v >= 0) *field = v;
    };
    take(&u.registers, " registers");
    take(&u.shared_bytes, " bytes smem");
    take(&u.stack_bytes, " bytes stack frame");
    take(&u.spill_stores_bytes, " bytes spill stores");
    take(&u.spill_loads_bytes, " bytes spill loads");
  }
  ResourceUsage total;
  for (const auto& [name, u] : funcs) {
    total.registers = std::max(total.registers, u.registers);
    total.spill_stores_bytes = std::max(total.spill_stores_bytes, u.spill_stores_bytes);
    total.spill_loads_bytes = std::max(total.spill_loads_bytes, u.spill_loads_bytes);
    total.shared_bytes = std::max(total.shared_bytes, u.shared_bytes);
    total.stack_bytes = std::max(total.stack_bytes, u.stack_bytes);
  }
  if (per_function) *per_function = std::move(funcs);
  return total;
}

bool FindCudaCompiler(const std::vector<std::string>& search_dirs, std::string* description) {
  try {
    *description = cuda::ChooseCompiler("", search_dirs).description;
    return true;
  } catch (const std::exception& e) {
    *description = e.what();
    return false;
  }
}

CudaBuildResult BuildCudaCubin(const std::string& source, const CudaBuildOptions& options) {
  if (options.cache_dir.empty()) throw std::invalid_argument("BuildCudaCubin needs a cache_dir");
  std::string arch = NormalizeArch(options.arch);
  cuda::CompilerChoice compiler = cuda::ChooseCompiler(options.compiler, options.search_dirs);

  std::vector<std::string> include_dirs = options.include_dirs;
  std::string toolkit_include = cuda::ToolkitIncludeDir(compiler);
  // The toolkit's headers (cuda_fp16.h, ...) come with the compiler, so the compiler's
  // identity stands for them in the key; only the caller's dirs are hashed.
  std::string flag_str;
  for (const auto& f : options.flags) flag_str += " " + f;
  std::string key = ContentHash(source + "\n//" + kCacheVersion + "\n//" + arch + "\n//" +
                                compiler.identity + "\n//" + flag_str + "\n//" +
                                HeaderDigest(include_dirs) + "\n//" + toolkit_include);
  if (!toolkit_include.empty()) {
    include_dirs.push_back(toolkit_include);
    // CUDA 13 keeps libcu++/CUB/Thrust in include/cccl, which nvcc adds by itself.
    if (compiler.kind == "nvrtc" && FileExists(toolkit_include + "/cccl/cuda")) {
      include_dirs.push_back(toolkit_include + "/cccl");
    }
  }

  std::string dir = options.cache_dir + "/cuda/" + key.substr(0, 2);
  CudaBuildResult result;
  result.compiler = compiler.description;
  // Entries are verified on lookup (support/cache_entry.h): a cubin or log that is
  // missing, truncated or changed on disk is rebuilt, with a warning, never loaded.
  std::vector<std::string> paths;
  std::string problem;
  CacheLookup found = LookupCacheEntry(dir, key, {".cubin", ".log"}, &paths, &problem);
  if (found == CacheLookup::kHit) {
    result.cache_hit = true;
    result.cubin_path = paths[0];
    result.log = ReadFile(paths[1]);
  } else {
    MakeDirs(dir);
    cuda::CompileOutput out =
        cuda::Compile(compiler, source, arch, include_dirs, options.flags, dir);
    result.log = out.log;
    WriteAtomically(dir + "/" + key + ".cu", source);  // for reading, not for the cache
    std::string tmp_cubin = TempPathFor(dir + "/" + key + ".cubin");
    std::string tmp_log = TempPathFor(dir + "/" + key + ".log");
    WriteFileOrThrow(tmp_cubin, out.cubin);
    WriteFileOrThrow(tmp_log, out.log);
    // The manifest last: whoever sees the entry sees the cubin and its log whole.
    result.cubin_path =
        StoreCacheEntry(dir, key, {{".cubin", tmp_cubin}, {".log", tmp_log}})[0];
    if (found == CacheLookup::kBroken) {
      AddCacheWarning("tilelang: " + problem + "; the cubin was rebuilt");
    }
  }
  result.usage = ParsePtxasLog(result.log, &result.per_function);
  return result;
}

}  // namespace tl::runtime
