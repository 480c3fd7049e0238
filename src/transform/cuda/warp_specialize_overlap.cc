// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the attention form of the consumer loop
/// (tl.ws_softmax_overlap): step k's P V runs on the tensor cores while step k + 1's
/// softmax runs on the other units, as FlashAttention-3 overlaps them inside a warpgroup.
///
/// The loop body it takes, in the consumers' order (what upstream's flash-attention
/// examples write):
///
///   pre:      statements writing the scores S (T.clear, a causal mask), using neither O nor P
///   QK:       gemm_ss_wgmma(Q, K[k], S)
///   softmax:  reads S, writes row vectors and, in its cast statements, P (the 16-bit
///             probabilities); uses no O
///   rescale:  O scaled by those vectors; uses neither S nor P
///   PV:       gemm_rs_wgmma(P, V[k], O), the last statement; the stage is released after it
///
/// (softmax and rescale statements may interleave: each part keeps its order, and a
/// statement moves across another only if neither writes what the other uses), and runs it as
///
///   step 0:  wait K/V[0]; pre; QK(0); wait; softmax; casts; pack P -> Pr; rescale
///   step k:  wait K/V[k]; pre; issue QK(k); issue PV(k - 1) from Pr;
///            wait for QK(k) (one group left in flight); softmax     <- PV(k - 1) runs
///            wait for PV(k - 1); release stage k - 1; casts; pack P -> Pr; rescale
///   after:   issue PV(n - 1); wait; release stage n - 1
///
/// While P V is in flight nothing writes a register any wgmma reads: the casts into P and
/// its packing into the operand registers Pr wait for P V (ptxas otherwise ends the
/// pipeline stage early, or serializes the wgmmas: "non wgmma instructions defining input
/// registers of a wgmma between start and end of the pipeline stage"), as in
/// FlashAttention-3. The rescale of O by step k's factors comes after P V(k - 1) has added
/// into O and before P V(k) is issued: the sums keep their order. A stage is released one
/// step later than before, so two stages at least are needed (with one, step k's load
/// would wait for step k - 1's release).
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
  if (groups_.size() != 1) return "its tiles are loaded in more than one barrier group";
  if (stages_ < 2) return "it has one stage (step k's tiles would wait for step k - 1's release)";
  if (consumers_.size() < 3) return "its body is not QK^T, softmax, P V";
  const size_t last = consumers_.size() - 1;
  at->pv = CallOf(consumers_[last], TL_INTRINSIC_NAME("gemm_rs_wgmma"));
  if (!at->pv) return "its last statement is not a wgmma GEMM with A in registers";
  at->qk_index = consumers_.size();
  for (size_t i = 0; i < last; ++i) {
    if (const Call* c = CallOf(consumers_[i], TL_INTRINSIC_NAME("gemm_ss_wgmma"))) {
      if (at->qk_index != consumers_.size()) return "it has more than one GEMM before P V";
      at->qk_index = i;
      at->qk = c;
    }
  }
  if (!at->qk) return "no wgmma GEMM from shared memory precedes P V";
  if (groups_[0].first > at->qk_index || groups_[0].last != last) return "its stage is not used from QK^T to P V";
  at->s = AddressedBuffer(at->qk->args[2]);
  at->p = AddressedBuffer(at->pv->args[0]);
  at->o = AddressedBuffer(at->pv->args[2]);
  if (!at->s || !at->p || !at->o || at->s == at->o || at->p == at->s) return "its GEMMs' registers are not distinct";
  // each statement's buffers and the ones it writes, once
  std::vector<std::unordered_set<const BufferNode*>> uses(last), writes(last);
  for (size_t i = 0; i < last; ++i) {
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
  std::vector<std::pair<size_t, int>> parts;  // (statement, 0 softmax / 1 cast / 2 rescale)
  for (size_t i = at->qk_index + 1; i < last; ++i) {
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
  return "";
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
  auto wait_full = [&](const Expr& step) {
    return CallStmt("mbarrier_wait_parity",
                    {Full(bars, 0, FloorMod(step, MakeInt(stages_))),
                     FloorMod(FloorDiv(step, MakeInt(stages_)), MakeInt(2))},
                    span);
  };
  auto release = [&](const Expr& step, std::vector<Stmt>* out) {
    if (ReadThroughGenericProxy(groups_[0])) out->push_back(CallStmt("fence_proxy_async", {}, span));
    out->push_back(Release(Empty(bars, 0, FloorMod(step, MakeInt(stages_)))));
  };

  // QK^T issued, P V issued from the packed registers; both with their wgmmas in flight
  int64_t n_s = 0, wg_n = 1, reps_s = 1, n_o = 0, k_pv = 0, reps_o = 1;
  AsConstInt(at.qk->args[4], &n_s);
  AsConstInt(at.qk->args[9], &wg_n);
  AsConstInt(at.qk->args[10], &reps_s);
  AsConstInt(at.pv->args[4], &n_o);
  AsConstInt(at.pv->args[5], &k_pv);
  AsConstInt(at.pv->args[8], &reps_o);
  const Expr regs_s = MakeInt(n_s / wg_n / 2 * reps_s), regs_o = MakeInt(n_o / 2 * reps_o);
  const int64_t packed_regs = k_pv / 4 * reps_o;
  const Buffer packed =
      BufferNode::Make(at.p->name + "_packed", DType::UInt(32), {MakeInt(packed_regs)}, Scope::kLocal);
  const Expr packed_at = AddressOf(packed, {MakeInt(0)});
  // (their proxy fences: WithoutProxyFence, through at_step)
  std::vector<Expr> pv_args = at.pv->args;
  pv_args[0] = packed_at;
  const Stmt qk = Evaluate::Make(Call::Make(at.qk->dtype, "gemm_ss_wgmma_issue", at.qk->args), consumers_[at.qk_index]->span);
  const Stmt pv = Evaluate::Make(Call::Make(at.pv->dtype, "gemm_rs_wgmma_issue", pv_args), consumers_.back()->span);
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
      if (i == groups_[0].first) out->push_back(wait_full(step));
      out->push_back(at_step(i == at.qk_index ? qk : consumers_[i], step));
    }
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
  run(at.softmax, MakeInt(0), &out);
  casts_pack_rescale(MakeInt(0), &out);
  std::vector<Stmt> body;
  through_qk(k, &body);
  body.push_back(at_step(pv, Expr(k) - MakeInt(1)));
  body.push_back(wait_s1);
  run(at.softmax, k, &body);
  if (Stmt pin = SoftmaxPin(at); pin) body.push_back(pin);
  wait_pv(&body);
  release(Expr(k) - MakeInt(1), &body);
  casts_pack_rescale(k, &body);
  out.push_back(For::Make(k, MakeInt(1), n - MakeInt(1), ForKind::kSerial, Seq::Make(body, span), {}, span));
  out.push_back(at_step(pv, n - MakeInt(1)));
  wait_pv(&out);
  release(n - MakeInt(1), &out);
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
