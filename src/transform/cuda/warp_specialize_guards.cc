// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, guarded loads (block-sparse GEMMs): copies under an
/// `if guard:` at the top of the loop body move out of it so the producer can load them,
/// and the producer skips a group's loads in the iterations where the guard is false.
#include <unordered_set>
#include <vector>

#include "../region_util.h"
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

/// The one T.copy that fills all of `tile` from a global tensor, when nothing else in the
/// kernel writes `tile` and the copy is outside `loop`; null otherwise.
const CopyOp* SoleFillingCopy(const Buffer& tile, const Stmt& kernel_body, const For* loop) {
  struct Finder : IRVisitor {
    const BufferNode* tile;
    std::vector<const CopyOp*> copies;
    void Visit_(const CopyOp* op) override {
      if (op->dst.buffer.get() == tile) copies.push_back(op);
      IRVisitor::Visit_(op);
    }
  } all, inside;
  all.tile = inside.tile = tile.get();
  all.Visit(kernel_body);
  inside.Visit(loop->body);
  if (all.copies.size() != 1 || !inside.copies.empty()) return nullptr;
  const CopyOp* copy = all.copies[0];
  if (copy->src.buffer->scope != Scope::kGlobal || !CoversWholeBuffer(copy->dst)) return nullptr;
  // the source's non-unit extents are the tile's, in order
  std::vector<Expr> src_ext, dst_ext;
  for (const Range& r : copy->src.ranges) {
    if (!IsOne(r.extent)) src_ext.push_back(r.extent);
  }
  for (const Range& r : copy->dst.ranges) {
    if (!IsOne(r.extent)) dst_ext.push_back(r.extent);
  }
  if (src_ext.size() != dst_ext.size()) return nullptr;
  for (size_t i = 0; i < src_ext.size(); ++i) {
    if (!StructuralEqual(src_ext[i], dst_ext[i])) return nullptr;
  }
  // nothing else writes the tile
  struct Without : IRMutator {
    const CopyOp* copy;
    Stmt Mutate_(const CopyOp* op, const Stmt& self) override { return op == copy ? Seq::Make({}, op->span) : self; }
  } without;
  without.copy = copy;
  std::unordered_set<const BufferNode*> written;
  AddWrites(without.Mutate(kernel_body), &written);
  return written.count(tile.get()) ? nullptr : copy;
}

/// `cond` with each read of a tile that SoleFillingCopy finds replaced by the read of the
/// global element it was copied from (upstream's block-sparse attention: the producer reads
/// the block mask from the tensor the consumers copied it from, `block_mask[k]` ->
/// `BlockSparseMask[bz, by, bx, k]`). The tensor must be one the kernel does not write.
Expr ReadThroughFillingCopies(const Expr& cond, const Stmt& kernel_body, const For* loop) {
  struct Reader : IRMutator {
    const Stmt* body;
    const For* loop;
    Expr Mutate_(const BufferLoad* op, const Expr& self) override {
      if (op->buffer->scope == Scope::kGlobal) return IRMutator::Mutate_(op, self);
      const CopyOp* copy = SoleFillingCopy(op->buffer, *body, loop);
      if (!copy) return self;
      std::vector<Expr> at;
      for (size_t d = 0; d < op->indices.size(); ++d) {
        if (!IsOne(copy->dst.ranges[d].extent)) at.push_back(Mutate(op->indices[d]));
      }
      Expr value = BufferLoad::Make(copy->src.buffer, RegionIndices(copy->src, at));
      return value->dtype == op->dtype ? value : Cast::Make(op->dtype, value);
    }
  } reader;
  reader.body = &kernel_body;
  reader.loop = loop;
  return reader.Mutate(cond);
}

}  // namespace

/// `if c: T.copy(...); ...; T.gemm(...)` at the top of the loop body (block-sparse GEMMs):
/// the copies from global into shared memory move before the `if` and are recorded with
/// their guard, which the producer evaluates to skip their loads (arriving on the stage's
/// full barrier without bytes, so phases stay those of the trip count); the rest stays
/// under the `if` for the consumers. Only a guard the producer can evaluate: it reads no
/// buffer the kernel writes, nothing but global tensors, and no value the loop body binds;
/// a tile filled once from a global tensor before the loop counts as that tensor
/// (ReadThroughFillingCopies), the consumers keep reading the tile.
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
    Expr producer_cond = branch && !branch->else_case ? ReadThroughFillingCopies(branch->cond, kernel_body, loop) : nullptr;
    if (!producer_cond || !Evaluable(producer_cond, written, bound_in_loop)) {
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
    for (const Stmt& c : copies) guards_[As<CopyOp>(c)] = producer_cond;
    consumer_guards_[producer_cond.get()] = branch->cond;
    body.insert(body.end(), copies.begin(), copies.end());
    // One `if` per statement (upstream's form): the loads then group by the statements that
    // read them (K for the first GEMM, V for the second), each with barriers of its own. The
    // guard reads nothing the loop writes or binds, so each `if` sees the same value.
    bool declares = false;
    for (const Stmt& r : rest) declares = declares || As<LetStmt>(r) || As<Allocate>(r);
    if (declares) {
      if (!rest.empty()) body.push_back(IfThenElse::Make(branch->cond, Seq::Make(rest, st->span), nullptr, st->span));
    } else {
      for (const Stmt& r : rest) body.push_back(IfThenElse::Make(branch->cond, r, nullptr, r->span));
    }
    changed = true;
  }
  if (!changed) return loop;
  rewritten_loop_ = For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(body, loop->body->span),
                              loop->annotations, loop->span);
  return As<For>(rewritten_loop_);
}

/// The guard of a loop whose whole body runs under it (every group of copies hoisted from
/// the same `if g:`, every consumer statement under the same `if g:`: a block-sparse GEMM's
/// or attention's mask).
/// Both roles then count the steps where it holds and take stages and phases from that
/// count, so a skipped k-tile costs no barrier handshake (upstream's order; the block-sparse
/// regression kernel 0.0139 -> 0.0114 ms on the H200). "tl.ws_skip_masked_steps" = false
/// keeps the trip count's stages, where a skipped k-tile still completes its stage's phase
/// with a bare arrival. Null otherwise.
Expr WarpSpecializer::SkippedStepGuard() const {
  if (!ConfigOn(ctx_, "tl.ws_skip_masked_steps", /*default_on=*/true) || groups_.empty() || consumers_.empty()) {
    return nullptr;
  }
  // every group under the one guard (K and V of a block-sparse attention: two groups, one `if`)
  Expr guard = GroupGuard(groups_[0].copies, !groups_[0].im2cols.empty());
  if (!guard) return nullptr;
  for (const Group& g : groups_) {
    if (GroupGuard(g.copies, !g.im2cols.empty()).get() != guard.get()) return nullptr;
  }
  auto consumer_form = consumer_guards_.find(guard.get());
  const Expr& theirs = consumer_form == consumer_guards_.end() ? guard : consumer_form->second;
  for (const Stmt& s : consumers_) {
    const auto* branch = As<IfThenElse>(s);
    if (!branch || branch->else_case || !StructuralEqual(branch->cond, theirs)) return nullptr;
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

/// The guard shared by every copy of a group (null when some copy has none or another):
/// the producer skips the group's loads when it is false.
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
