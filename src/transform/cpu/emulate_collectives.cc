// SPDX-License-Identifier: Apache-2.0
/// \file Warp collectives (T.warp_reduce_*, T.shfl_*) and votes in the CPU's
/// lockstep emulation of thread-level code (emulate_threads.h): each thread's
/// operand is recorded, then every thread combines the lanes of its warp (or
/// block) as the hardware would.
#include "emulate_threads.h"
#include "tl/ir/intrinsics.h"
#include "tl/target/warp.h"

namespace tl::transform::cpu {
using target::kWarpSize;

Expr ThreadEmulator::ExtractCollectives(const Expr& e, const Expr& mask, const Span& span, std::vector<Stmt>* out) {
  if (!e) return e;
  struct Extractor : IRMutator {
    ThreadEmulator* em;
    Expr mask;
    Span span;
    std::vector<Stmt>* out;
    Expr Mutate_(const Call* op, const Expr& self) override {
      Expr inner = IRMutator::Mutate_(op, self);
      const auto* call = As<Call>(inner);
      if (!IsCollective(call->op)) return inner;
      return em->Collective(call, mask, span, out);
    }
  } ex;
  ex.em = this;
  ex.mask = mask;
  ex.span = span;
  ex.out = out;
  return ex.Mutate(e);
}

namespace {

/// How a warp_reduce_* intrinsic folds one lane into the running value (kNone: the call is
/// another collective, a shuffle).
enum class LaneFold { kNone, kAdd, kMax, kMin, kBitAnd, kBitOr };

LaneFold WarpReduceFold(const Call* call) {
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("warp_reduce_sum"))) return LaneFold::kAdd;
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("warp_reduce_max"))) return LaneFold::kMax;
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("warp_reduce_min"))) return LaneFold::kMin;
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("warp_reduce_bitand"))) return LaneFold::kBitAnd;
  if (IsIntrinsic(call, TL_INTRINSIC_NAME("warp_reduce_bitor"))) return LaneFold::kBitOr;
  return LaneFold::kNone;
}

Expr Fold(LaneFold fold, const Expr& a, const Expr& x) {
  switch (fold) {
    case LaneFold::kAdd: return op::MakeBinary(BinOp::kAdd, a, x);
    case LaneFold::kMax: return Max(a, x);
    case LaneFold::kMin: return Min(a, x);
    case LaneFold::kBitAnd: return Binary::Make(BinOp::kBitAnd, a, x);
    default: return Binary::Make(BinOp::kBitOr, a, x);
  }
}

}  // namespace

Expr ThreadEmulator::Collective(const Call* call, const Expr& mask, const Span& span, std::vector<Stmt>* out) {
  if (HasEffect(call, kVote)) return Vote(call, mask, span, out);
  DType t = call->dtype;
  Buffer operand = NewArray("lanes", t, span, out);
  out->push_back(ThreadLoop(BufferStore::Make(operand, {t_}, At(call->args[0]), span), mask, span));
  const LaneFold lane_fold = WarpReduceFold(call);
  Buffer result = NewArray(lane_fold == LaneFold::kNone ? "shuffled" : "reduced", t, span, out);
  Expr tt = t_;
  Stmt compute;
  if (lane_fold != LaneFold::kNone) {
    int64_t width = kWarpSize;
    AsConstInt(call->args[1], &width);
    // Lanes base .. base + width - 1 of this thread's group; the first always
    // exists.
    Expr base = tt - FloorMod(tt, MakeInt(width));
    Buffer acc = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
    VarRef l = Var::Make("lane");
    Expr lane = base + l, x = BufferLoad::Make(operand, {lane}), a = BufferLoad::Make(acc, {MakeInt(0)});
    Expr combined = Fold(lane_fold, a, x);
    Stmt fold = IfThenElse::Make(LT(lane, MakeInt(threads_)), BufferStore::Make(acc, {MakeInt(0)}, combined, span),
                                 nullptr, span);
    compute = Seq::Make({Allocate::Make(acc, BufferLoad::Make(operand, {base}), span),
                         For::Make(l, MakeInt(1), MakeInt(width - 1), ForKind::kSerial, fold, {}, span),
                         BufferStore::Make(result, {tt}, a, span)},
                        span);
  } else {
    Expr arg = At(call->args[1]), width = At(call->args[2]);
    Expr lane = FloorMod(tt, width), base = tt - lane;
    Expr src, valid;
    if (IsIntrinsic(call, TL_INTRINSIC_NAME("shfl_xor"))) {
      Expr other = Binary::Make(BinOp::kBitXor, lane, arg);
      src = base + other;
      valid = LT(other, width);
    } else if (IsIntrinsic(call, TL_INTRINSIC_NAME("shfl_down"))) {
      src = tt + arg;
      valid = LT(lane + arg, width);
    } else if (IsIntrinsic(call, TL_INTRINSIC_NAME("shfl_up"))) {
      src = tt - arg;
      valid = GE(lane - arg, MakeInt(0));
    } else {
      src = base + FloorMod(arg, width);
      valid = MakeBool(true);
    }
    // Out of the group or past the block: the lane keeps its own value, as on
    // the GPU.
    valid = And(valid, LT(src, MakeInt(threads_)));
    compute = BufferStore::Make(
        result, {tt}, Select::Make(valid, BufferLoad::Make(operand, {src}), BufferLoad::Make(operand, {tt})), span);
  }
  out->push_back(ThreadLoop(compute, mask, span));
  return BufferLoad::Make(result, {t_});
}

