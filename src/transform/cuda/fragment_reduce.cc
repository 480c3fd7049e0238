// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments" (see lower_fragments.h), its reductions: T.reduce_* of
/// register fragments, along rows with in-thread folds, warp shuffles and a shared workspace
/// across warps; along columns with shared-memory atomics.
#include <string>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/printer.h"
#include "tl/layout/fragment.h"
#include "tl/op/make.h"
#include "tl/target/warp.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "copy_lowering.h"
#include "fragment_inference.h"
#include "lower_fragments.h"
#include "thread_binding.h"

namespace tl::transform::fragments {
using target::kWarpSize;
namespace {

/// How a T.reduce_* folds values of type t: its identity and its combining step (sum, min,
/// max, NaN-propagating min/max), and whether elements enter as their absolute value.
struct RowFold {
  RowFold(ReduceKind k, DType t)
      : type(t),
        kind(WithoutNan(k)),
        nan(PropagatesNan(k)),
        sum(kind == ReduceKind::kSum || kind == ReduceKind::kAbsSum),
        is_abs(kind == ReduceKind::kAbsSum || kind == ReduceKind::kAbsMax),
        init(sum ? (t.IsFloat() ? MakeFloat(0, t) : MakeInt(0, t))
                 : Call::Make(t, kind == ReduceKind::kMin ? "infinity" : "neg_infinity", {})) {}
  Expr Combine(const Expr& a, const Expr& b) const {
    if (sum) return op::MakeBinary(BinOp::kAdd, a, b);
    bool is_min = kind == ReduceKind::kMin;
    if (type.IsFloat() && type.bits == 16) {
      // half / bfloat16: one max.f16 / max.NaN.bf16 (CUDA's __hmax, __hmax_nan) rather than
      // a widening, a float max and a rounding
      const char* name = is_min ? (nan ? "__hmin_nan" : "__hmin") : (nan ? "__hmax_nan" : "__hmax");
      return Call::Make(type, name, {a, b});
    }
    Expr m = is_min ? Min(a, b) : Max(a, b);
    return nan ? NanPropagating(a, b, m) : m;
  }
  /// The tile reduction's combine across lanes (tl::AllReduce with this fold's Op).
  const char* AllReduceName() const {
    if (sum) return "allreduce_sum";
    if (kind == ReduceKind::kMin) return nan ? "allreduce_min_nan" : "allreduce_min";
    return nan ? "allreduce_max_nan" : "allreduce_max";
  }
  const DType type;
  const ReduceKind kind;  ///< without the NaN flavour
  const bool nan, sum, is_abs;
  const Expr init;
};

}  // namespace

Stmt FragmentRewriter::Mutate_(const ReduceOp* op, const Stmt& self) {
  auto it = regs_.find(op->src.buffer.get());
  auto dst_regs = regs_.find(op->dst.buffer.get());
  if (it != regs_.end() || dst_regs != regs_.end()) {
    // Under a branch on a range of warps: a row reduction of a tile held by exactly those
    // threads (lane shuffles in converged warps; across warps through a shared workspace,
    // which the barrier pass guards with a named barrier over the range).
    bool in_warps = it != regs_.end() && op->dim == 1;
    std::vector<const RegFragment*> held;
    if (in_warps) held.push_back(&it->second);
    if (in_warps && dst_regs != regs_.end()) held.push_back(&dst_regs->second);
    RefuseUnderThreadBranch(self, "T.reduce_*", held);
  }
  if (it != regs_.end() && op->dim == 1) return ReduceRows(op, it->second);
  if (it != regs_.end() && op->src.buffer->shape.size() == 1 && dst_regs == regs_.end()) {
    if (Stmt s = ReduceVector(op, it->second)) return s;
  }
  if (it == regs_.end() && dst_regs != regs_.end() && dst_regs->second.layout->is_rows()) {
    return ReduceIntoRows(op, dst_regs->second);
  }
  if (dst_regs != regs_.end()) {
    TL_USER_ERROR(op->span) << "the destination of this reduction (" << op->dst.buffer->name
                            << ") is held in registers, which only row reductions of a register tile support";
  }
  if (it == regs_.end()) return IRMutator::Mutate_(op, self);
  // Along columns: each thread folds its own registers into the (shared) destination
  // with shared-memory atomics; the barrier pass orders them after the initialisation
  // and before readers.
  const RegFragment& rf = it->second;
  if (PropagatesNan(op->reduce_kind)) {
    TL_USER_ERROR(op->span) << "T.reduce_" << ReduceKindName(op->reduce_kind) << "(nan_propagate=True) along "
                            << "the columns of register fragment " << op->src.buffer->name << " is not supported "
                            << "(it folds with shared-memory atomics, which skip NaN); reduce along dim=1, or "
                            << "without nan_propagate";
  }
  Region dst = MutateRegion(op->dst);
  DType t = dst.buffer->dtype;
  std::vector<Stmt> out;
  if (op->clear) {
    Expr init = op->reduce_kind == ReduceKind::kMax   ? Call::Make(t, "neg_infinity", {})
                : op->reduce_kind == ReduceKind::kMin ? Call::Make(t, "infinity", {})
                : (t.IsFloat() ? MakeFloat(0, t) : MakeInt(0, t));
    out.push_back(FillOp::Make(dst, init, op->span));
  }
  VarRef l = Var::Make("l");
  auto [i, j] = rf.layout->Inverse(tx_, l);
  Expr row = op->dim == 1 ? i : j;
  Expr x = Cast::Make(t, BufferLoad::Make(rf.regs, {l}));
  bool is_abs = op->reduce_kind == ReduceKind::kAbsSum || op->reduce_kind == ReduceKind::kAbsMax;
  if (is_abs) x = Call::Make(t, "abs", {x});
  const char* fn = (op->reduce_kind == ReduceKind::kSum || op->reduce_kind == ReduceKind::kAbsSum) ? "atomic_add"
                   : op->reduce_kind == ReduceKind::kMin                                          ? "atomic_min"
                                                                                                  : "atomic_max";
  std::vector<Expr> di;
  size_t used = 0;
  for (const Range& rg : dst.ranges) {
    int64_t e = 0;
    bool unit = AsConstInt(rg.extent, &e) && e == 1;
    di.push_back(unit || used++ ? rg.min : rg.min + row);
  }
  Stmt st = Evaluate::Make(
      Call::Make(t, fn, {Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(dst.buffer, di)}), x}),
      op->span);
  out.push_back(For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, op->span));
  ctx_.remarks.push_back("T.reduce of register fragment " + op->src.buffer->name +
                         ": shared-memory atomics (no warp-shuffle reduction yet)");
  return Seq::Make(out, op->span);
}

