// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the attention form of the consumer loop
/// (tl.ws_softmax_overlap, on by default): step k's P V runs on the tensor cores while step
/// k + 1's softmax runs on the other units, as FlashAttention-3 overlaps them inside a
/// warpgroup.
///
/// The loop body it takes, in the consumers' order (what upstream's flash-attention
/// examples write):
///
///   pre:      statements writing the scores S (T.clear, a causal mask), using neither O nor P
///   QK:       gemm_ss_wgmma(Q, K[k], S)
///   softmax:  reads S, writes row vectors and, in its cast statements, P (the 16-bit
///             probabilities); uses no O
///   rescale:  O scaled by those vectors; uses neither S nor P
///   PV:       gemm_rs_wgmma(P, V[k], O)
///   after PV: more softmax statements (the row sums, in upstream's older examples), using
///             neither O nor P: they move above P V
///
/// (softmax and rescale statements may interleave: each part keeps its order, and a
/// statement moves across another only if neither writes what the other uses), and runs it as
///
///   step 0:  wait K[0]; pre; QK(0); wait; release K[0]; softmax; casts; pack P -> Pr; rescale
///   step k:  wait K[k]; pre; issue QK(k); wait V[k - 1]; issue PV(k - 1) from Pr;
///            wait for QK(k) (one group left in flight); release K[k]; softmax  <- PV(k - 1) runs
///            wait for PV(k - 1); release V[k - 1]; casts; pack P -> Pr; rescale
///   after:   wait V[n - 1]; issue PV(n - 1); wait; release V[n - 1]
///
/// K and V have full/empty barrier pairs of their own (the plan splits them when this form
/// matches): V's stage is released a step after K's, and with one pair for both the
/// producer's load of step k + 1 would wait for P V(k), a bubble in every step (measured on
/// the H100: 4.9 ms against 3.5 with the pairs split, MHA forward 8x32x4096x128).
///
/// While P V is in flight nothing writes a register any wgmma reads: the casts into P and
/// its packing into the operand registers Pr wait for P V (ptxas otherwise ends the
/// pipeline stage early, or serializes the wgmmas: "non wgmma instructions defining input
/// registers of a wgmma between start and end of the pipeline stage"), as in
/// FlashAttention-3. The rescale of O by step k's factors comes after P V(k - 1) has added
/// into O and before P V(k) is issued: the sums keep their order.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <unordered_set>
#include <vector>

#include "../region_util.h"
#include "pipeline_schedule.h"
#include "tl/ir/intrinsics.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

const Call* CallOf(const Stmt& s, std::string_view name) {
  const auto* ev = As<Evaluate>(s);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  return IsIntrinsic(call, name) ? call : nullptr;
}

/// The buffer an `address_of(buf[...])` argument points into, or null.
const BufferNode* AddressedBuffer(const Expr& e) {
  const auto* addr = As<Call>(e);
  const auto* load = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load ? load->buffer.get() : nullptr;
}

}  // namespace

