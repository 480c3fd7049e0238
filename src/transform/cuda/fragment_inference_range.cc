// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference under branches on the thread index: a GEMM inside
/// `if tx < 128:` / `elif tx < 256:` (upstream's hand warp-specialized kernels, each
/// warpgroup with GEMMs of its own) whose accumulator is used only there runs on the threads
/// the branch selects (fragment_uses.h), so the accumulator is laid out over those threads
/// only (layout::ThreadRangeLayout), with the warp split of a block of that many threads. The device GEMMs number their warps modulo the
/// GEMM's own warp count, so the range must start on a multiple of its size; a range that
/// does not is left to the lowering, which refuses the GEMM at its line, and so is a GEMM
/// whose accumulator is also used outside the branch (other threads would need it).

#include "fragment_inference_internal.h"
#include "../fragment_uses.h"
#include "tl/support/error.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

void FragmentLayoutInference::NoteUseRanges(const Stmt& body) {
  if (!tx_) return;
  use_ranges_ = FragmentUseRanges(body, [&](const Expr& e) { return As<Var>(e) == tx_; }, block_threads_);
}

std::optional<ThreadRange> FragmentLayoutInference::OwnRange(const GemmOp* op) const {
  auto it = use_ranges_.find(op->c.buffer.get());
  if (it == use_ranges_.end() || !it->second.one_range || !it->second.threads) return std::nullopt;
  const ThreadRange r = *it->second.threads;
  if (r.Empty() || (r.lo <= 0 && r.hi >= block_threads_)) return std::nullopt;
  if (IsFragment(op->a.buffer) && !UsedOnlyIn(op->a.buffer, r)) return std::nullopt;
  return r;
}

layout::FragmentLayoutRef FragmentLayoutInference::Held(const layout::FragmentLayoutRef& l) const {
  if (first_thread_ == 0) return l;
  return std::make_shared<layout::ThreadRangeLayout>(l, first_thread_);
}

}  // namespace tl::transform::cuda

namespace tl::transform::cuda {

bool FragmentLayoutInference::UsedOnlyIn(const ir::Buffer& b, const ThreadRange& r) const {
  auto it = use_ranges_.find(b.get());
  return it == use_ranges_.end() || it->second.OnlyIn(r);
}

void FragmentLayoutInference::CheckRangeLayouts() const {
  for (const auto& [b, assigned] : layouts) {
    const layout::FragmentLayout& l = *assigned.layout;
    const ThreadRange held{l.first_thread(), l.first_thread() + l.num_threads()};
    if (held.lo == 0 && held.hi >= block_threads_) continue;
    auto it = use_ranges_.find(b);
    if (it == use_ranges_.end()) continue;
    const FragmentUses& u = it->second;
    if (u.OnlyIn(held)) continue;
    const Span& where = u.one_range ? u.first : u.other;
    TL_USER_ERROR(where) << "fragment " << b->name << " is held by threads " << held.lo << ".." << held.hi - 1
                         << " only (" << assigned.origin << " at line " << assigned.span.line
                         << " lays it out under a branch on the thread index), but this use runs on other "
                            "threads; use it only under that branch, or move its T.gemm out of the branch";
  }
}

}  // namespace tl::transform::cuda