/// A whole register vector reduced into one element (of a shared destination): each thread
/// folds its registers, the lanes of each warp combine theirs with shuffles
/// (tl::AllReduce), and when the vector spans several warps, lane 0 of each leaves its
/// partial in a small shared workspace that one thread folds. A vector of per-row (or
/// per-column) values keeps identical copies in several threads: for a sum only the first
/// copy of each counts (FragmentLayout::FirstCopy).
Stmt FragmentRewriter::ReduceVector(const ReduceOp* op, const RegFragment& rf) {
  const FragmentLayout& lay = *rf.layout;
  const int64_t threads = lay.num_threads();
  const int64_t lanes = threads < kWarpSize ? threads : kWarpSize, warps = threads / lanes;
  if (!lay.is_rows() || lanes & (lanes - 1) || warps * lanes != threads || warps > kWarpSize) return Stmt();
  Region dst = MutateRegion(op->dst);
  for (const Range& rg : dst.ranges) {
    if (!IsOne(rg.extent)) return Stmt();
  }
  DType t = dst.buffer->dtype;
  const RowFold f(op->reduce_kind, t);
  auto combine = [&](const Expr& a, const Expr& b) { return f.Combine(a, b); };
  std::vector<Expr> di;
  for (const Range& rg : dst.ranges) di.push_back(rg.min);
  std::vector<Stmt> out;
  Buffer work;
  if (warps > 1) {
    work = BufferNode::Make(op->src.buffer->name + "_red", t, {MakeInt(warps)}, Scope::kShared);
    out.push_back(Allocate::Make(work, nullptr, op->span));
  }
  // acc = fold of this thread's registers
  VarRef l = Var::Make("l");
  Buffer acc = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
  Expr x = Cast::Make(t, BufferLoad::Make(rf.regs, {l}));
  if (f.is_abs) x = Call::Make(t, "abs", {x});
  out.push_back(Allocate::Make(acc, f.init, op->span));
  out.push_back(For::Make(l, MakeInt(0), MakeInt(lay.num_local()), ForKind::kUnrolled,
                          BufferStore::Make(acc, {MakeInt(0)}, combine(BufferLoad::Make(acc, {MakeInt(0)}), x), op->span),
                          {}, op->span));
  Expr mine = BufferLoad::Make(acc, {MakeInt(0)});
  if (Expr first = lay.FirstCopy(tx_); first && f.sum) mine = Select::Make(first, mine, f.init);
  Expr reduced = lanes > 1 ? Call::Make(t, f.AllReduceName(), {mine, MakeInt(lanes), MakeBool(true)}) : mine;
  VarRef part = Var::Make("part", t);
  Expr lane = FloorMod(tx_, MakeInt(kWarpSize));
  Stmt publish;
  if (warps == 1) {
    // Every lane has the result; thread 0 writes it.
    Expr v = op->clear ? Expr(part) : combine(BufferLoad::Make(dst.buffer, di), part);
    publish = IfThenElse::Make(EQ(tx_, MakeInt(0)), BufferStore::Make(dst.buffer, di, v, op->span), nullptr, op->span);
  } else {
    Expr warp = FloorDiv(tx_, MakeInt(kWarpSize));
    publish = IfThenElse::Make(EQ(lane, MakeInt(0)), BufferStore::Make(work, {warp}, part, op->span), nullptr, op->span);
  }
  out.push_back(LetStmt::Make(part, reduced, op->span));
  out.push_back(publish);
  if (warps > 1) {
    // One thread folds the warps' partials (a one-iteration T.Parallel: the barrier pass
    // orders it after the partials' writes).
    VarRef r = Var::Make("r"), w = Var::Make("w");
    Buffer acc2 = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
    Stmt f2 = BufferStore::Make(acc2, {MakeInt(0)},
                                combine(BufferLoad::Make(acc2, {MakeInt(0)}), BufferLoad::Make(work, {Expr(w)})),
                                op->span);
    f2 = For::Make(w, MakeInt(0), MakeInt(warps), ForKind::kUnrolled, f2, {}, op->span);
    Expr v = BufferLoad::Make(acc2, {MakeInt(0)});
    if (!op->clear) v = combine(BufferLoad::Make(dst.buffer, di), v);
    Stmt one = Seq::Make({Allocate::Make(acc2, f.init, op->span), f2, BufferStore::Make(dst.buffer, di, v, op->span)},
                         op->span);
    out.push_back(For::Make(r, MakeInt(0), MakeInt(1), ForKind::kParallel, one, {}, op->span));
  }
  ctx_.remarks.push_back("T.reduce of register vector " + op->src.buffer->name + " (" + lay.ToString() +
                         "): in-thread fold, warp shuffles" +
                         (warps > 1 ? ", shared workspace across " + std::to_string(warps) + " warps" : ""));
  return Seq::Make(out, op->span);
}

