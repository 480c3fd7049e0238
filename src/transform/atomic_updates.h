// SPDX-License-Identifier: Apache-2.0
/// \file Atomic updates (kAtomicUpdate calls) in thread-level code, as both targets treat them:
/// an update outside T.Parallel happens once for the block, unless the thread decides it (a
/// thread-dependent address or value, or a thread-dependent branch around it), where each
/// thread that reaches it updates. An update's old value (return_prev=True) bound to a name
/// there would be one thread's on CUDA while the block's code reads it: refused alike on
/// both targets (cuda-partition-parallel, the CPU's thread emulation).
#pragma once

#include "tl/ir/expr.h"
#include "tl/support/error.h"

namespace tl::transform {

/// Whether `e` performs an atomic update (a call with kAtomicUpdate anywhere in it).
bool HasAtomicUpdate(const ir::Expr& e);

/// The error for `pos = T.atomic_add(..., return_prev=True)` in block-level code at `span`.
[[noreturn]] void RefuseBlockLevelAtomicLet(const Span& span);

}  // namespace tl::transform