Expr ThreadEmulator::Vote(const Call* call, const Expr& mask, const Span& span, std::vector<Stmt>* out) {
  const std::string& op = call->op;
  bool block = HasEffect(call, kBlockLevel);  // __syncthreads_count/and/or: over the block, not the warp
  bool has_lane_mask = !block && op != TL_INTRINSIC_NAME("vote_activemask");
  DType i32 = DType::Int(32), u64 = DType::UInt(64);
  Buffer active = NewArray("active", i32, span, out);
  out->push_back(ThreadLoop(BufferStore::Make(active, {t_}, MakeInt(0, i32), span), nullptr, span));
  out->push_back(ThreadLoop(BufferStore::Make(active, {t_}, MakeInt(1, i32), span), mask, span));
  Expr operand_expr =
      op == TL_INTRINSIC_NAME("vote_activemask") ? MakeInt(1, i32) : call->args[has_lane_mask ? 1 : 0];
  DType ot = operand_expr->dtype;
  Buffer operand = NewArray("lanes", ot, span, out);
  out->push_back(ThreadLoop(BufferStore::Make(operand, {t_}, At(operand_expr), span), mask, span));
  Buffer result = NewArray("voted", call->dtype, span, out);
  Expr tt = t_;
  int64_t width = block ? threads_ : kWarpSize;
  Expr base = block ? MakeInt(0) : tt - FloorMod(tt, MakeInt(kWarpSize));
  VarRef l = Var::Make("lane");
  Expr lane = base + l;
  Expr lane_mask = has_lane_mask ? Cast::Make(u64, At(call->args[0])) : MakeInt(0xFFFFFFFFll, u64);
  Expr bit = Binary::Make(BinOp::kShl, MakeInt(1, u64), Cast::Make(u64, Expr(l)));
  Expr in_mask = Binary::Make(BinOp::kNE, Binary::Make(BinOp::kBitAnd, lane_mask, bit), MakeInt(0, u64));
  Expr takes_part = And(And(LT(lane, MakeInt(threads_)), EQ(BufferLoad::Make(active, {lane}), MakeInt(1, i32))),
                        block ? Expr() : in_mask);
  Expr x = BufferLoad::Make(operand, {lane});
  Expr set = Binary::Make(BinOp::kNE, x, ot.IsFloat() ? MakeFloat(0, ot) : MakeInt(0, ot));
  Expr same = EQ(x, BufferLoad::Make(operand, {tt}));
  DType at = call->dtype;
  Buffer acc = BufferNode::Make("acc", at, {MakeInt(1)}, Scope::kVar);
  Expr a = BufferLoad::Make(acc, {MakeInt(0)});
  Expr init = MakeInt(0, at), step;
  auto as = [&](const Expr& e) { return Cast::Make(at, e); };
  if (op == TL_INTRINSIC_NAME("vote_any_sync") || op == TL_INTRINSIC_NAME("syncthreads_or")) {
    step = Binary::Make(BinOp::kBitOr, a, as(set));
  } else if (op == TL_INTRINSIC_NAME("vote_all_sync") || op == TL_INTRINSIC_NAME("syncthreads_and")) {
    init = MakeInt(1, at);
    step = Binary::Make(BinOp::kBitAnd, a, as(set));
  } else if (op == TL_INTRINSIC_NAME("syncthreads_count")) {
    step = a + as(set);
  } else if (op == TL_INTRINSIC_NAME("vote_ballot_sync") || op == TL_INTRINSIC_NAME("vote_activemask")) {
    step = Binary::Make(BinOp::kBitOr, a, Select::Make(set, as(bit), MakeInt(0, at)));
  } else if (op == TL_INTRINSIC_NAME("vote_match_any_sync")) {
    step = Binary::Make(BinOp::kBitOr, a, Select::Make(same, as(bit), MakeInt(0, at)));
  } else {  // vote_match_all_sync: the lane mask when every lane in it agrees,
            // else 0
    init = as(lane_mask);
    step = Select::Make(same, a, MakeInt(0, at));
  }
  Stmt fold = IfThenElse::Make(takes_part, BufferStore::Make(acc, {MakeInt(0)}, step, span), nullptr, span);
  Stmt compute = Seq::Make(
      {Allocate::Make(acc, init, span), For::Make(l, MakeInt(0), MakeInt(width), ForKind::kSerial, fold, {}, span),
       BufferStore::Make(result, {tt}, a, span)},
      span);
  out->push_back(ThreadLoop(compute, mask, span));
  return BufferLoad::Make(result, {t_});
}
}  // namespace tl::transform::cpu