/// A tile every thread can read (shared or global memory) reduced into a per-row register
/// vector: each thread folds the whole of each row it holds. Threads that share a row repeat
/// the same fold, which costs loads but no communication; this is what a register vector
/// tied to a GEMM accumulator's rows gets when the reduced tile itself could not be split
/// over the warps (a 16 x 16 tile on 4 warps).
Stmt FragmentRewriter::ReduceIntoRows(const ReduceOp* op, const RegFragment& dst_rf) {
  Region src = MutateRegion(op->src);
  std::vector<size_t> wide;  // the source's non-unit dimensions: (row, reduced) or (reduced, row)
  for (size_t d = 0; d < src.ranges.size(); ++d) {
    int64_t e = 0;
    if (!(AsConstInt(src.ranges[d].extent, &e) && e == 1)) wide.push_back(d);
  }
  if (wide.size() != 2 || (op->dim != 0 && op->dim != 1) || !CoversWholeBuffer(op->dst)) {
    TL_USER_ERROR(op->span) << "the destination of this reduction (" << op->dst.buffer->name
                            << ") is held in registers; reducing " << op->src.buffer->name
                            << " into it needs a 2-D source tile and the whole destination";
  }
  DType t = op->dst.buffer->dtype;
  const RowFold fold_kind(op->reduce_kind, t);
  auto combine = [&](const Expr& a, const Expr& b) { return fold_kind.Combine(a, b); };
  const Expr init = fold_kind.init;
  const bool is_abs = fold_kind.is_abs;
  const size_t reduced_dim = wide[op->dim], row_dim = wide[1 - op->dim];
  VarRef lr = Var::Make("lr"), j = Var::Make("j");
  Expr row = dst_rf.layout->Inverse(tx_, lr).first;
  std::vector<Expr> si;
  for (size_t d = 0; d < src.ranges.size(); ++d) {
    si.push_back(d == row_dim ? src.ranges[d].min + row
                 : d == reduced_dim ? src.ranges[d].min + j : src.ranges[d].min);
  }
  Expr x = Cast::Make(t, BufferLoad::Make(src.buffer, si));
  if (is_abs) x = Call::Make(t, "abs", {x});
  Buffer acc = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
  Stmt fold = BufferStore::Make(acc, {MakeInt(0)}, combine(BufferLoad::Make(acc, {MakeInt(0)}), x), op->span);
  fold = For::Make(j, MakeInt(0), src.ranges[reduced_dim].extent, ForKind::kSerial, fold, {}, op->span);
  Expr v = BufferLoad::Make(acc, {MakeInt(0)});
  if (!op->clear) v = combine(BufferLoad::Make(dst_rf.regs, {lr}), v);
  Stmt body = Seq::Make({Allocate::Make(acc, init, op->span), fold, BufferStore::Make(dst_rf.regs, {lr}, v, op->span)},
                        op->span);
  ctx_.remarks.push_back("T.reduce of " + op->src.buffer->name + " into register vector " + op->dst.buffer->name +
                         " (" + dst_rf.layout->ToString() + "): each thread folds the rows it holds");
  return For::Make(lr, MakeInt(0), MakeInt(dst_rf.layout->num_local()), ForKind::kUnrolled, body, {}, op->span);
}

