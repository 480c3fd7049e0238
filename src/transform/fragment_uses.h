// SPDX-License-Identifier: Apache-2.0
/// \file Which threads each register fragment's uses run on: the whole block, or one range
/// that branches on the thread index select (thread_range.h). A fragment whose uses all run
/// under one range of whole warps can be held by those threads alone (a warpgroup's own GEMM
/// accumulator in a hand warp-specialized kernel); both targets ask this the same way.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>

#include "thread_range.h"
#include "tl/ir/stmt.h"

namespace tl::transform {

/// The threads a fragment's uses run on: one range of the block's threads for all of them
/// (`threads`; the whole block outside any branch on the thread index), or not
/// (`one_range` false: `other` is the first use elsewhere).
struct FragmentUses {
  FragmentUses(bool known, const ThreadRange& r, const Span& first);
  bool one_range;
  std::optional<ThreadRange> threads;
  Span first, other;
  /// Whether every use runs on exactly the threads of `r`.
  bool OnlyIn(const ThreadRange& r) const { return one_range && threads && threads->lo == r.lo && threads->hi == r.hi; }
};

/// Each fragment of `body` with the threads its uses run on; `is_thread_index(e)` says e is
/// the block's (1-D) thread index, of `threads` threads (lets bound to it are followed).
std::unordered_map<const ir::BufferNode*, FragmentUses> FragmentUseRanges(
    const ir::Stmt& body, const std::function<bool(const ir::Expr&)>& is_thread_index, int64_t threads);

}  // namespace tl::transform
