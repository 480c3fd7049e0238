// SPDX-License-Identifier: Apache-2.0
/// \file Element copies of a T.Parallel nest in groups (parallel_copy_groups.h).
#include "parallel_copy_groups.h"

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

constexpr int64_t kGroupBytes = 16;

/// Whether `idx` addresses consecutive elements for consecutive `d`: only the last index
/// uses d, as `d` plus terms without it.
bool ConsecutiveAlong(const std::vector<Expr>& idx, const Var* d, arith::Analyzer* an) {
  if (idx.empty()) return false;
  for (size_t k = 0; k + 1 < idx.size(); ++k) {
    if (UsesVar(idx[k], d)) return false;
  }
  const Expr& last = idx.back();
  Expr at0 = Substitute(last, [d](const Var* x) -> Expr { return x == d ? MakeInt(0, x->dtype) : nullptr; });
  const auto* step = As<Var>(an->Simplify(last - at0));
  return step == d;
}

/// Whether rows of `b` hold whole groups of k elements: a contiguous buffer in memory whose
/// last dimension is a constant multiple of k.
bool WholeGroupRows(const Buffer& b, int64_t k) {
  int64_t w = 0;
  return (b->scope == Scope::kGlobal || b->scope == Scope::kShared) && b->strides.empty() && !b->data &&
         !b->shape.empty() && AsConstInt(b->shape.back(), &w) && w % k == 0;
}

}  // namespace

int64_t ElementCopyGroup(const For* inner, const Stmt& body) {
  const Var* d = inner->var.get();
  int64_t n = 0, lo = -1;
  if (!AsConstInt(inner->extent, &n) || !AsConstInt(inner->min, &lo) || lo != 0) return 0;
  Stmt core = body;
  while (const auto* guard = As<IfThenElse>(core)) {
    if (guard->else_case || UsesVar(guard->cond, d)) return 0;
    core = guard->then_case;
  }
  const auto* store = As<BufferStore>(core);
  const auto* load = store ? As<BufferLoad>(store->value) : nullptr;
  // (into a tensor only: a shared tile written in groups would be written by other threads
  // than those that wrote its elements before, which can cost a barrier where none was)
  if (!load || store->buffer.get() == load->buffer.get() || store->buffer->scope != Scope::kGlobal) return 0;
  const DType t = store->buffer->dtype;
  if (load->buffer->dtype != t || t.bits % 8 != 0 || t.bytes() >= kGroupBytes) return 0;
  const int64_t k = kGroupBytes / t.bytes();
  if (n % k != 0 || !WholeGroupRows(store->buffer, k) || !WholeGroupRows(load->buffer, k)) return 0;
  arith::Analyzer an;
  if (!ConsecutiveAlong(store->indices, d, &an) || !ConsecutiveAlong(load->indices, d, &an)) return 0;
  return k;
}

Stmt GroupedCopy(const For* inner, const Stmt& body, int64_t k, const Expr& g) {
  VarRef j = Var::Make(inner->var->name, inner->var->dtype);
  Expr d = g * MakeInt(k, inner->var->dtype) + Expr(j);
  Stmt at = Substitute(body, [&](const Var* x) -> Expr { return x == inner->var.get() ? d : nullptr; });
  return For::Make(j, MakeInt(0, j->dtype), MakeInt(k, j->dtype), ForKind::kVectorized, at, {}, inner->span);
}

}  // namespace tl::transform::cuda