/// The fold of a row reduction over a column window of a register tile (`F[:, c0:c0 + w]`,
/// a reshaped tile reduced over its inner columns; lower-buffer-views): the thread's registers
/// of row lr, each folded where its column is in the window. Which are is decided here where
/// the layout allows (an mma tile's register q holds one of 8 columns whatever the lane), else
/// by a test in the code. Null when the reduction reads the whole row.
Stmt FragmentRewriter::FoldColumnWindow(const ReduceOp* op, const FragmentLayout& lay, const VarRef& lr,
                                        const VarRef& q, const Stmt& fold) {
  int64_t lo = 0, width = 0, cols = 0;
  const Range& r = op->src.ranges.back();
  TL_ICHECK(op->src.ranges.size() == 2 && AsConstInt(r.min, &lo) && AsConstInt(r.extent, &width) &&
            AsConstInt(op->src.buffer->shape.back(), &cols))
      << "row reduction of " << op->src.buffer->name << ": a window of a register tile needs static columns";
  if (lo == 0 && width == cols) return nullptr;
  arith::Analyzer an;
  an.BindRange(tx_.get(), MakeInt(0), MakeInt(threads));
  an.BindRange(lr.get(), MakeInt(0), MakeInt(lay.Rows()->num_local()));
  std::vector<Stmt> out;
  for (int64_t k = 0; k < lay.regs_per_row(); ++k) {
    Expr col = lay.Inverse(tx_, lay.RowReg(lr, MakeInt(k))).second;
    Expr in = And(GE(col, MakeInt(lo)), LT(col, MakeInt(lo + width)));
    if (an.CanProve(Not::Make(in))) continue;
    Stmt at = Substitute(fold, [&](const Var* v) -> Expr { return v == q.get() ? MakeInt(k) : nullptr; });
    out.push_back(an.CanProve(in) ? at : IfThenElse::Make(in, at, nullptr, op->span));
  }
  return Seq::Make(out, op->span);
}

