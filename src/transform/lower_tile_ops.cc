// SPDX-License-Identifier: Apache-2.0
/// \file "lower-tile-ops": the target-neutral lowering of tile ops to loops, on both
/// targets: T.copy, T.fill, reductions and atomics become T.Parallel loop nests over the
/// whole tile. Bounds guards are emitted for every access; the simplify pass after this one
/// drops those it can prove (interior tiles of statically shaped tensors). On CUDA it takes
/// what the CUDA passes before it left as tile ops, and cuda-partition-parallel spreads the
/// nests over the threads; on the CPU a block's tile op runs as one nest. GEMMs are each
/// target's own (cpu-lower-gemm, cuda-lower-fragments) and lowered before this pass.
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/op/make.h"
#include "tl/transform/passes.h"
#include "region_util.h"
#include "tl/support/error.h"

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

/// A sum of 16-bit floats folded one element after another: each step rounded to 8 or 11
/// significant bits loses the small terms (a bfloat16 sum of 128 values drifted by 0.2), so
/// the loop accumulates in float32 and rounds once. (CUDA's register reductions fold a few
/// values per thread and then a tree, which loses less; this loop has no tree.)
bool SumsInFloat32(ReduceKind k, DType t) {
  return (k == ReduceKind::kSum || k == ReduceKind::kAbsSum) && t.IsFloat() && t.bits == 16;
}

/// dst[di] (+)= sum over r of x, accumulated in a float32 variable.
Stmt WidenedSum(const ReduceOp* op, const Buffer& dst, const std::vector<Expr>& di, const VarRef& r,
                const Expr& extent, const Expr& x) {
  DType f32 = DType::Float(32);
  Buffer acc = BufferNode::Make(dst->name + "_sum", f32, {MakeInt(1)}, Scope::kVar);
  Expr start = op->clear ? MakeFloat(0, f32) : Cast::Make(f32, BufferLoad::Make(dst, di));
  Expr term = op->reduce_kind == ReduceKind::kAbsSum ? Call::Make(f32, "abs", {Cast::Make(f32, x)}) : Cast::Make(f32, x);
  Expr acc_now = BufferLoad::Make(acc, {MakeInt(0)});
  Stmt step = BufferStore::Make(acc, {MakeInt(0)}, op::MakeBinary(BinOp::kAdd, acc_now, term), op->span);
  Stmt loop = For::Make(r, MakeInt(0, extent->dtype), extent, ForKind::kSerial, step, {}, op->span);
  return Seq::Make({Allocate::Make(acc, start, op->span), loop,
                    BufferStore::Make(dst, di, Cast::Make(dst->dtype, acc_now), op->span)},
                   op->span);
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
    Expr x = BufferLoad::Make(src.buffer, si);
    if (SumsInFloat32(op->reduce_kind, t)) return WidenedSum(op, dst.buffer, di, r, red_extent, x);
    Stmt update = BufferStore::Make(
        dst.buffer, di, ReduceCombine(op->reduce_kind, BufferLoad::Make(dst.buffer, di), Cast::Make(t, x)),
        op->span);
    Stmt loop = For::Make(r, MakeInt(0, red_extent->dtype), red_extent, ForKind::kSerial, update, {},
                          op->span);
    if (!op->clear) return loop;
    return Seq::Make({BufferStore::Make(dst.buffer, di, ReduceInit(op->reduce_kind, t), op->span), loop},
                     op->span);
  });
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

class TileOpLowerer : public IRMutator {
 protected:
  Stmt Mutate_(const CopyOp* op, const Stmt&) override { return LowerCopy(op); }
  Stmt Mutate_(const FillOp* op, const Stmt&) override { return LowerFill(op); }
  Stmt Mutate_(const ReduceOp* op, const Stmt&) override { return LowerReduce(op); }
  Stmt Mutate_(const AtomicOp* op, const Stmt&) override { return LowerAtomic(op); }
  Stmt Mutate_(const GemmOp* op, const Stmt&) override {
    TL_ICHECK(false) << "T.gemm at line " << op->span.line << " reached lower-tile-ops: each target lowers its "
                     << "GEMMs before (cpu-lower-gemm, cuda-lower-fragments)";
    return nullptr;
  }
};

}  // namespace

ir::Stmt LowerTileOpToLoops(const ir::Stmt& op) { return TileOpLowerer().Mutate(op); }

ir::PrimFunc LowerTileOps(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = TileOpLowerer().Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("lower-tile-ops", LowerTileOps);

}  // namespace tl::transform
