// SPDX-License-Identifier: Apache-2.0
/// \file Which threads a condition selects, when it is a range of the thread index.
///
/// Upstream's semantics for tile work under a condition on the thread index
/// (`if tx < 128: T.copy(...)`, or a T.Parallel there) is that the threads the condition
/// selects do the whole work between them. When the condition is a conjunction of
/// comparisons of the thread index with constants, those threads are a range [lo, hi), and
/// both targets can honour that: CUDA spreads the work over hi - lo threads numbered
/// tx - lo, the CPU's lockstep emulation runs it once. Any other thread-dependent
/// condition around tile work is refused at its line (it would run only part of the work).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "tl/ir/expr.h"
#include "tl/ir/stmt.h"

namespace tl::transform {

struct ThreadRange {
  int64_t lo = 0, hi = 0;  ///< threads lo .. hi - 1
  bool Empty() const { return hi <= lo; }
};

/// The range `cond` selects out of [0, threads), or nullopt when `cond` is not a
/// conjunction of `t < c`, `t <= c`, `t > c`, `t >= c`, `t == c` (either operand order)
/// where `is_thread(t)` says t is the thread index.
std::optional<ThreadRange> ThreadRangeOf(const ir::Expr& cond, const std::function<bool(const ir::Expr&)>& is_thread,
                                         int64_t threads);

/// The threads of [0, threads) outside `r`, when they form one range.
std::optional<ThreadRange> ComplementRange(const ThreadRange& r, int64_t threads);

/// The threads of `outer` outside `r`, when they form one range: the `else` of a branch
/// inside another's (`elif tx < 256:` after `if tx < 128:` selects [128, 256), and its own
/// `else` [256, threads)).
std::optional<ThreadRange> ComplementWithin(const ThreadRange& r, const ThreadRange& outer);

/// The threads a program's named barrier waits for: a constant `named_barrier_sync(id, count)`'s
/// count, `named_barrier_sync_all(id)`'s `block_threads`, -1 for a computed count; nullopt
/// for any other statement. (A branch that meets such a barrier with threads outside it
/// hands data over to them: the CUDA barrier pass keeps it as written, the CPU emulation
/// refuses it.)
std::optional<int64_t> NamedBarrierThreads(const ir::Stmt& s, int64_t block_threads);

/// The threads a statement runs on, as the walks over a kernel body track them through the
/// branches on the thread index around it (fragment uses, register tiles, range-held GEMMs,
/// register budgets): a range, or unknown under a condition on the thread index that selects
/// no range (`range` is then the enclosing one, and means nothing).
struct RunningThreads {
  bool known = true;
  ThreadRange range;
  /// The threads of the then and else branches of `if cond`, run from these: the range
  /// `cond` selects within them and the rest of them, each unknown when not one range.
  /// `is_thread(e)`: e is the block's (1-D) thread index, of `threads` threads.
  std::pair<RunningThreads, RunningThreads> Branches(const ir::Expr& cond,
                                                     const std::function<bool(const ir::Expr&)>& is_thread,
                                                     int64_t threads) const;
};

}  // namespace tl::transform
