// SPDX-License-Identifier: Apache-2.0
/// \file "cpu-lower-gemm": T.gemm on the CPU target, as a call into the CPU tile-GEMM library
/// (tl::cpu::gemm, `tile_gemm`) when each operand's rows are contiguous, else a serial triple
/// loop accumulating in C's type. T.gemm on tfloat32 tiles rounds A and B to TF32 either way.
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/op/make.h"
#include "tl/transform/passes.h"
#include "../region_util.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

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

class GemmLowerer : public IRMutator {
 protected:
  Stmt Mutate_(const GemmOp* op, const Stmt&) override { return LowerGemm(op); }
};

}  // namespace

ir::PrimFunc CpuLowerGemm(const ir::PrimFunc& f, PassContext& ctx) {
  return ir::PrimFuncNode::Make(f->name, f->params, GemmLowerer().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cpu-lower-gemm", CpuLowerGemm);

}  // namespace tl::transform
