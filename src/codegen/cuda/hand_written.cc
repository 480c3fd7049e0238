// SPDX-License-Identifier: Apache-2.0
/// \file T.CUDASourceCodeKernel's code (see hand_written.h).
#include "hand_written.h"

#include <algorithm>
#include <functional>
#include <regex>
#include <vector>

#include "tl/support/error.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The T.CUDASourceCodeKernel attribute in a launch's body (under its thread binding), or null.
const AttrStmt* SourceAttr(const Stmt& body, const std::string& prefix) {
  const AttrStmt* found = nullptr;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const auto* a = As<AttrStmt>(s); a && a->key.rfind(prefix, 0) == 0) found = a;
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) find(c);
    }
    if (const auto* f = As<For>(s)) find(f->body);
  };
  find(body);
  return found;
}

}  // namespace

bool HandWrittenKernel(const Stmt& launch_body, const std::string& prefix, CudaSource* out) {
  const AttrStmt* attr = SourceAttr(launch_body, prefix);
  if (!attr) return false;
  const std::string text = attr->key.substr(prefix.size());
  const size_t nl = text.find('\n');
  const std::string asked = text.substr(0, nl), source = text.substr(nl + 1);
  std::vector<std::string> entries;
  static const std::regex kGlobal(R"(__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\()");
  for (std::sregex_iterator it(source.begin(), source.end(), kGlobal), end; it != end; ++it) {
    entries.push_back((*it)[1]);
  }
  std::string list;
  for (const std::string& e : entries) list += (list.empty() ? "" : ", ") + e;
  if (entries.empty()) TL_USER_ERROR(attr->span) << "T.CUDASourceCodeKernel: the source defines no __global__ function";
  if (asked.empty() && entries.size() > 1) {
    TL_USER_ERROR(attr->span) << "T.CUDASourceCodeKernel: the source defines several kernels; name one with "
                                 "entry_name=. Available entries: "
                              << list;
  }
  const std::string entry = asked.empty() ? entries[0] : asked;
  if (std::find(entries.begin(), entries.end(), entry) == entries.end()) {
    TL_USER_ERROR(attr->span) << "T.CUDASourceCodeKernel: entry_name " << entry
                              << " is no __global__ function of the source. Available entries: " << list;
  }
  if (source.find("extern \"C\"") == std::string::npos) {
    TL_USER_ERROR(attr->span) << "T.CUDASourceCodeKernel: declare " << entry
                              << " extern \"C\" (the launch finds it by that name, unmangled)";
  }
  out->entry = entry;
  out->code = "// T.CUDASourceCodeKernel (hand-written CUDA) from " +
              (attr->span.file.empty() ? std::string("<unknown>") : attr->span.file) + "\n" + source;
  out->shared_bytes = 0;
  return true;
}

}  // namespace tl::codegen::cuda
