// SPDX-License-Identifier: Apache-2.0
/// \file Fragments that every thread holds a whole copy of (upstream's replicated fragments).
///
/// A fragment no T.gemm gives a layout is kept in shared memory, one copy for the block.
/// That is wrong for a fragment used as a per-thread scalar (`rms = T.alloc_fragment(1)`,
/// then `rms[0] += x[i]; rms[0] = T.rsqrt(rms[0] ...)` outside any T.Parallel loop, as in
/// DeepSeek's mHC kernels): every thread runs those statements, so one shared copy is read
/// and written by all of them at once (a race; each thread adding into the same word).
/// Upstream gives such a fragment a replicated layout, a copy per thread. So do we when
/// the fragment is small and is used only element by element, written only outside
/// T.Parallel loops and outside conditions on the thread index (so that every thread
/// writes the same values into its own copy), and never by a tile op (T.copy, T.fill,
/// T.reduce, T.gemm, atomics), which work on shared tiles. A fragment whose every use lies
/// in one branch on the thread index (`prefetch = T.alloc_fragment(...)` used only by the
/// producer's `if tx >= 256:` in upstream's sparse MLA kernels) is checked within that branch:
/// its threads each hold a copy there, and nothing outside reads one.
///
/// Both targets ask this (CUDA: registers per thread; CPU: per-thread storage of the lockstep
/// emulation), so a program means the same on both.
#pragma once

#include <functional>

#include "tl/ir/stmt.h"

namespace tl::transform {

/// Fragments of at most this many elements may be held per thread (registers).
constexpr int64_t kMaxPerThreadFragmentElems = 64;

/// Whether fragment `b`, allocated over `scope`, can be held as a copy per thread.
/// `is_thread_index(e)` says e is the thread index; lets that depend on it count as
/// thread-dependent too.
bool HeldPerThread(const ir::Buffer& b, const ir::Stmt& scope,
                   const std::function<bool(const ir::Expr&)>& is_thread_index);

}  // namespace tl::transform
