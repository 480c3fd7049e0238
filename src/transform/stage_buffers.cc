// SPDX-License-Identifier: Apache-2.0
/// \file Staged buffers (see stage_buffers.h).
#include "stage_buffers.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

Region StageSelector::MutateRegion(const Region& r) {
  Region out = IRMutator::MutateRegion(r);
  auto it = staged_.find(r.buffer.get());
  if (it == staged_.end()) return out;
  out.buffer = it->second;
  out.ranges.insert(out.ranges.begin(), Range{stage_, MakeInt(1)});
  return out;
}

Expr StageSelector::Mutate_(const BufferLoad* op, const Expr& self) {
  auto it = staged_.find(op->buffer.get());
  if (it == staged_.end()) return IRMutator::Mutate_(op, self);
  bool changed = false;
  auto idx = MutateAll(op->indices, &changed);
  idx.insert(idx.begin(), stage_);
  return BufferLoad::Make(it->second, idx);
}

Stmt StageSelector::Mutate_(const BufferStore* op, const Stmt& self) {
  auto it = staged_.find(op->buffer.get());
  if (it == staged_.end()) return IRMutator::Mutate_(op, self);
  bool changed = false;
  auto idx = MutateAll(op->indices, &changed);
  idx.insert(idx.begin(), stage_);
  return BufferStore::Make(it->second, idx, Mutate(op->value), op->span);
}

Stmt StageSelector::Mutate_(const ReduceOp* op, const Stmt& self) {
  Region src = MutateRegion(op->src), dst = MutateRegion(op->dst);
  int dim = op->dim + static_cast<int>(src.ranges.size() - op->src.ranges.size());
  return ReduceOp::Make(src, dst, op->reduce_kind, dim, op->clear, op->span);
}

Buffer StagedBuffer(const Buffer& b, int64_t stages) {
  std::vector<Expr> shape = b->shape;
  shape.insert(shape.begin(), MakeInt(stages));
  return BufferNode::Make(b->name, b->dtype, shape, b->scope);
}

}  // namespace tl::transform
