// SPDX-License-Identifier: Apache-2.0
/// \file Staged buffers: a buffer given a leading stage dimension, and the rewrite of its
/// accesses to one stage. Shared by CUDA's pipeliners (cuda/pipeline_schedule.h) and the
/// target-neutral stage-ws-pipelines.
#pragma once

#include <unordered_map>

#include "tl/ir/functor.h"
#include "tl/ir/stmt.h"

namespace tl::transform {

/// Rewrites accesses of staged buffers (a leading stage dimension added) to select
/// `stage`: loads, stores and tile-op regions.
class StageSelector : public ir::IRMutator {
 public:
  StageSelector(const std::unordered_map<const ir::BufferNode*, ir::Buffer>& staged, ir::Expr stage)
      : staged_(staged), stage_(std::move(stage)) {}

  ir::Region MutateRegion(const ir::Region& r) override;

 protected:
  const ir::Expr& stage() const { return stage_; }
  ir::Expr Mutate_(const ir::BufferLoad* op, const ir::Expr& self) override;
  ir::Stmt Mutate_(const ir::BufferStore* op, const ir::Stmt& self) override;
  /// A reduction's `dim` counts its source region's dimensions: a stage dimension added
  /// in front shifts it by one.
  ir::Stmt Mutate_(const ir::ReduceOp* op, const ir::Stmt& self) override;

 private:
  const std::unordered_map<const ir::BufferNode*, ir::Buffer>& staged_;
  ir::Expr stage_;
};

/// `b` with a leading stage dimension of `stages`.
ir::Buffer StagedBuffer(const ir::Buffer& b, int64_t stages);

}  // namespace tl::transform
