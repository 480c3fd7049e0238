// SPDX-License-Identifier: Apache-2.0
/// \file "lower-tile-ops-cpu": tile ops to loops (and T.gemm to the CPU GEMM library).
///
/// On the CPU a block's tile op runs as one loop nest over the whole tile. Bounds guards
/// are emitted for every access; the simplify pass after this one drops those it can
/// prove (interior tiles of statically shaped tensors).
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/op/make.h"
#include "tl/transform/passes.h"
#include "../region_util.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

Stmt LowerCopy(const CopyOp* op) { return CopyAsLoops(op, nullptr); }

Stmt LowerFill(const FillOp* op) {
  return LoopNest(TileExtents(op->dst), "i", ForKind::kParallel, op->span, [&](auto& v) {
    auto di = RegionIndices(op->dst, v);
    return Guard(InBounds(op->dst.buffer, di),
                 BufferStore::Make(op->dst.buffer, di, op->value, op->span), op->span);
  });
}

Expr ReduceInit(ReduceKind k, DType t) {
  switch (WithoutNan(k)) {
    case ReduceKind::kSum:
    case ReduceKind::kAbsSum:
    case ReduceKind::kAbsMax: return Zero(t);
    case ReduceKind::kMax: return Call::Make(t, "neg_infinity", {});
    case ReduceKind::kMin: return Call::Make(t, "infinity", {});
    default: break;
  }
  return Zero(t);
}

Expr ReduceCombine(ReduceKind k, Expr acc, Expr x) {
  auto abs = [](Expr e) { return Call::Make(e->dtype, "abs", {e}); };
  if (PropagatesNan(k)) return NanPropagating(acc, x, ReduceCombine(WithoutNan(k), acc, x));
  switch (k) {
    case ReduceKind::kSum: return op::MakeBinary(BinOp::kAdd, acc, x);
    case ReduceKind::kAbsSum: return op::MakeBinary(BinOp::kAdd, acc, abs(x));
    case ReduceKind::kMax: return Max(acc, x);
    case ReduceKind::kMin: return Min(acc, x);
    case ReduceKind::kAbsMax: return Max(acc, abs(x));
    default: break;
  }
  return acc;
}

Stmt LowerReduce(const ReduceOp* op) {
  const Region& src = op->src;
  const Region& dst = op->dst;
  DType t = dst.buffer->dtype;
  std::vector<Expr> kept_extents;
  std::vector<size_t> kept_dims;
  for (size_t i = 0; i < src.ranges.size(); ++i) {
    if (static_cast<int>(i) != op->dim && !IsOne(src.ranges[i].extent)) {
      kept_dims.push_back(i);
      kept_extents.push_back(src.ranges[i].extent);
    }
  }
  Expr red_extent = src.ranges[op->dim].extent;
  return LoopNest(kept_extents, "i", ForKind::kParallel, op->span, [&](auto& v) {
    std::vector<Expr> di = RegionIndices(dst, v);
    VarRef r = Var::Make("r", red_extent->dtype);
    std::vector<Expr> si;
    size_t next = 0;
    for (size_t i = 0; i < src.ranges.size(); ++i) {
      if (static_cast<int>(i) == op->dim) {
        si.push_back(src.ranges[i].min + r);
      } else if (next < kept_dims.size() && kept_dims[next] == i) {
        si.push_back(src.ranges[i].min + v[next++]);
      } else {
        si.push_back(src.ranges[i].min);
      }
    }
    Expr x = Cast::Make(t, BufferLoad::Make(src.buffer, si));
    Stmt update = BufferStore::Make(
        dst.buffer, di, ReduceCombine(op->reduce_kind, BufferLoad::Make(dst.buffer, di), x), op->span);
    Stmt loop = For::Make(r, MakeInt(0, red_extent->dtype), red_extent, ForKind::kSerial, update, {},
                          op->span);
    if (!op->clear) return loop;
    return Seq::Make({BufferStore::Make(dst.buffer, di, ReduceInit(op->reduce_kind, t), op->span), loop},
                     op->span);
  });
}

Expr AddressOf(const Buffer& b, const std::vector<Expr>& idx) {
  return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, idx)});
}

Stmt LowerAtomic(const AtomicOp* op) {
  static const char* kNames[] = {"atomic_add", "atomic_max", "atomic_min"};
  const char* name = kNames[static_cast<int>(op->atomic_kind)];
  return LoopNest(TileExtents(op->dst), "i", ForKind::kParallel, op->span, [&](auto& v) {
    auto di = RegionIndices(op->dst, v);
    Expr value = op->value;
    Expr cond = InBounds(op->dst.buffer, di);
    if (op->src.buffer) {
      auto si = RegionIndices(op->src, v);
      value = Cast::Make(op->dst.buffer->dtype, BufferLoad::Make(op->src.buffer, si));
      cond = And(cond, InBounds(op->src.buffer, si));
    }
    Stmt s = Evaluate::Make(Call::Make(op->dst.buffer->dtype, name, {AddressOf(op->dst.buffer, di), value}),
                            op->span);
    return Guard(cond, s, op->span);
  });
}

