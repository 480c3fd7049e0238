// SPDX-License-Identifier: Apache-2.0
/// \file Atomic updates in thread-level code (see atomic_updates.h).
#include "atomic_updates.h"

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

bool HasAtomicUpdate(const Expr& e) {
  bool found = false;
  ForEachExpr(e, [&](const Expr& x) { found = found || HasEffect(As<Call>(x), kAtomicUpdate); });
  return found;
}

void RefuseBlockLevelAtomicLet(const Span& span) {
  TL_USER_ERROR(span) << "the old value of an atomic (return_prev=True) bound outside T.Parallel: "
                         "on CUDA the block's threads would each update once; store it into a "
                         "tensor (P[i] = T.atomic_add(..., return_prev=True)) or use it inside "
                         "T.Parallel";
}

}  // namespace tl::transform