/// Whether the consumer loop has the attention form above; fills `at` or says why not.
std::string WarpSpecializer::MatchAttentionSteps(AttentionSteps* at) {
  if (SkippedStepGuard()) return "the loop's steps are guarded";
  if (consumers_.size() < 3) return "its body is not QK^T, softmax, P V";
  // P V: the loop's one wgmma GEMM with A in registers; QK^T: its one from shared memory, before it
  for (size_t i = 0; i < consumers_.size(); ++i) {
    if (const Call* c = CallOf(consumers_[i], TL_INTRINSIC_NAME("gemm_rs_wgmma"))) {
      if (at->pv) return "it has more than one wgmma GEMM with A in registers";
      at->pv = c;
      at->pv_index = i;
    }
  }
  if (!at->pv) return "no wgmma GEMM with A in registers (P V)";
  const size_t pv_index = at->pv_index;
  at->qk_index = consumers_.size();
  for (size_t i = 0; i < consumers_.size(); ++i) {
    if (const Call* c = CallOf(consumers_[i], TL_INTRINSIC_NAME("gemm_ss_wgmma"))) {
      if (i > pv_index) return "a wgmma GEMM from shared memory follows P V";
      if (at->qk_index != consumers_.size()) return "it has more than one GEMM before P V";
      at->qk_index = i;
      at->qk = c;
    }
  }
  if (!at->qk) return "no wgmma GEMM from shared memory precedes P V";
  for (const Group& g : groups_) {
    using Use = AttentionSteps::Use;
    if (g.last <= at->qk_index) {
      at->group_use.push_back(Use::kQk);
    } else if (g.first == pv_index && g.last == pv_index) {
      at->group_use.push_back(Use::kPv);
    } else if (g.first <= at->qk_index && g.last == pv_index) {
      // released a step later than it is awaited: with one stage, step k's loads would wait
      // for step k - 1's release, which comes after them
      if (stages_ < 2) return "it has one stage and a tile used from QK^T to P V";
      at->group_use.push_back(Use::kBoth);
    } else {
      return "a loaded tile is used between QK^T and P V";
    }
  }
  at->s = AddressedBuffer(at->qk->args[2]);
  at->p = AddressedBuffer(at->pv->args[0]);
  at->o = AddressedBuffer(at->pv->args[2]);
  if (!at->s || !at->p || !at->o || at->s == at->o || at->p == at->s) return "its GEMMs' registers are not distinct";
  // each statement's buffers and the ones it writes, once
  std::vector<std::unordered_set<const BufferNode*>> uses(consumers_.size()), writes(consumers_.size());
  for (size_t i = 0; i < consumers_.size(); ++i) {
    if (i == pv_index) continue;
    uses[i] = BuffersOf(consumers_[i]);
    AddWrites(consumers_[i], &writes[i]);
  }
  auto touches = [&](size_t i, const BufferNode* b) { return uses[i].count(b) > 0; };
  for (size_t i = 0; i < at->qk_index; ++i) {
    if (touches(i, at->o) || touches(i, at->p)) return "a statement before QK^T uses O or P";
  }
  // between QK^T and P V: the softmax, its casts into P, and the rescale of O. Each part
  // keeps its order; a statement moves past another only when neither writes what the
  // other uses (the casts go after the rest of the softmax, the rescale after both).
  // Statements after P V (the row sums, in upstream's older examples) join the softmax: they
  // may use neither O nor P, and move above P V and whatever they do not depend on.
  std::vector<std::pair<size_t, int>> parts;  // (statement, 0 softmax / 1 cast / 2 rescale)
  for (size_t i = at->qk_index + 1; i < consumers_.size(); ++i) {
    if (i == pv_index) continue;
    if (i > pv_index && (touches(i, at->o) || touches(i, at->p))) return "a statement after P V uses O or P";
    if (touches(i, at->o)) {
      if (touches(i, at->s) || touches(i, at->p)) return "a statement uses O together with S or P";
      parts.push_back({i, 2});
    } else {
      parts.push_back({i, writes[i].count(at->p) ? 1 : 0});
    }
  }
  auto independent = [&](size_t a, size_t b) {
    for (const BufferNode* x : writes[a]) {
      if (uses[b].count(x)) return false;
    }
    for (const BufferNode* x : writes[b]) {
      if (uses[a].count(x)) return false;
    }
    return true;
  };
  for (size_t x = 0; x < parts.size(); ++x) {
    for (size_t y = x + 1; y < parts.size(); ++y) {
      // a later statement of an earlier part moves above this one
      if (parts[y].second < parts[x].second && !independent(parts[x].first, parts[y].first)) {
        return "the softmax, its casts into " + at->p->name + " and the rescale of " + at->o->name +
               " cannot be reordered (statements " + std::to_string(parts[x].first) + " and " +
               std::to_string(parts[y].first) + " depend on each other)";
      }
    }
  }
  for (const auto& [i, part] : parts) (part == 0 ? at->softmax : part == 1 ? at->casts : at->rescale).push_back(i);
  if (at->casts.empty()) return "nothing writes P between QK^T and P V";
  // While P V(k - 1) runs, O, S(k) and the packed P(k - 1) are all live: where they would not
  // fit the consumers' registers, ptxas spills (upstream's MHA regression config, 128 x 128
  // rows in one warpgroup: 772 bytes of spill stores in the order written, 1,444 overlapped).
  const int64_t live = OverlapRegisters(*at).total(), budget = ConsumerRegisters() - kOverlapSpareRegisters;
  if (live > budget) {
    return "O, S and the packed P would hold " + std::to_string(live) + " registers per thread while P V runs, over the " +
           std::to_string(budget) + " the consumers have for them";
  }
  FindScoreInit(at);
  return "";
}

