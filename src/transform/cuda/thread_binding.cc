// SPDX-License-Identifier: Apache-2.0
/// \file Finding the kernel's thread binding (see thread_binding.h).
#include "thread_binding.h"

#include "tl/ir/functor.h"

namespace tl::transform::cuda {

ThreadBinding GetThreadBinding(const ir::Stmt& body, const char* pass) {
  struct Finder : ir::IRVisitor {
    const ir::For* found = nullptr;
    void Visit_(const ir::For* op) override {
      if (op->for_kind == ir::ForKind::kThreadBinding && !found) found = op;
      ir::IRVisitor::Visit_(op);
    }
  } finder;
  finder.Visit(body);
  TL_ICHECK(finder.found) << pass << " runs after cuda-bind-threads";
  ThreadBinding tb{finder.found->var, 0};
  ir::AsConstInt(finder.found->extent, &tb.threads);
  return tb;
}

}  // namespace tl::transform::cuda
