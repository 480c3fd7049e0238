// SPDX-License-Identifier: Apache-2.0
/// \file SplitKernels: one function per T.Kernel, for targets that launch kernels one by
/// one (see passes.h).
#include "tl/ir/printer.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

std::vector<PrimFunc> SplitKernels(const PrimFunc& f) {
  std::vector<Stmt> top;
  if (const auto* seq = As<Seq>(f->body)) {
    top = seq->stmts;
  } else {
    top = {f->body};
  }
  std::vector<const KernelLaunch*> launches;
  for (const Stmt& s : top) {
    if (const auto* k = As<KernelLaunch>(s)) launches.push_back(k);
  }
  if (launches.size() <= 1) return {f};
  std::vector<PrimFunc> parts;
  for (const Stmt& s : top) {
    const auto* k = As<KernelLaunch>(s);
    if (!k) {
      // Host code between kernels would need a host program around the launches.
      TL_USER_ERROR(s->span) << "with several T.Kernel blocks in one function, only the kernels may sit at the "
                                "top level on this target; move this statement into a kernel";
    }
    std::string base = f->name.empty() ? "main" : f->name;
    parts.push_back(PrimFuncNode::Make(base + "_" + std::to_string(parts.size()), f->params, s, f->span));
  }
  return parts;
}

}  // namespace tl::transform
