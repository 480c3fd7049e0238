// SPDX-License-Identifier: Apache-2.0
/// \file Verified cache entries (see support/cache_entry.h).
#include "tl/support/cache_entry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>

#include "tl/support/file_util.h"

namespace tl {
namespace {

constexpr const char* kManifestHeader = "tilelang-cache-entry 1";

uint64_t Fnv1a(const std::string& data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

thread_local std::vector<std::string> t_warnings;

/// Whether `path` names a regular file; its size in `size`.
bool StatFile(const std::string& path, int64_t* size) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = static_cast<int64_t>(st.st_size);
  return true;
}

/// rename(2), creating the folder again when it vanished (a concurrent clear_cache()).
bool RenameInto(const std::string& from, const std::string& to, const std::string& dir) {
  if (::rename(from.c_str(), to.c_str()) == 0) return true;
  if (errno != ENOENT || !FileExists(from)) return false;
  MakeDirs(dir);
  return ::rename(from.c_str(), to.c_str()) == 0;
}

}  // namespace

std::string ContentHash128(const std::string& data) {
  char buf[33];
  std::snprintf(buf, sizeof(buf), "%016llx%016llx",
                static_cast<unsigned long long>(Fnv1a(data, 0xcbf29ce484222325ULL)),
                static_cast<unsigned long long>(Fnv1a(data, 0x84222325cbf29ce4ULL)));
  return buf;
}

std::string TempPathFor(const std::string& path) {
  static thread_local std::mt19937_64 gen{std::random_device{}() ^
                                          (static_cast<uint64_t>(::getpid()) << 32)};
  return path + "." + std::to_string(::getpid()) + "." + std::to_string(gen()) + ".tmp";
}

CacheLookup LookupCacheEntry(const std::string& dir, const std::string& key,
                             const std::vector<std::string>& suffixes,
                             std::vector<std::string>* paths, std::string* problem) {
  std::string manifest_path = dir + "/" + key + ".entry";
  if (!FileExists(manifest_path)) return CacheLookup::kMiss;
  auto broken = [&](const std::string& why) {
    *problem = why;
    return CacheLookup::kBroken;
  };
  std::string manifest = ReadFile(manifest_path);
  std::stringstream ss(manifest);
  std::string line;
  if (!std::getline(ss, line) || line != kManifestHeader) {
    return broken("the cache entry " + manifest_path + " is unreadable (not a manifest of this version)");
  }
  struct Recorded {
    std::string name;
    int64_t size = -1;
    std::string hash;
  };
  std::vector<std::pair<std::string, Recorded>> recorded;
  while (std::getline(ss, line)) {
    if (line.empty()) continue;
    std::stringstream ls(line);
    std::string tag, suffix;
    Recorded r;
    if (!(ls >> tag >> suffix >> r.name >> r.size >> r.hash) || tag != "file" ||
        r.name.find('/') != std::string::npos || r.hash.size() != 32) {
      return broken("the cache entry " + manifest_path + " is unreadable (bad line '" + line + "')");
    }
    recorded.emplace_back(suffix, r);
  }
  paths->clear();
  for (const std::string& suffix : suffixes) {
    const Recorded* r = nullptr;
    for (const auto& [s, rec] : recorded) {
      if (s == suffix) r = &rec;
    }
    if (!r) return broken("the cache entry " + manifest_path + " lists no " + suffix + " file");
    std::string path = dir + "/" + r->name;
    int64_t size = 0;
    if (!StatFile(path, &size)) {
      return broken("the cached file " + path + " is missing");
    }
    if (size != r->size) {
      return broken("the cached file " + path + " is " + std::to_string(size) + " bytes, " +
                    std::to_string(r->size) + " were written (" +
                    (size < r->size ? "truncated" : "changed") + ")");
    }
    std::string data = ReadFile(path);
    if (static_cast<int64_t>(data.size()) != r->size) {
      return broken("the cached file " + path + " cannot be read");
    }
    if (ContentHash128(data) != r->hash) {
      return broken("the cached file " + path + " does not match its checksum (changed on disk)");
    }
    paths->push_back(path);
  }
  return CacheLookup::kHit;
}

namespace {

std::vector<std::string> Store(const std::string& dir, const std::string& key,
                               const std::vector<CacheFile>& files) {
  MakeDirs(dir);
  std::string manifest = std::string(kManifestHeader) + "\n";
  std::vector<std::string> out;
  for (const CacheFile& f : files) {
    std::string data = ReadFile(f.temp_path);
    int64_t size = 0;
    if (!StatFile(f.temp_path, &size) || static_cast<int64_t>(data.size()) != size) {
      ::unlink(f.temp_path.c_str());
      throw std::runtime_error("cannot read back " + f.temp_path + " to store it in the cache");
    }
    std::string hash = ContentHash128(data);
    std::string name = key + "-" + hash.substr(0, 16) + f.suffix;
    std::string path = dir + "/" + name;
    if (!RenameInto(f.temp_path, path, dir)) {
      std::string why = std::strerror(errno);
      ::unlink(f.temp_path.c_str());
      throw std::runtime_error("cannot move a compiled file into the cache at " + path + ": " + why);
    }
    manifest += "file " + f.suffix + " " + name + " " + std::to_string(size) + " " + hash + "\n";
    out.push_back(path);
  }
  std::string manifest_path = dir + "/" + key + ".entry";
  std::string tmp = TempPathFor(manifest_path);
  WriteFileOrThrow(tmp, manifest);
  if (!RenameInto(tmp, manifest_path, dir)) {
    std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write the cache entry " + manifest_path + ": " + why);
  }
  return out;
}

}  // namespace

std::vector<std::string> StoreCacheEntry(const std::string& dir, const std::string& key,
                                         const std::vector<CacheFile>& files) {
  try {
    return Store(dir, key, files);
  } catch (...) {
    for (const CacheFile& f : files) ::unlink(f.temp_path.c_str());  // those not moved yet
    throw;
  }
}

void AddCacheWarning(const std::string& message) { t_warnings.push_back(message); }

std::vector<std::string> TakeCacheWarnings() {
  std::vector<std::string> out;
  out.swap(t_warnings);
  return out;
}

}  // namespace tl
