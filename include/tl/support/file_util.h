// SPDX-License-Identifier: Apache-2.0
/// \file Small file-system and process helpers shared by the runtimes' compile caches.
#pragma once

#include <string>
#include <vector>

namespace tl {

bool FileExists(const std::string& path);
/// mkdir -p.
void MakeDirs(const std::string& path);
/// The whole file, or "" when it cannot be read.
std::string ReadFile(const std::string& path);
/// Appends every regular file under `dir`, recursively, to `out` (in directory order;
/// callers that hash the list sort it). A missing dir adds nothing.
void ListFiles(const std::string& dir, std::vector<std::string>* out);
/// Writes `data` to `path` (not atomically); throws std::runtime_error on failure.
void WriteFileOrThrow(const std::string& path, const std::string& data);
/// Writes `data` under a unique temporary name, then renames it to `path`: readers (other
/// processes too) see the old file or the whole new one, never a part.
void WriteAtomically(const std::string& path, const std::string& data);
/// Runs a shell command; returns its exit status and appends stdout and stderr to `output`.
int RunCommand(const std::string& cmd, std::string* output);
/// `s` quoted for the shell.
std::string ShellQuote(const std::string& s);

}  // namespace tl
