// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, guarded loads (block-sparse GEMMs): copies under an
/// `if guard:` at the top of the loop body move out of it so the producer can load them,
/// and the producer skips a group's loads in the iterations where the guard is false.
#include <unordered_set>
#include <vector>

#include "pipeline_schedule.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/equal.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Whether the producer can evaluate `cond` (HoistGuardedCopies says which conditions).
bool Evaluable(const Expr& cond, const std::unordered_set<const BufferNode*>& written,
               const std::unordered_set<const Var*>& bound_in_loop) {
  bool ok = !UsesVar(cond, [&](const Var* v) { return bound_in_loop.count(v) > 0; });
  ForEachExpr(cond, [&](const Expr& e) {
    if (const auto* load = As<BufferLoad>(e)) {
      ok &= load->buffer->scope == Scope::kGlobal && !written.count(load->buffer.get());
    }
    if (const auto* call = As<Call>(e)) {  // a value only: no thread index, vote, memory effect
      const IntrinsicInfo* info = LookupIntrinsic(call->op);
      constexpr uint32_t kNotAValue = kAddress | kThreadIndex | kRoleTest | kAtomicUpdate | kWritesArg0 |
                                      kAsyncWritesArg0 | kBlockLevel | kBarrier | kWarpCollective | kVote;
      ok &= info && !(info->effects & kNotAValue);
    }
  });
  return ok;
}

}  // namespace

/// `if c: T.copy(...); ...; T.gemm(...)` at the top of the loop body (block-sparse GEMMs):
/// the copies from global into shared memory move before the `if` and are recorded with
/// their guard, which the producer evaluates to skip their loads (arriving on the stage's
/// full barrier without bytes, so phases stay those of the trip count); the rest stays
/// under the `if` for the consumers. Only a guard the producer can evaluate: it reads no
/// buffer the kernel writes, nothing but global tensors, and no value the loop body binds.
const For* WarpSpecializer::HoistGuardedCopies(const For* loop, const Stmt& kernel_body) {
  std::unordered_set<const BufferNode*> written;
  AddWrites(kernel_body, &written);
  struct LetCollector : IRVisitor {
    std::unordered_set<const Var*> vars;
    void Visit_(const LetStmt* op) override {
      vars.insert(op->var.get());
      IRVisitor::Visit_(op);
    }
  } lets;
  lets.Visit(loop->body);
  const std::unordered_set<const Var*>& bound_in_loop = lets.vars;
  std::vector<Stmt> body;
  bool changed = false;
  const std::vector<Stmt> top = cuda::Flatten(loop->body);
  for (const Stmt& st : top) {
    const auto* branch = As<IfThenElse>(st);
    if (!branch || branch->else_case || !Evaluable(branch->cond, written, bound_in_loop)) {
      body.push_back(st);
      continue;
    }
    std::vector<Stmt> rest, copies;
    for (const Stmt& inner : cuda::Flatten(branch->then_case)) {
      const auto* c = As<CopyOp>(inner);
      bool load = c && c->src.buffer->scope == Scope::kGlobal && c->dst.buffer->scope == Scope::kShared;
      (load ? copies : rest).push_back(inner);
    }
    // Only tiles the `if` alone uses: a statement outside it reading the tile in an
    // iteration the guard skips would see the previous load of the program, whereas the
    // stage it reads holds an older one.
    bool private_tiles = true;
    for (const Stmt& other : top) {
      if (other.get() == st.get()) continue;
      auto used = BuffersOf(other);
      for (const Stmt& c : copies) private_tiles = private_tiles && !used.count(As<CopyOp>(c)->dst.buffer.get());
    }
    if (copies.empty() || !private_tiles) {
      body.push_back(st);
      continue;
    }
    for (const Stmt& c : copies) guards_[As<CopyOp>(c)] = branch->cond;
    body.insert(body.end(), copies.begin(), copies.end());
    if (!rest.empty()) body.push_back(IfThenElse::Make(branch->cond, Seq::Make(rest, st->span), nullptr, st->span));
    changed = true;
  }
  if (!changed) return loop;
  rewritten_loop_ = For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(body, loop->body->span),
                              loop->annotations, loop->span);
  return As<For>(rewritten_loop_);
}

/// The guard shared by every copy of a group (null when some copy has none or another):
/// the producer skips the group's loads when it is false.
/// The guard of a loop whose whole body runs under it (one group of copies hoisted from
/// `if g:`, every consumer statement under the same `if g:`, a block-sparse GEMM's mask).
/// Both roles then count the steps where it holds and take stages and phases from that
/// count, so a skipped k-tile costs no barrier handshake (upstream's order; the block-sparse
/// regression kernel 0.0139 -> 0.0114 ms on the H200). "tl.ws_skip_masked_steps" = false
/// keeps the trip count's stages, where a skipped k-tile still completes its stage's phase
/// with a bare arrival. Null otherwise.
Expr WarpSpecializer::SkippedStepGuard() const {
  if (!ConfigOn(ctx_, "tl.ws_skip_masked_steps", /*default_on=*/true) || groups_.size() != 1 || consumers_.empty()) return nullptr;
  Expr guard = GroupGuard(groups_[0].copies, !groups_[0].im2cols.empty());
  if (!guard) return nullptr;
  for (const Stmt& s : consumers_) {
    const auto* branch = As<IfThenElse>(s);
    if (!branch || branch->else_case || !StructuralEqual(branch->cond, guard)) return nullptr;
  }
  return guard;
}

/// The per-role step counter of SkippedStepGuard (a scalar of each thread, from 0).
Buffer WarpSpecializer::StepCounter() {
  return BufferNode::Make("tl_ws_step", DType::Int(32), {MakeInt(1)}, Scope::kVar);
}

/// `for k: if guard(k): body; step += 1`, with the counter declared before the loop.
Stmt WarpSpecializer::CountedSteps(const VarRef& k, const Expr& guard, const std::vector<Stmt>& body,
                                   const Buffer& step) const {
  const Span& span = loop_->span;
  std::vector<Stmt> counted = body;
  counted.push_back(BufferStore::Make(step, {MakeInt(0)}, BufferLoad::Make(step, {MakeInt(0)}) + MakeInt(1), span));
  Stmt each = IfThenElse::Make(AtIteration(guard, k), Seq::Make(counted, span), nullptr, span);
  return Seq::Make({Allocate::Make(step, MakeInt(0), span),
                    For::Make(k, MakeInt(0), loop_->extent, ForKind::kSerial, each, {}, span)},
                   span);
}

Expr WarpSpecializer::GroupGuard(const std::vector<const CopyOp*>& copies, bool has_im2col) const {
  if (copies.empty() || has_im2col) return nullptr;
  auto first = guards_.find(copies[0]);
  if (first == guards_.end()) return nullptr;
  for (const CopyOp* c : copies) {
    auto it = guards_.find(c);
    if (it == guards_.end() || it->second.get() != first->second.get()) return nullptr;
  }
  return first->second;
}

}  // namespace tl::transform::cuda
