// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the attention form of the consumer loop
/// (tl.ws_softmax_overlap): step k's P V runs on the tensor cores while step k + 1's
/// softmax runs on the other units, as FlashAttention-3 overlaps them inside a warpgroup.
///
/// The loop body it takes, in the consumers' order (what upstream's flash-attention
/// examples write):
///
///   pre:  statements writing the scores S (T.clear, a causal mask), touching neither O nor P
///   QK:   gemm_ss_wgmma(Q, K[k], S)
///   mid1: the softmax: reads S, writes P (the 16-bit cast of the probabilities) and row
///         vectors; touches no O
///   mid2: the rescale of O by those vectors: touches neither S nor P
///   (mid1's and mid2's statements may interleave: each part keeps its order, and a
///   softmax statement moves before a rescale one only if it writes nothing that reads)
///   PV:   gemm_rs_wgmma(P, V[k], O), the last statement, after which the stage is released
///
/// and runs it as
///
///   step 0:  wait K/V[0]; pre; QK(0); wait; mid1; pack P -> Pr[0]; mid2
///   step k:  wait K/V[k]; pre; issue QK(k); issue PV(k - 1) from Pr[(k - 1) % 2];
///            wait for QK(k) (one group left in flight); mid1          <- PV(k - 1) runs
///            wait for PV(k - 1); release stage k - 1; pack P -> Pr[k % 2]; mid2
///   after:   issue PV(n - 1) from Pr[(n - 1) % 2]; wait; release stage n - 1
///
/// (steps in pairs, so that each names its register set statically). P is packed into
/// wgmma's operand registers, a set of its own per step, so mid1 may write P while the
/// previous P V still reads the other set. The rescale of O by step k's factors comes
/// after P V(k - 1) has added into O and before P V(k) is issued: the order of the sums is
/// the original one. A stage is released one step later than before, so two stages at
/// least are needed (with one, step k's load would wait for step k - 1's release).
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
  return call && call->op == name ? call : nullptr;
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
  auto touches = [&](size_t i, const BufferNode* b) { return BuffersOf(consumers_[i]).count(b) > 0; };
  for (size_t i = 0; i < at->qk_index; ++i) {
    if (touches(i, at->o) || touches(i, at->p)) return "a statement before QK^T uses O or P";
  }
  // between QK^T and P V: the softmax (no O) and the rescale of O (no S, no P), each
  // keeping its order; a softmax statement after a rescale one moves up only when it
  // writes nothing that rescale statement uses
  std::unordered_set<const BufferNode*> rescale_uses, softmax_uses;
  bool writes_p = false;
  for (size_t i = at->qk_index + 1; i < last; ++i) {
    std::unordered_set<const BufferNode*> w;
    AddWrites(consumers_[i], &w);
    auto used = BuffersOf(consumers_[i]);
    if (touches(i, at->o)) {
      if (touches(i, at->s) || touches(i, at->p)) return "a statement uses O together with S or P";
      at->rescale.push_back(i);
      rescale_uses.insert(used.begin(), used.end());
      continue;
    }
    for (const BufferNode* b : w) {
      if (rescale_uses.count(b)) return "the softmax writes " + b->name + " after the rescale of O reads it";
    }
    writes_p |= w.count(at->p) > 0;
    at->softmax.push_back(i);
    softmax_uses.insert(used.begin(), used.end());
  }
  if (!writes_p) return "P is not written between QK^T and P V";
  for (size_t i : at->rescale) {
    std::unordered_set<const BufferNode*> w;
    AddWrites(consumers_[i], &w);
    for (const BufferNode* b : w) {
      if (b != at->o && softmax_uses.count(b)) return "the rescale of O writes " + b->name + ", which the softmax uses";
    }
  }
  return "";
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
  // two sets of packed registers, step k packing into set k % 2 while P V(k - 1) reads the
  // other: with one set, ptxas writes the conversions straight into the registers P V
  // still reads and so moves its wait for P V up to the start of the softmax (SASS)
  const Buffer packed[2] = {
      BufferNode::Make(at.p->name + "_packed", DType::UInt(32), {MakeInt(packed_regs)}, Scope::kLocal),
      BufferNode::Make(at.p->name + "_packed_next", DType::UInt(32), {MakeInt(packed_regs)}, Scope::kLocal)};
  std::vector<Expr> qk_args = at.qk->args;
  qk_args[8] = MakeBool(false);  // TMA fills Q, K and V: no proxy fence (WithoutProxyFence)
  const Stmt qk = Evaluate::Make(Call::Make(at.qk->dtype, "gemm_ss_wgmma_issue", qk_args), consumers_[at.qk_index]->span);
  auto pv_issue = [&](const Expr& step, int set) {
    std::vector<Expr> args = at.pv->args;
    args[0] = AddressOf(packed[set], {MakeInt(0)});
    args[7] = MakeBool(false);
    return at_step(Evaluate::Make(Call::Make(at.pv->dtype, "gemm_rs_wgmma_issue", args), consumers_.back()->span), step);
  };
  const Stmt wait_s0 = CallStmt("wgmma_wait_hold", {at.qk->args[2], MakeInt(0), regs_s}, span);
  const Stmt wait_s1 = CallStmt("wgmma_wait_hold", {at.qk->args[2], MakeInt(1), regs_s}, span);
  auto wait_pv = [&](int set, std::vector<Stmt>* out) {
    out->push_back(CallStmt("wgmma_wait_hold", {at.pv->args[2], MakeInt(0), regs_o}, span));
    out->push_back(CallStmt("wgmma_hold", {AddressOf(packed[set], {MakeInt(0)}), MakeInt(packed_regs)}, span));
  };
  auto pack = [&](int set) {
    return CallStmt("wgmma_pack_a", {AddressOf(packed[set], {MakeInt(0)}), at.pv->args[0], MakeInt(packed_regs)}, span);
  };

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
  // step k >= 1, packing into `set` (k % 2)
  auto steady = [&](const Expr& step, int set, std::vector<Stmt>* out) {
    through_qk(step, out);
    out->push_back(pv_issue(step - MakeInt(1), 1 - set));
    out->push_back(wait_s1);
    run(at.softmax, step, out);
    wait_pv(1 - set, out);
    release(step - MakeInt(1), out);
    out->push_back(pack(set));
    run(at.rescale, step, out);
  };
  auto last_pv = [&](int set) {
    std::vector<Stmt> out = {pv_issue(n - MakeInt(1), set)};
    wait_pv(set, &out);
    release(n - MakeInt(1), &out);
    return Seq::Make(out, span);
  };

  std::vector<Stmt> out = {Allocate::Make(packed[0], nullptr, span), Allocate::Make(packed[1], nullptr, span)};
  through_qk(MakeInt(0), &out);
  out.push_back(wait_s0);
  run(at.softmax, MakeInt(0), &out);
  out.push_back(pack(0));
  run(at.rescale, MakeInt(0), &out);
  // steps 1 .. n - 1 in pairs (sets 1, 0), then an odd one left (set 1), then P V(n - 1)
  std::vector<Stmt> pair;
  const Expr t2 = Expr(k) * MakeInt(2);
  steady(t2 + MakeInt(1), 1, &pair);
  steady(t2 + MakeInt(2), 0, &pair);
  out.push_back(For::Make(k, MakeInt(0), FloorDiv(n - MakeInt(1), MakeInt(2)), ForKind::kSerial, Seq::Make(pair, span),
                          {}, span));
  std::vector<Stmt> odd;
  steady(n - MakeInt(1), 1, &odd);
  odd.push_back(last_pv(1));
  out.push_back(IfThenElse::Make(EQ(FloorMod(n - MakeInt(1), MakeInt(2)), MakeInt(1)), Seq::Make(odd, span),
                                 last_pv(0), span));
  ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": " + at.o->name + " += " +
                         at.p->name + " V of step k runs while step k + 1's softmax does (QK^T of k + 1 issued "
                         "first, " + at.p->name + " packed into two sets of " +
                         std::to_string(packed_regs) + " registers; tl.ws_softmax_overlap)");
  Stmt loop = Seq::Make(out, span);
  int64_t steps = 0;
  if (AsConstInt(n, &steps) && steps >= 1) return loop;
  return IfThenElse::Make(LT(MakeInt(0), n), loop, nullptr, span);
}

}  // namespace tl::transform::cuda
