// SPDX-License-Identifier: Apache-2.0
/// \file Building generated C++ into a shared library (cached on disk) and calling it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace tl::runtime {

/// One argument of a generated entry point (see codegen/cpu.h).
union TLArg {
  void* ptr;
  int64_t i;
  double f;
};

struct CpuBuildOptions {
  std::string cache_dir;     ///< where libraries are kept, keyed by content
  std::string include_dir;   ///< the folder holding tl_cpu.h
  std::string compiler;      ///< empty: $CXX, else c++
  std::vector<std::string> extra_flags;
};

struct CpuBuildResult {
  std::string library_path;
  bool cache_hit = false;
  std::string command;  ///< the compiler command (empty on a cache hit)
};

/// Compiles `source` unless a library for the same (source, compiler and its version,
/// flags, headers, host CPU, cache version) is cached. Entries are verified on lookup
/// (support/cache_entry.h): a missing, truncated or changed library is rebuilt, and a
/// warning recorded for TakeCacheWarnings. Throws std::runtime_error with the compiler's
/// output on failure.
CpuBuildResult BuildCpuLibrary(const std::string& source, const CpuBuildOptions& options);

/// A loaded library and its entry point. The library is closed (dlclose) when the module
/// is destroyed; the OpenMP runtime it pulled in stays loaded.
class CpuModule {
 public:
  CpuModule(const std::string& path, const std::string& entry);
  ~CpuModule();
  CpuModule(const CpuModule&) = delete;
  CpuModule& operator=(const CpuModule&) = delete;
  /// Calls the entry point; returns its status (0 = success).
  int32_t Run(const std::vector<TLArg>& args) const;

 private:
  void* handle_ = nullptr;
  int32_t (*entry_)(const TLArg*) = nullptr;
};

/// A 128-bit content hash as 32 hex digits (FNV-1a, two seeds): cache keys, not security.
std::string ContentHash(const std::string& data);

}  // namespace tl::runtime