/// Row reduction of a register tile: each thread folds the registers of each of its
/// rows, the lanes that share a row combine with warp shuffles, and when several warps
/// split a row their partials meet in a small shared workspace.
Stmt FragmentRewriter::ReduceRows(const ReduceOp* op, const RegFragment& rf) {
  const FragmentLayout& lay = *rf.layout;
  FragmentLayoutRef rows = lay.Rows();
  Region dst = MutateRegion(op->dst);
  auto dst_it = regs_.find(op->dst.buffer.get());
  const RegFragment* dst_regs = dst_it == regs_.end() ? nullptr : &dst_it->second;
  TL_ICHECK(!dst_regs || *dst_regs->layout == *rows)
      << "row reduction into " << dst_regs->layout->ToString() << ", expected " << rows->ToString();
  DType t = dst.buffer->dtype;
  const RowFold fold_kind(op->reduce_kind, t);
  auto combine = [&](const Expr& a, const Expr& b) { return fold_kind.Combine(a, b); };
  const Expr init = fold_kind.init;
  const bool is_abs = fold_kind.is_abs;
  const char* shuffle = fold_kind.AllReduceName();
  const int64_t lanes = lay.row_lanes(), wn = lay.row_warps();
  Expr lane = FloorMod(tx_, MakeInt(kWarpSize)), warp_n = lay.RowWarp(tx_);
  auto dst_at = [&](const Expr& row) {
    std::vector<Expr> di;
    bool used = false;
    for (const Range& rg : dst.ranges) {
      int64_t e = 0;
      bool unit = AsConstInt(rg.extent, &e) && e == 1;
      di.push_back(unit || used ? rg.min : rg.min + row);
      used |= !unit;
    }
    return di;
  };
  Buffer work;
  std::vector<Stmt> out;
  if (wn > 1) {
    work = BufferNode::Make(op->src.buffer->name + "_red", t, {MakeInt(lay.m() * wn)}, Scope::kShared);
    out.push_back(Allocate::Make(work, nullptr, op->span));
  }
  VarRef lr = Var::Make("lr"), q = Var::Make("q");
  VarRef part = Var::Make("part", t);
  Buffer acc = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
  // acc = fold over this thread's registers of its row lr
  Expr x = Cast::Make(t, BufferLoad::Make(rf.regs, {lay.RowReg(lr, q)}));
  if (is_abs) x = Call::Make(t, "abs", {x});
  Stmt fold = BufferStore::Make(acc, {MakeInt(0)}, combine(BufferLoad::Make(acc, {MakeInt(0)}), x), op->span);
  if (Stmt window = FoldColumnWindow(op, lay, lr, q, fold)) {
    fold = window;
  } else {
    fold = For::Make(q, MakeInt(0), MakeInt(lay.regs_per_row()), ForKind::kUnrolled, fold, {}, op->span);
  }
  Expr reduced = BufferLoad::Make(acc, {MakeInt(0)});
  // (third argument: every lane of the warp calls it, converged: register-fragment
  // reductions run under a condition on the thread only when it selects whole warps that
  // hold the tile, RefuseUnderThreadBranch)
  if (lanes > 1) reduced = Call::Make(t, shuffle, {reduced, MakeInt(lanes), MakeBool(true)});
  Expr row = rows->Inverse(tx_, lr).first;
  Stmt publish;
  if (dst_regs && wn == 1) {
    // Every lane of the group has the result: each keeps it in its own register.
    Expr old = BufferLoad::Make(dst_regs->regs, {lr});
    publish = BufferStore::Make(dst_regs->regs, {lr}, op->clear ? Expr(part) : combine(old, part), op->span);
  } else {
    if (wn == 1) {
      auto di = dst_at(row);
      Expr v = op->clear ? Expr(part) : combine(BufferLoad::Make(dst.buffer, di), part);
      publish = BufferStore::Make(dst.buffer, di, v, op->span);
    } else {
      publish = BufferStore::Make(work, {row * MakeInt(wn) + warp_n}, part, op->span);
    }
    if (lanes > 1) {
      publish = IfThenElse::Make(EQ(FloorMod(lane, MakeInt(lanes)), MakeInt(0)), publish, nullptr, op->span);
    }
  }
  Stmt body = Seq::Make({Allocate::Make(acc, init, op->span), fold, LetStmt::Make(part, reduced, op->span), publish},
                        op->span);
  out.push_back(For::Make(lr, MakeInt(0), MakeInt(rows->num_local()), ForKind::kUnrolled, body, {}, op->span));
  if (wn > 1 && dst_regs) {
    // Across warps, into registers: every thread folds the partials of its own rows.
    VarRef lr2 = Var::Make("lr"), w = Var::Make("w");
    Expr r = rows->Inverse(tx_, lr2).first;
    Buffer acc2 = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
    Stmt f2 = BufferStore::Make(acc2, {MakeInt(0)},
                                combine(BufferLoad::Make(acc2, {MakeInt(0)}),
                                        BufferLoad::Make(work, {r * MakeInt(wn) + w})),
                                op->span);
    f2 = For::Make(w, MakeInt(0), MakeInt(wn), ForKind::kUnrolled, f2, {}, op->span);
    Expr v = BufferLoad::Make(acc2, {MakeInt(0)});
    if (!op->clear) v = combine(BufferLoad::Make(dst_regs->regs, {lr2}), v);
    Stmt per_row = Seq::Make({Allocate::Make(acc2, init, op->span), f2,
                              BufferStore::Make(dst_regs->regs, {lr2}, v, op->span)}, op->span);
    out.push_back(For::Make(lr2, MakeInt(0), MakeInt(rows->num_local()), ForKind::kUnrolled, per_row, {},
                            op->span));
  } else if (wn > 1) {
    // Across warps: one thread per row folds the warps' partials (spread over threads).
    VarRef r = Var::Make("r"), w = Var::Make("w");
    Buffer acc2 = BufferNode::Make("acc", t, {MakeInt(1)}, Scope::kVar);
    Stmt f2 = BufferStore::Make(acc2, {MakeInt(0)},
                                combine(BufferLoad::Make(acc2, {MakeInt(0)}),
                                        BufferLoad::Make(work, {Expr(r) * MakeInt(wn) + w})),
                                op->span);
    f2 = For::Make(w, MakeInt(0), MakeInt(wn), ForKind::kUnrolled, f2, {}, op->span);
    auto di = dst_at(r);
    Expr v = BufferLoad::Make(acc2, {MakeInt(0)});
    if (!op->clear) v = combine(BufferLoad::Make(dst.buffer, di), v);
    Stmt per_row = Seq::Make({Allocate::Make(acc2, init, op->span), f2, BufferStore::Make(dst.buffer, di, v, op->span)},
                             op->span);
    out.push_back(For::Make(r, MakeInt(0), MakeInt(lay.m()), ForKind::kParallel, per_row, {}, op->span));
  }
  ctx_.remarks.push_back("T.reduce of register fragment " + op->src.buffer->name + " (" + lay.ToString() +
                         ") along rows: in-thread fold" + (lanes > 1 ? ", warp shuffles" : "") +
                         (wn > 1 ? ", shared workspace across " + std::to_string(wn) + " warps" : "") +
                         (dst_regs && wn == 1 ? ", result in registers" : ""));
  return Seq::Make(out, op->span);
}

}  // namespace tl::transform::fragments