/// The two tile dimensions of a gemm operand: (rows, cols) as stored.
std::pair<size_t, size_t> Gemm2D(const Region& r) {
  auto dims = TileDims(r);
  if (dims.size() == 2) return {dims[0], dims[1]};
  size_t n = r.ranges.size();
  return {n - 2, n - 1};
}

Stmt LowerGemm(const GemmOp* op) {
  auto [a0, a1] = Gemm2D(op->a);
  auto [b0, b1] = Gemm2D(op->b);
  auto [c0, c1] = Gemm2D(op->c);
  Expr m = op->c.ranges[c0].extent, n = op->c.ranges[c1].extent;
  Expr k = op->trans_a ? op->a.ranges[a0].extent : op->a.ranges[a1].extent;
  arith::Analyzer an;
  auto unit_inner = [&](const Region& r, size_t d) {
    int64_t s;
    return AsConstInt(an.Simplify(r.buffer->StrideOf(d)), &s) && s == 1;
  };
  auto mins = [](const Region& r) {
    std::vector<Expr> v;
    for (const Range& rg : r.ranges) v.push_back(rg.min);
    return v;
  };
  std::vector<Stmt> out;
  // clear_accum zeroes C before accumulating.
  Stmt clear = LoopNest({m, n}, "i", ForKind::kParallel, op->span, [&](auto& v) {
    std::vector<Expr> ci = mins(op->c);
    ci[c0] = ci[c0] + v[0];
    ci[c1] = ci[c1] + v[1];
    return BufferStore::Make(op->c.buffer, ci, Zero(op->c.buffer->dtype), op->span);
  });
  int64_t clr = 0;
  if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) {
    out.push_back(IfThenElse::Make(op->clear_accum, clear, nullptr, op->span));
  }
  if (unit_inner(op->a, a1) && unit_inner(op->b, b1) && unit_inner(op->c, c1)) {
    auto ld = [&](const Region& r, size_t d) { return Cast::Make(DType::Int(32), an.Simplify(r.buffer->StrideOf(d))); };
    std::vector<Expr> args = {AddressOf(op->a.buffer, mins(op->a)), AddressOf(op->b.buffer, mins(op->b)),
                              AddressOf(op->c.buffer, mins(op->c)),
                              Cast::Make(DType::Int(32), m), Cast::Make(DType::Int(32), n),
                              Cast::Make(DType::Int(32), k), ld(op->a, a0), ld(op->b, b0), ld(op->c, c0),
                              MakeBool(op->trans_a), MakeBool(op->trans_b), MakeBool(op->tf32)};
    out.push_back(Evaluate::Make(Call::Make(DType::Void(), "tile_gemm", args), op->span));
  } else {
    // Strided operands: a plain triple loop, accumulating in C's type.
    DType t = op->c.buffer->dtype;
    out.push_back(LoopNest({m, n, k}, "i", ForKind::kSerial, op->span, [&](auto& v) {
      std::vector<Expr> ai = mins(op->a), bi = mins(op->b), ci = mins(op->c);
      ai[a0] = ai[a0] + (op->trans_a ? v[2] : v[0]);
      ai[a1] = ai[a1] + (op->trans_a ? v[0] : v[2]);
      bi[b0] = bi[b0] + (op->trans_b ? v[1] : v[2]);
      bi[b1] = bi[b1] + (op->trans_b ? v[2] : v[1]);
      ci[c0] = ci[c0] + v[0];
      ci[c1] = ci[c1] + v[1];
      Expr av = BufferLoad::Make(op->a.buffer, ai), bv = BufferLoad::Make(op->b.buffer, bi);
      if (op->tf32) {  // a T.gemm on tfloat32 tiles: operands rounded to TF32 (as tl::cpu::gemm does)
        av = Call::Make(DType::Float(32), "round_tf32", {av});
        bv = Call::Make(DType::Float(32), "round_tf32", {bv});
      }
      Expr prod = op::MakeBinary(BinOp::kMul, Cast::Make(t, av), Cast::Make(t, bv));
      return BufferStore::Make(op->c.buffer, ci,
                               op::MakeBinary(BinOp::kAdd, BufferLoad::Make(op->c.buffer, ci), prod),
                               op->span);
    }));
  }
  return Seq::Make(out, op->span);
}

class TileOpLowerer : public IRMutator {
 protected:
  Stmt Mutate_(const CopyOp* op, const Stmt&) override { return LowerCopy(op); }
  Stmt Mutate_(const FillOp* op, const Stmt&) override { return LowerFill(op); }
  Stmt Mutate_(const ReduceOp* op, const Stmt&) override { return LowerReduce(op); }
  Stmt Mutate_(const AtomicOp* op, const Stmt&) override { return LowerAtomic(op); }
  Stmt Mutate_(const GemmOp* op, const Stmt&) override { return LowerGemm(op); }
};

}  // namespace

ir::Stmt LowerTileOpToLoops(const ir::Stmt& op) { return TileOpLowerer().Mutate(op); }

ir::PrimFunc LowerTileOpsCpu(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = TileOpLowerer().Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("lower-tile-ops-cpu", LowerTileOpsCpu);

}  // namespace tl::transform