/// The statement before QK^T that sets all of S's registers from values that do not read S
/// (`for l in [0, regs): S[l] = v`), when it is the only one before QK^T touching S and S is
/// float: QK^T then overwrites S (its first k step's wgmmas with scale-d 0) and v, unless
/// zero, is added once QK^T is done. The scores are the same (v + s = s + v, exactly), and
/// the mask's work moves out of the window where no wgmma runs into the one where P V does.
void WarpSpecializer::FindScoreInit(AttentionSteps* at) {
  at->score_init = consumers_.size();
  int64_t regs = 0;
  if (at->s->dtype != DType::Float(32) || at->s->shape.size() != 1 || !AsConstInt(at->s->shape[0], &regs)) return;
  size_t found = consumers_.size();
  for (size_t i = 0; i < at->qk_index; ++i) {
    if (!BuffersOf(consumers_[i]).count(at->s)) continue;
    if (found != consumers_.size()) return;
    found = i;
  }
  if (found == consumers_.size()) return;
  const auto* loop = As<For>(consumers_[found]);
  const auto* store = loop ? As<BufferStore>(loop->body) : nullptr;
  int64_t min = -1, extent = 0;
  if (!store || store->buffer.get() != at->s || store->indices.size() != 1 || !AsConstInt(loop->min, &min) ||
      min != 0 || !AsConstInt(loop->extent, &extent) || extent != regs) {
    return;
  }
  const auto* index = As<Var>(store->indices[0]);
  bool reads_s = false;
  ForEachExpr(store->value, [&](const Expr& e) {
    if (const auto* load = As<BufferLoad>(e)) reads_s |= load->buffer.get() == at->s;
  });
  if (index != loop->var.get() || reads_s) return;
  // the mask moves below the statements between it and QK^T (and P V): none may write what it reads
  std::unordered_set<const BufferNode*> later_writes = {at->o};
  for (size_t i = found + 1; i < at->qk_index; ++i) AddWrites(consumers_[i], &later_writes);
  bool reads_later = false;
  ForEachExpr(store->value, [&](const Expr& e) {
    if (const auto* load = As<BufferLoad>(e)) reads_later |= later_writes.count(load->buffer.get()) > 0;
  });
  if (reads_later) return;
  at->score_init = found;
  at->score_var = loop->var;
  const auto* zero = As<FloatImm>(store->value);
  at->score_mask = zero && zero->value == 0 ? Expr() : store->value;
}

/// Per consumer thread: S's accumulators, O's, and P packed as a wgmma A operand.
WarpSpecializer::OverlapRegisterCounts WarpSpecializer::OverlapRegisters(const AttentionSteps& at) {
  int64_t n_s = 0, wg_n = 1, reps_s = 1, n_o = 0, k_pv = 0, reps_o = 1;
  AsConstInt(at.qk->args[4], &n_s);
  AsConstInt(at.qk->args[9], &wg_n);
  AsConstInt(at.qk->args[10], &reps_s);
  AsConstInt(at.pv->args[4], &n_o);
  AsConstInt(at.pv->args[5], &k_pv);
  AsConstInt(at.pv->args[8], &reps_o);
  return {n_s / wg_n / 2 * reps_s, n_o / 2 * reps_o, k_pv / 4 * reps_o};
}

/// With tl.ws_softmax_overlap_pin: schedule_after(the first element of a float register
/// vector the last softmax statement writes, the row sums' update say), else null.
Stmt WarpSpecializer::SoftmaxPin(const AttentionSteps& at) {
  if (!ConfigTrue(ctx_, "tl.ws_softmax_overlap_pin") || at.softmax.empty()) return nullptr;
  struct LastStore : IRVisitor {
    Buffer found;
    void Visit_(const BufferStore* op) override {
      if (op->buffer->scope == Scope::kLocal && op->buffer->dtype == DType::Float(32)) found = op->buffer;
      IRVisitor::Visit_(op);
    }
  } last;
  last.Visit(consumers_[at.softmax.back()]);
  if (!last.found) return nullptr;
  return CallStmt("schedule_after", {BufferLoad::Make(last.found, {MakeInt(0)})}, loop_->span);
}

