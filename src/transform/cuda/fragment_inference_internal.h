// SPDX-License-Identifier: Apache-2.0
/// \file Internal to fragment layout inference (fragment_inference*.cc): the visitor one
/// inference attempt runs over a kernel body, declared here because its rules live in
/// separate files:
///
///   fragment_inference.cc         shared helpers, and the driver: seeding, sweeps to a
///                                 fixed point, attempts with requested warp splits
///   fragment_inference_gemm.cc    what a T.gemm fixes: its path and accumulator layout
///   fragment_inference_spread.cc  how layouts are assigned and spread to other fragments
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "../fragment_uses.h"
#include "../thread_range.h"
#include "fragment_inference.h"
#include "tl/ir/functor.h"
#include "tl/layout/fragment.h"
#include "tl/target/cuda_target.h"
#include "wgmma_select.h"

namespace tl::transform::cuda {

/// A warp split a T.Parallel asks of a GEMM accumulator, with the conflict it resolves.
struct SplitRequest {
  layout::WarpPartition warps;
  std::string why;
  Span span;
};

/// Layout inference over one kernel body: one visit is one sweep; the driver
/// (InferFragmentLayouts) repeats sweeps until nothing changes.
class FragmentLayoutInference : public ir::IRVisitor {
 public:
  FragmentLayoutInference(int64_t num_threads, const target::CudaTarget& target, WgmmaOptions wgmma)
      : num_threads_(num_threads), block_threads_(num_threads), target_(target), wgmma_(wgmma) {}

  std::unordered_map<const ir::BufferNode*, Assigned> layouts;
  /// Warp splits asked of GEMM accumulators by an earlier attempt (see InferFragmentLayouts),
  /// and those this attempt asks for: a T.Parallel that ties two GEMM accumulators of one
  /// shape needs them split alike.
  std::unordered_map<const ir::BufferNode*, layout::WarpPartition> preferred_split;
  std::unordered_map<const ir::BufferNode*, SplitRequest> split_requests;
  /// Fragments that must stay in shared memory (operands of GEMMs, accumulators of GEMMs
  /// that cannot use the tensor-core layout).
  std::unordered_set<const ir::BufferNode*> forced_shared;
  /// How each T.gemm is computed (RuleGemm; StageA for a staged A, UseWgmma for wgmma).
  std::unordered_map<const ir::GemmOp*, GemmPlan> gemm_plans;
  /// Per-row vectors whose uses need different layouts (moved to shared memory).
  std::unordered_set<const ir::BufferNode*> conflicted;
  bool changed = false;
  /// Whether a per-column vector next to an mma accumulator is held as its columns
  /// (MmaColumnsLayout; tl.mma_column_vectors, on by default) or in shared memory.
  bool mma_columns = true;
  /// Fragments that tile ops write whole, which a per-column vector in registers does not
  /// suit: a T.copy from a tile in memory (in shared memory the pipeline can prefetch it; in
  /// registers it would be each thread's scattered loads, waited for in the step) and a
  /// reduction across rows (T.reduce dim=0; registers take row reductions only). Such a
  /// vector stays in shared memory.
  std::unordered_set<const ir::BufferNode*> loaded;

  // fragment_inference_spread.cc
  void Assign(const ir::Buffer& b, const layout::FragmentLayoutRef& l, const std::string& origin, const Span& span);

  /// The kernel's thread index, to tell the branches that select a range of its threads
  /// (fragment_inference_range.cc).
  void SetThreadIndex(const ir::Var* tx) { tx_ = tx; }
  /// Notes the threads each fragment's uses run on (before the first sweep).
  void NoteUseRanges(const ir::Stmt& body);
  /// Refuses a fragment laid out over part of the block's threads (a GEMM's under a branch,
  /// or spread from one) that is used elsewhere too, at that use.
  void CheckRangeLayouts() const;

 protected:
  // fragment_inference_gemm.cc
  void Visit_(const ir::GemmOp* op) override;
  void RuleGemm(const ir::GemmOp* op);
  std::optional<layout::WarpPartition> HeldSplit(const ir::Buffer& c, const ir::GemmOp* op);
  void StageA(const ir::GemmOp* op, int64_t m, int64_t n, layout::WarpPartition* warps, std::string* why);
  bool Tf32RegisterA(const ir::GemmOp* op, int64_t m, int64_t n, layout::WarpPartition* warps);
  bool FoldColumns(const ParallelNest& nest, const std::vector<std::pair<ir::Buffer, std::vector<ir::Expr>>>& accesses,
                   const Span& span);
  bool WgmmaPartition(int64_t m, layout::WarpPartition* out) const;
  bool UseWgmma(const ir::GemmOp* op);

  // fragment_inference_range.cc
  /// The threads `op` runs on when its accumulator (and a register A) is used only under
  /// branches selecting one range of the block's threads, narrower than the block.
  std::optional<ThreadRange> OwnRange(const ir::GemmOp* op) const;
  /// `l` as held by the threads the GEMM being visited runs on (ThreadRangeLayout from the
  /// first of them; `l` itself at the block's first thread).
  layout::FragmentLayoutRef Held(const layout::FragmentLayoutRef& l) const;
  /// Whether every use of `b` runs on exactly the threads of `r`.
  bool UsedOnlyIn(const ir::Buffer& b, const ThreadRange& r) const;

  // fragment_inference_spread.cc
  void Visit_(const ir::For* op) override;
  void Visit_(const ir::ReduceOp* op) override;
  void Visit_(const ir::CopyOp* op) override;

 private:
  int64_t num_threads_;  ///< the threads the statement being visited runs on (a GEMM's range)
  int64_t block_threads_;
  int64_t first_thread_ = 0;  ///< the first of them
  const ir::Var* tx_ = nullptr;
  std::unordered_map<const ir::BufferNode*, FragmentUses> use_ranges_;  ///< NoteUseRanges
  target::CudaTarget target_;  ///< what the arch has
  WgmmaOptions wgmma_;  ///< the optional wgmma paths (pass configs)
};

}  // namespace tl::transform::cuda
