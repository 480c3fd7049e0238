// SPDX-License-Identifier: Apache-2.0
/// \file Verified entries of the compiled-kernel disk cache (shared libraries, cubins).
///
/// An entry `<key>` in a folder is a manifest `<key>.entry` naming its files, each with
/// its size and content hash, plus those files, each stored as
/// `<key>-<first 16 hex digits of its hash><suffix>`. Every file is written under a
/// unique temporary name and renamed into place, the manifest last. Because a file's name
/// carries its hash, concurrent writers of the same key never replace a file that some
/// manifest describes with different bytes: whichever manifest a reader sees, the files
/// it names are whole and match. A reader checks sizes and hashes before use, so a
/// truncated, edited or missing file is found and the entry rebuilt, never loaded.
#pragma once

#include <string>
#include <vector>

namespace tl {

/// A 128-bit content hash as 32 hex digits (FNV-1a, two seeds): cache keys and
/// corruption checks, not security.
std::string ContentHash128(const std::string& data);

enum class CacheLookup {
  kMiss,    ///< no manifest: never built (or cleared)
  kHit,     ///< every file present, of the recorded size and hash
  kBroken,  ///< a manifest whose files are missing, truncated or changed, or unreadable
};

/// Looks up `key` in `dir`. `suffixes` are the files the caller needs (".so", ".log");
/// on kHit `paths` receives their paths in that order. On kBroken, `problem` says what
/// is wrong in a sentence; the caller rebuilds and stores the entry again.
CacheLookup LookupCacheEntry(const std::string& dir, const std::string& key,
                             const std::vector<std::string>& suffixes,
                             std::vector<std::string>* paths, std::string* problem);

/// One file of a new entry: its suffix and the temporary file holding it (moved, not
/// copied, into the cache).
struct CacheFile {
  std::string suffix;
  std::string temp_path;
};

/// Moves the files into `dir` under their hashed names and then writes the manifest of
/// `key` atomically. Returns the final paths in the order given. Throws
/// std::runtime_error when the cache folder cannot be written.
std::vector<std::string> StoreCacheEntry(const std::string& dir, const std::string& key,
                                         const std::vector<CacheFile>& files);

/// A unique temporary path beside `path` (same folder, so rename(2) is atomic).
std::string TempPathFor(const std::string& path);

/// Warnings about broken entries found (and rebuilt) by this thread's builds, in order;
/// the Python layer takes them after each build and shows each once.
void AddCacheWarning(const std::string& message);
std::vector<std::string> TakeCacheWarnings();

}  // namespace tl