Stmt WarpSpecializer::OverlappedAttentionLoop(const Buffer& bars, const AttentionSteps& at) {
  const Span& span = loop_->span;
  VarRef k = Var::Make(loop_->var->name, loop_->var->dtype);
  const Expr n = loop_->extent;
  // statement s of step `step`: the loop variable's value and the step's stage
  auto at_step = [&](const Stmt& s, const Expr& step) {
    Stmt x = Substitute(WithoutProxyFence(s),
                        [&](const Var* v) -> Expr { return v == loop_->var.get() ? loop_->min + step : nullptr; });
    cuda::StageSelector select(staged_, FloorMod(step, MakeInt(stages_)));
    return select.Mutate(x);
  };
  using Use = AttentionSteps::Use;
  // the waits for (and releases of) the stages of the groups used as `use`, at step `step`
  auto wait_full = [&](size_t g, const Expr& step, std::vector<Stmt>* out) {
    out->push_back(CallStmt("mbarrier_wait_parity",
                            {Full(bars, g, FloorMod(step, MakeInt(stages_))),
                             FloorMod(FloorDiv(step, MakeInt(stages_)), MakeInt(2))},
                            span));
  };
  auto release = [&](std::initializer_list<Use> uses, const Expr& step, std::vector<Stmt>* out) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (std::find(uses.begin(), uses.end(), at.group_use[g]) == uses.end()) continue;
      if (ReadThroughGenericProxy(groups_[g])) out->push_back(CallStmt("fence_proxy_async", {}, span));
      out->push_back(Release(Empty(bars, g, FloorMod(step, MakeInt(stages_)))));
    }
  };

  // QK^T issued, P V issued from the packed registers; both with their wgmmas in flight
  const OverlapRegisterCounts counts = OverlapRegisters(at);
  const Expr regs_s = MakeInt(counts.s), regs_o = MakeInt(counts.o);
  const int64_t packed_regs = counts.packed;
  const Buffer packed =
      BufferNode::Make(at.p->name + "_packed", DType::UInt(32), {MakeInt(packed_regs)}, Scope::kLocal);
  const Expr packed_at = AddressOf(packed, {MakeInt(0)});
  // (their proxy fences: WithoutProxyFence, through at_step)
  std::vector<Expr> pv_args = at.pv->args;
  pv_args[0] = packed_at;
  // QK^T: with a score init, it overwrites S (AccumulateC false, after KTileA and KTileB)
  const bool overwrite_s = at.score_init < consumers_.size();
  std::vector<Expr> qk_args = at.qk->args;
  if (overwrite_s) {
    if (qk_args.size() == 11) qk_args.insert(qk_args.end(), {qk_args[5], qk_args[5]});
    qk_args.push_back(MakeBool(false));
  }
  const Stmt qk = Evaluate::Make(Call::Make(at.qk->dtype, "gemm_ss_wgmma_issue", qk_args), consumers_[at.qk_index]->span);
  // ... and the mask is added once it is done
  Stmt add_mask;
  if (overwrite_s && at.score_mask) {
    const auto* init = As<For>(consumers_[at.score_init]);
    const Buffer s_buf = As<BufferStore>(init->body)->buffer;
    Stmt add = BufferStore::Make(s_buf, {Expr(at.score_var)},
                                 BufferLoad::Make(s_buf, {Expr(at.score_var)}) + at.score_mask, init->body->span);
    add_mask = For::Make(at.score_var, MakeInt(0), init->extent, init->for_kind, add, init->annotations, init->span);
    // tl.ws_softmax_mask_skip (on; 0 turns it off): only in the steps where it can change a
    // score (causal attention on the H100: 1.96-2.15 ms against 2.16-2.33 adding it always)
    int64_t regs = 0;
    AsConstInt(init->extent, &regs);
    if (Expr needed = ConfigOn(ctx_, "tl.ws_softmax_mask_skip", true) ? MaskNeeded(at.score_mask, at.score_var.get(), regs)
                                                                     : Expr()) {
      add_mask = IfThenElse::Make(needed, add_mask, nullptr, init->span);
      ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": the mask on " + at.s->name +
                             " is added only in the steps where it can change a score (tl.ws_softmax_mask_skip)");
    }
  }
  const Stmt pv = Evaluate::Make(Call::Make(at.pv->dtype, "gemm_rs_wgmma_issue", pv_args), consumers_[at.pv_index]->span);
  const Stmt wait_s0 = CallStmt("wgmma_wait_hold", {at.qk->args[2], MakeInt(0), regs_s}, span);
  const Stmt wait_s1 = CallStmt("wgmma_wait_hold", {at.qk->args[2], MakeInt(1), regs_s}, span);
  auto wait_pv = [&](std::vector<Stmt>* out) {
    out->push_back(CallStmt("wgmma_wait_hold", {at.pv->args[2], MakeInt(0), regs_o}, span));
    out->push_back(CallStmt("wgmma_hold", {packed_at, MakeInt(packed_regs)}, span));
  };
  const Stmt pack = CallStmt("wgmma_pack_a", {packed_at, at.pv->args[0], MakeInt(packed_regs)}, span);

  // step `step` up to its QK^T issued (the wait for its stage before the first statement using it)
  auto through_qk = [&](const Expr& step, std::vector<Stmt>* out) {
    for (size_t i = 0; i <= at.qk_index; ++i) {
      for (size_t g = 0; g < groups_.size(); ++g) {
        if (groups_[g].first == i && at.group_use[g] != Use::kPv) wait_full(g, step, out);
      }
      if (i != at.score_init) out->push_back(at_step(i == at.qk_index ? qk : consumers_[i], step));
    }
  };
  auto mask = [&](const Expr& step, std::vector<Stmt>* out) {
    if (add_mask) out->push_back(at_step(add_mask, step));
  };
  // P V of step `step` issued, after the wait for its V stage
  auto issue_pv = [&](const Expr& step, std::vector<Stmt>* out) {
    for (size_t g = 0; g < groups_.size(); ++g) {
      if (at.group_use[g] == Use::kPv) wait_full(g, step, out);
    }
    out->push_back(at_step(pv, step));
  };
  auto run = [&](const std::vector<size_t>& which, const Expr& step, std::vector<Stmt>* out) {
    for (size_t i : which) out->push_back(at_step(consumers_[i], step));
  };
  auto casts_pack_rescale = [&](const Expr& step, std::vector<Stmt>* out) {
    run(at.casts, step, out);
    out->push_back(pack);
    run(at.rescale, step, out);
  };

  std::vector<Stmt> out = {Allocate::Make(packed, nullptr, span)};
  through_qk(MakeInt(0), &out);
  out.push_back(wait_s0);
  release({Use::kQk}, MakeInt(0), &out);
  mask(MakeInt(0), &out);
  run(at.softmax, MakeInt(0), &out);
  casts_pack_rescale(MakeInt(0), &out);
  std::vector<Stmt> body;
  through_qk(k, &body);
  issue_pv(Expr(k) - MakeInt(1), &body);
  body.push_back(wait_s1);
  release({Use::kQk}, k, &body);
  mask(k, &body);
  run(at.softmax, k, &body);
  if (Stmt pin = SoftmaxPin(at); pin) body.push_back(pin);
  wait_pv(&body);
  release({Use::kPv, Use::kBoth}, Expr(k) - MakeInt(1), &body);
  casts_pack_rescale(k, &body);
  out.push_back(For::Make(k, MakeInt(1), n - MakeInt(1), ForKind::kSerial, Seq::Make(body, span), {}, span));
  issue_pv(n - MakeInt(1), &out);
  wait_pv(&out);
  release({Use::kPv, Use::kBoth}, n - MakeInt(1), &out);
  ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": " + at.o->name + " += " +
                         at.p->name + " V of step k runs while step k + 1's softmax does (QK^T of k + 1 issued "
                         "first; " + at.p->name + " cast and packed into " + std::to_string(packed_regs) +
                         " registers once P V(k - 1) is done; tl.ws_softmax_overlap)");
  Stmt loop = Seq::Make(out, span);
  int64_t steps = 0;
  if (AsConstInt(n, &steps) && steps >= 1) return loop;
  return IfThenElse::Make(LT(MakeInt(0), n), loop, nullptr, span);
}

}  // namespace tl::transform::cuda
