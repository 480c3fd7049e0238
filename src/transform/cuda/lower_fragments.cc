// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments": gives every fragment a home and rewrites its uses.
///
/// Layout inference (fragment_inference.h) decides where each fragment lives. Rewrite:
/// a fragment with a layout becomes `num_local` registers per thread; T.Parallel nests
/// over it become loops over each thread's own registers, and copies, fills, reductions
/// and GEMMs address the registers. Fragments without a layout are kept in shared memory
/// (a reported decision), where every tile op works on them as on shared tiles.
///
/// Precondition: "cuda-bind-threads" wrapped the kernel body in a thread binding `tx`.
#include <unordered_map>
#include <unordered_set>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/printer.h"
#include "tl/layout/fragment.h"
#include "tl/op/make.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "copy_lowering.h"
#include "fragment_inference.h"
#include "thread_binding.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file
using cuda::AccessCollector;
using cuda::CollectNest;
using cuda::IndicesAreVars;
using cuda::IsFragment;
using cuda::IsWhole2D;
using cuda::ParallelNest;
using layout::FragmentLayout;
using layout::FragmentLayoutRef;
using layout::MmaAccumulatorLayout;

/// Rewrites fragments: register fragments to per-thread arrays, the rest to shared memory.
class FragmentRewriter : public IRMutator {
 public:
  /// A fragment held in registers: its per-thread array and its layout.
  struct RegFragment {
    Buffer regs;
    FragmentLayoutRef layout;
  };
  FragmentRewriter(const cuda::FragmentLayouts& inference, VarRef tx, PassContext& ctx)
      : layouts_(inference.layouts), simt_gemms_(inference.simt_gemms), rs_gemms_(inference.rs_gemms),
        wgmma_gemms_(inference.wgmma_gemms), no_wgmma_(inference.no_wgmma),
        tx_(std::move(tx)), ctx_(ctx) {}

 protected:
  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    if (!IsFragment(op->buffer)) return IRMutator::Mutate_(op, self);
    const Buffer& b = op->buffer;
    auto it = layouts_.find(b.get());
    if (it != layouts_.end()) {
      Buffer regs = BufferNode::Make(b->name, b->dtype, {MakeInt(it->second.layout->num_local())}, Scope::kLocal);
      regs_[b.get()] = {regs, it->second.layout};
      ctx_.remarks.push_back("fragment " + b->name + ": registers, layout " + it->second.layout->ToString() +
                             " (" + std::to_string(it->second.layout->num_local()) + " per thread)");
      return Allocate::Make(regs, op->init, op->span);
    }
    Buffer shared = BufferNode::Make(b->name, b->dtype, b->shape, Scope::kShared, b->strides);
    demoted_[b.get()] = shared;
    ctx_.remarks.push_back("fragment " + b->name + ": kept in shared memory (no T.gemm fixes its layout)");
    return Allocate::Make(shared, op->init, op->span);
  }

  Buffer MutateBuffer(const Buffer& b) override {
    auto it = demoted_.find(b.get());
    return it == demoted_.end() ? b : it->second;
  }

  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    auto it = regs_.find(op->buffer.get());
    if (it == regs_.end()) return IRMutator::Mutate_(op, self);
    auto local = current_.find(op->buffer.get());
    if (local == current_.end() || !IndicesMatch(op->indices, local->second.first)) {
      TL_USER_ERROR(span_) << "fragment " << op->buffer->name
                           << " (held in registers) can only be accessed element-wise inside a T.Parallel "
                              "loop over its whole shape, as " << op->buffer->name << "[i, j]";
    }
    return BufferLoad::Make(it->second.regs, {local->second.second});
  }

  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    span_ = op->span;
    auto it = regs_.find(op->buffer.get());
    if (it == regs_.end()) return IRMutator::Mutate_(op, self);
    auto local = current_.find(op->buffer.get());
    if (local == current_.end() || !IndicesMatch(op->indices, local->second.first)) {
      TL_USER_ERROR(op->span) << "fragment " << op->buffer->name
                              << " (held in registers) can only be written element-wise inside a T.Parallel "
                                 "loop over its whole shape";
    }
    return BufferStore::Make(it->second.regs, {local->second.second}, Mutate(op->value), op->span);
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    span_ = op->span;
    if (Stmt printed = PrintRegisterTile(op); printed) return printed;
    if (op->for_kind != ForKind::kParallel) return IRMutator::Mutate_(op, self);
    ParallelNest nest = CollectNest(op);
    AccessCollector c;
    c.Visit(nest.body);
    const RegFragment* anchor = nullptr;
    for (auto& [b, idx] : c.accesses) {
      auto it = regs_.find(b.get());
      if (it != regs_.end() && IndicesAreVars(idx, nest)) {
        anchor = &it->second;
        break;
      }
    }
    if (!anchor) return IRMutator::Mutate_(op, self);
    // for l in [0, num_local): (i, j) = inverse(tx, l); body with F[i, j] -> F_regs[l]
    // (and, next to a tile, a per-row vector R[i] -> R_regs[row of l]).
    const FragmentLayout& lay = *anchor->layout;
    VarRef l = Var::Make("l");
    auto [i, j] = lay.Inverse(tx_, l);
    const Var* vi = nest.loops[0]->var.get();
    const Var* vj = nest.loops.size() > 1 ? nest.loops[1]->var.get() : nullptr;
    std::vector<const Var*> all_vars = {vi};
    if (vj) all_vars.push_back(vj);
    current_.clear();
    for (const auto& [buf, rf] : regs_) {
      if (*rf.layout == lay) current_[buf] = {all_vars, l};
      if (!lay.is_rows() && *rf.layout == *lay.Rows()) current_[buf] = {{vi}, lay.RowLocal(l)};
    }
    Stmt body = Mutate(nest.body);
    current_.clear();
    body = Substitute(body, [&](const Var* v) -> Expr {
      if (v == vi) return i;
      if (vj && v == vj) return j;
      return nullptr;
    });
    return For::Make(l, MakeInt(0), MakeInt(lay.num_local()), ForKind::kUnrolled, body,
                     {{cuda::kRegisterWalk, MakeInt(1)}}, op->span);
  }

  /// T.print of a whole tile (serial loops around a once-per-block print) when the tile is
  /// a register fragment: every thread prints the elements it holds, with their indices.
  Stmt PrintRegisterTile(const For* op) {
    std::vector<const For*> loops = {op};
    while (const auto* inner = As<For>(loops.back()->body)) loops.push_back(inner);
    const auto* attr = As<AttrStmt>(loops.back()->body);
    if (!attr || attr->key.rfind("tl.print1:", 0) != 0 || attr->values.size() != loops.size() + 1) return nullptr;
    const auto* load = As<BufferLoad>(attr->values.back());
    auto it = load ? regs_.find(load->buffer.get()) : regs_.end();
    if (it == regs_.end()) return nullptr;
    const RegFragment& rf = it->second;
    VarRef l = Var::Make("l");
    auto [i, j] = rf.layout->Inverse(tx_, l);
    std::vector<Expr> values = rf.layout->is_rows() ? std::vector<Expr>{i} : std::vector<Expr>{i, j};
    if (values.size() != loops.size()) return nullptr;
    values.push_back(BufferLoad::Make(rf.regs, {l}));
    Stmt print = AttrStmt::Make("tl.print:" + attr->key.substr(std::string("tl.print1:").size()), values, attr->span);
    ctx_.remarks.push_back("T.print of register fragment " + load->buffer->name +
                           ": each thread prints the elements it holds");
    return For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, print, {}, op->span);
  }

  Stmt Mutate_(const CopyOp* op, const Stmt& self) override {
    auto s = regs_.find(op->src.buffer.get()), d = regs_.find(op->dst.buffer.get());
    if (s == regs_.end() && d == regs_.end()) return IRMutator::Mutate_(op, self);
    if (s != regs_.end() && d != regs_.end() && !(*s->second.layout == *d->second.layout)) {
      // Different layouts: through a shared scratch tile (written in the source layout,
      // read back in the destination's; the barrier pass orders the two).
      Buffer scratch = BufferNode::Make(op->src.buffer->name + "_relayout", op->dst.buffer->dtype,
                                        op->src.buffer->shape, Scope::kShared);
      ctx_.remarks.push_back("T.copy " + op->src.buffer->name + " -> " + op->dst.buffer->name +
                             ": layouts differ (" + s->second.layout->ToString() + " vs " +
                             d->second.layout->ToString() + "), converted through shared memory");
      return Seq::Make({Allocate::Make(scratch, nullptr, op->span),
                        RegsToTile(s->second, Region::Full(scratch), op->span),
                        TileToRegs(d->second, Region::Full(scratch), op->span)},
                       op->span);
    }
    if (s != regs_.end() && d != regs_.end()) {
      // Same layout: a register-to-register copy with a cast; pairs of floats narrowed to
      // 16 bits go through one packed conversion each (tl::cast_copy<2>).
      const RegFragment& rf = s->second;
      DType from = rf.regs->dtype, to = op->dst.buffer->dtype;
      if (from == DType::Float(32) && to.bits == 16 && to.IsFloat() && rf.layout->num_local() % 2 == 0) {
        VarRef c = Var::Make("c");
        auto addr = [&](const Buffer& b) {
          return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, {Expr(c) * MakeInt(2)})});
        };
        Stmt st = Evaluate::Make(
            Call::Make(DType::Void(), "cast_copy", {addr(d->second.regs), addr(rf.regs), MakeInt(2)}), op->span);
        return For::Make(c, MakeInt(0), MakeInt(rf.layout->num_local() / 2), ForKind::kUnrolled, st, {}, op->span);
      }
      VarRef l = Var::Make("l");
      Stmt st = BufferStore::Make(d->second.regs, {l},
                                  Cast::Make(op->dst.buffer->dtype, BufferLoad::Make(rf.regs, {l})), op->span);
      return For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, op->span);
    }
    bool from_regs = s != regs_.end();
    Region other = MutateRegion(from_regs ? op->dst : op->src);
    return from_regs ? RegsToTile(s->second, other, op->span) : TileToRegs(d->second, other, op->span);
  }

  /// For each register l: the element (i, j) it holds goes to / comes from `tile` at the
  /// region's corner + (i, j), with edge guards.
  std::pair<Stmt, VarRef> RegTileLoop(const RegFragment& rf, const Region& tile, bool to_tile, const Span& span) {
    std::vector<size_t> dims;
    for (size_t k = 0; k < tile.ranges.size(); ++k) {
      int64_t e;
      if (!(AsConstInt(tile.ranges[k].extent, &e) && e == 1)) dims.push_back(k);
    }
    size_t want = rf.layout->is_rows() ? 1 : 2;
    if (dims.size() < want && tile.ranges.size() >= want) {
      dims.clear();
      for (size_t k = tile.ranges.size() - want; k < tile.ranges.size(); ++k) dims.push_back(k);
    }
    TL_ICHECK(dims.size() == want) << "copy between a register fragment and a tile of another rank";
    int64_t v = rf.layout->vec();
    arith::Analyzer an;
    // Shared tiles may be swizzled in 16-byte chunks: a vector must not cross one.
    bool chunked = tile.buffer->scope != Scope::kShared || v * tile.buffer->dtype.bytes() <= 16;
    if (v > 1 && want == 2 && dims[1] + 1 == tile.ranges.size() && tile.buffer->scope != Scope::kLocal && chunked &&
        cuda::VectorFits(tile, v, an)) {
      return {VectorRegTileLoop(rf, tile, dims, to_tile, span), nullptr};
    }
    VarRef l = Var::Make("l");
    auto [i, j] = rf.layout->Inverse(tx_, l);
    Expr in_bounds;
    std::vector<Expr> idx = AtCorner(tile, dims, i, j, &in_bounds);
    Stmt st;
    if (to_tile) {
      st = BufferStore::Make(tile.buffer, idx, Cast::Make(tile.buffer->dtype, BufferLoad::Make(rf.regs, {l})), span);
      st = IfThenElse::Make(in_bounds, st, nullptr, span);
    } else {
      Expr v = Cast::Make(rf.regs->dtype, BufferLoad::Make(tile.buffer, idx));
      Expr zero = rf.regs->dtype.IsFloat() ? MakeFloat(0, rf.regs->dtype) : MakeInt(0, rf.regs->dtype);
      st = BufferStore::Make(rf.regs, {l}, Select::Make(in_bounds, v, zero), span);
    }
    return {For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, span), l};
  }
  /// RegTileLoop for layouts whose registers come in runs of vec() consecutive columns,
  /// with the tile's columns contiguous and aligned: one vector access per run, each run
  /// wholly inside or wholly outside the tile's buffer (VectorFits), so one guard each.
  Stmt VectorRegTileLoop(const RegFragment& rf, const Region& tile, const std::vector<size_t>& dims, bool to_tile,
                         const Span& span) {
    int64_t v = rf.layout->vec();
    VarRef c = Var::Make("c");
    Expr first = Expr(c) * MakeInt(v);
    auto [i, j] = rf.layout->Inverse(tx_, first);
    Expr in_bounds;
    std::vector<Expr> idx = AtCorner(tile, dims, i, j, &in_bounds);
    auto addr = [](const Buffer& b, const std::vector<Expr>& at) {
      return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, at)});
    };
    Expr regs = addr(rf.regs, {first}), mem = addr(tile.buffer, idx);
    Stmt move = Evaluate::Make(
        Call::Make(DType::Void(), "cast_copy", {to_tile ? mem : regs, to_tile ? regs : mem, MakeInt(v)}), span);
    Stmt outside;
    if (!to_tile) {
      // Past the edge T.copy reads zeros.
      VarRef e = Var::Make("e");
      Expr zero = rf.regs->dtype.IsFloat() ? MakeFloat(0, rf.regs->dtype) : MakeInt(0, rf.regs->dtype);
      outside = For::Make(e, MakeInt(0), MakeInt(v), ForKind::kUnrolled,
                          BufferStore::Make(rf.regs, {first + e}, zero, span), {}, span);
    }
    Stmt st = IfThenElse::Make(in_bounds, move, outside, span);
    ctx_.remarks.push_back(std::string("T.copy ") + (to_tile ? "from" : "into") + " register fragment (" +
                           rf.layout->ToString() + "): " + std::to_string(v) + "-element vector accesses");
    return For::Make(c, MakeInt(0), MakeInt(rf.layout->num_local() / v), ForKind::kUnrolled, st, {}, span);
  }

  Stmt RegsToTile(const RegFragment& rf, const Region& tile, const Span& span) {
    return RegTileLoop(rf, tile, true, span).first;
  }
  Stmt TileToRegs(const RegFragment& rf, const Region& tile, const Span& span) {
    return RegTileLoop(rf, tile, false, span).first;
  }

  /// T.gemm with A in registers (the accumulator layout of M x K, warps along M only):
  /// gemm_rs packs A's registers into mma operands without touching shared memory.
  Stmt RegisterAGemm(const GemmOp* op, bool wgmma) {
    const RegFragment& a = regs_.at(op->a.buffer.get());
    const RegFragment& c = regs_.at(op->c.buffer.get());
    Region b = MutateRegion(op->b);
    std::vector<Stmt> out;
    int64_t clr = 0;
    if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) {
      Expr zero = MakeFloat(0, c.regs->dtype);
      out.push_back(IfThenElse::Make(op->clear_accum, FillRegs(c, zero, op->span), nullptr, op->span));
    }
    std::vector<Expr> bmins;
    for (const Range& rg : b.ranges) bmins.push_back(rg.min);
    std::vector<Expr> args = {
        Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(a.regs, {MakeInt(0)})}),
        Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b.buffer, bmins)}),
        Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(c.regs, {MakeInt(0)})}),
        MakeInt(c.layout->m()), MakeInt(c.layout->n()), MakeInt(a.layout->n()),
        MakeInt(Mma(c).warps().warps_m), MakeBool(op->trans_b), b.buffer->StrideOf(b.ranges.size() - 2)};
    if (wgmma) {
      // tl::gemm_rs_wgmma(A regs, B tile base, C regs) reads B in its panelled layout.
      std::vector<Expr> zeros(b.buffer->shape.size(), MakeInt(0));
      std::vector<Expr> wargs = {args[0], Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b.buffer, zeros)}),
                                 args[2], args[3], args[4], args[5], MakeBool(op->trans_b)};
      out.push_back(Evaluate::Make(Call::Make(DType::Void(), "gemm_rs_wgmma", wargs), op->span));
      ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                             op->c.buffer->name + ": A from registers, wgmma m64n" +
                             std::to_string(std::min<int64_t>(c.layout->n(), 256)) + "k16 with B from shared memory");
      return Seq::Make(out, op->span);
    }
    out.push_back(Evaluate::Make(Call::Make(DType::Void(), "gemm_rs", args), op->span));
    auto no = no_wgmma_.find(op);
    ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                           op->c.buffer->name + ": A from registers (no trip through shared memory), "
                           "ldmatrix + mma.sync m16n8k16 for B" +
                           (no == no_wgmma_.end() ? "" : " (not wgmma: " + no->second + ")"));
    return Seq::Make(out, op->span);
  }

  /// T.gemm on Hopper: wgmma m64nNk16 from shared memory, one warpgroup per 64 rows of
  /// C. The operands' shared layout follows (cuda::WgmmaOperandOffset, in codegen).
  Stmt WgmmaGemm(const GemmOp* op) {
    const RegFragment& rf = regs_.at(op->c.buffer.get());
    std::vector<Stmt> out;
    int64_t clr = 0;
    if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) {
      out.push_back(IfThenElse::Make(op->clear_accum, FillRegs(rf, MakeFloat(0, rf.regs->dtype), op->span), nullptr,
                                     op->span));
    }
    auto base = [](const Buffer& b) {
      std::vector<Expr> zeros(b->shape.size(), MakeInt(0));
      return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, zeros)});
    };
    Region a = MutateRegion(op->a), b = MutateRegion(op->b);
    Expr k = op->trans_a ? a.ranges[0].extent : a.ranges[1].extent;
    std::vector<Expr> args = {base(a.buffer), base(b.buffer),
                              Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(rf.regs, {MakeInt(0)})}),
                              MakeInt(rf.layout->m()), MakeInt(rf.layout->n()), k,
                              MakeBool(op->trans_a), MakeBool(op->trans_b)};
    out.push_back(Evaluate::Make(Call::Make(DType::Void(), "gemm_ss_wgmma", args), op->span));
    ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                           op->c.buffer->name + ": wgmma m64n" + std::to_string(std::min<int64_t>(rf.layout->n(), 256)) +
                           "k16 from shared memory, " + std::to_string(rf.layout->m() / 64) + " warpgroup(s)");
    return Seq::Make(out, op->span);
  }

  Stmt Mutate_(const FillOp* op, const Stmt& self) override {
    auto it = regs_.find(op->dst.buffer.get());
    if (it == regs_.end()) return IRMutator::Mutate_(op, self);
    int64_t m, n;
    bool whole = it->second.layout->is_rows() ? op->dst.ranges.size() == 1 : IsWhole2D(op->dst, &m, &n);
    if (!whole) {
      TL_USER_ERROR(op->span) << "T.fill of part of a register fragment is not supported";
    }
    return FillRegs(it->second, op->value, op->span);
  }

  Stmt Mutate_(const GemmOp* op, const Stmt& self) override {
    auto simt = simt_gemms_.find(op);
    if (simt != simt_gemms_.end()) return SimtGemm(op, simt->second);
    if (rs_gemms_.count(op)) return RegisterAGemm(op, wgmma_gemms_.count(op) > 0);
    if (wgmma_gemms_.count(op)) return WgmmaGemm(op);
    auto it = regs_.find(op->c.buffer.get());
    TL_ICHECK(it != regs_.end()) << "gemm accumulator without a layout";
    const RegFragment& rf = it->second;
    Region a = MutateRegion(op->a), b = MutateRegion(op->b);
    std::vector<Stmt> out;
    int64_t clr = 0;
    if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) {
      Expr zero = rf.regs->dtype.IsFloat() ? MakeFloat(0, rf.regs->dtype) : MakeInt(0, rf.regs->dtype);
      out.push_back(IfThenElse::Make(op->clear_accum, FillRegs(rf, zero, op->span), nullptr, op->span));
    }
    auto mins = [](const Region& r) {
      std::vector<Expr> v;
      for (const Range& rg : r.ranges) v.push_back(rg.min);
      return v;
    };
    auto rows = [](const Region& r) { return r.ranges[r.ranges.size() - 2].extent; };
    auto cols = [](const Region& r) { return r.ranges.back().extent; };
    Expr k = op->trans_a ? rows(a) : cols(a);
    // Leading dimensions of the shared operands (elements between rows).
    auto ld = [](const Region& r) { return r.buffer->StrideOf(r.ranges.size() - 2); };
    std::vector<Expr> args = {
        Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(a.buffer, mins(a))}),
        Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b.buffer, mins(b))}),
        Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(rf.regs, {MakeInt(0)})}),
        MakeInt(rf.layout->m()), MakeInt(rf.layout->n()), k,
        MakeInt(Mma(rf).warps().warps_m), MakeInt(Mma(rf).warps().warps_n),
        MakeBool(op->trans_a), MakeBool(op->trans_b), ld(a), ld(b)};
    out.push_back(Evaluate::Make(Call::Make(DType::Void(), "gemm_ss", args), op->span));
    auto no = no_wgmma_.find(op);
    ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                           op->c.buffer->name + ": ldmatrix + mma.sync m16n8k16, warps " +
                           std::to_string(Mma(rf).warps().warps_m) + "x" +
                           std::to_string(Mma(rf).warps().warps_n) +
                           (no == no_wgmma_.end() ? "" : " (not wgmma: " + no->second + ")"));
    return Seq::Make(out, op->span);
  }

  Stmt Mutate_(const ReduceOp* op, const Stmt& self) override {
    auto it = regs_.find(op->src.buffer.get());
    auto dst_regs = regs_.find(op->dst.buffer.get());
    if (it != regs_.end() && op->dim == 1) return ReduceRows(op, it->second);
    if (dst_regs != regs_.end()) {
      TL_USER_ERROR(op->span) << "the destination of this reduction (" << op->dst.buffer->name
                              << ") is held in registers, which only row reductions of a register tile support";
    }
    if (it == regs_.end()) return IRMutator::Mutate_(op, self);
    // Along columns: each thread folds its own registers into the (shared) destination
    // with shared-memory atomics; the barrier pass orders them after the initialisation
    // and before readers.
    const RegFragment& rf = it->second;
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

  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override {
    auto it = op->src.buffer ? regs_.find(op->src.buffer.get()) : regs_.end();
    if (it == regs_.end()) return IRMutator::Mutate_(op, self);
    const RegFragment& rf = it->second;
    Region dst = MutateRegion(op->dst);
    std::vector<size_t> dims;
    for (size_t k = 0; k < dst.ranges.size(); ++k) {
      int64_t e;
      if (!(AsConstInt(dst.ranges[k].extent, &e) && e == 1)) dims.push_back(k);
    }
    TL_ICHECK(dims.size() == 2) << "atomic from a register fragment into a non-2-D region";
    VarRef l = Var::Make("l");
    auto [i, j] = rf.layout->Inverse(tx_, l);
    Expr in_bounds;
    std::vector<Expr> idx = AtCorner(dst, dims, i, j, &in_bounds);
    static const char* kNames[] = {"atomic_add", "atomic_max", "atomic_min"};
    DType t = dst.buffer->dtype;
    Stmt st = Evaluate::Make(
        Call::Make(t, kNames[static_cast<int>(op->atomic_kind)],
                   {Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(dst.buffer, idx)}),
                    Cast::Make(t, BufferLoad::Make(rf.regs, {l}))}),
        op->span);
    st = IfThenElse::Make(in_bounds, st, nullptr, op->span);
    return For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, op->span);
  }

  /// Row reduction of a register tile: each thread folds the registers of each of its
  /// rows, the lanes that share a row combine with warp shuffles, and when several warps
  /// split a row their partials meet in a small shared workspace.
  Stmt ReduceRows(const ReduceOp* op, const RegFragment& rf) {
    const FragmentLayout& lay = *rf.layout;
    FragmentLayoutRef rows = lay.Rows();
    Region dst = MutateRegion(op->dst);
    auto dst_it = regs_.find(op->dst.buffer.get());
    const RegFragment* dst_regs = dst_it == regs_.end() ? nullptr : &dst_it->second;
    TL_ICHECK(!dst_regs || *dst_regs->layout == *rows)
        << "row reduction into " << dst_regs->layout->ToString() << ", expected " << rows->ToString();
    DType t = dst.buffer->dtype;
    const ReduceKind kind = op->reduce_kind;
    const bool sum = kind == ReduceKind::kSum || kind == ReduceKind::kAbsSum;
    const bool is_abs = kind == ReduceKind::kAbsSum || kind == ReduceKind::kAbsMax;
    auto combine = [&](const Expr& a, const Expr& b) {
      if (sum) return op::MakeBinary(BinOp::kAdd, a, b);
      return kind == ReduceKind::kMin ? Min(a, b) : Max(a, b);
    };
    Expr init = sum ? (t.IsFloat() ? MakeFloat(0, t) : MakeInt(0, t))
                    : Call::Make(t, kind == ReduceKind::kMin ? "infinity" : "neg_infinity", {});
    const char* shuffle = sum ? "warp_reduce_sum" : kind == ReduceKind::kMin ? "warp_reduce_min" : "warp_reduce_max";
    const int64_t lanes = lay.row_lanes(), wn = lay.row_warps();
    Expr lane = FloorMod(tx_, MakeInt(32)), warp_n = FloorMod(FloorDiv(tx_, MakeInt(32)), MakeInt(wn));
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
    fold = For::Make(q, MakeInt(0), MakeInt(lay.regs_per_row()), ForKind::kUnrolled, fold, {}, op->span);
    Expr reduced = BufferLoad::Make(acc, {MakeInt(0)});
    if (lanes > 1) reduced = Call::Make(t, shuffle, {reduced, MakeInt(lanes)});
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
      if (lanes > 1) publish = IfThenElse::Make(EQ(FloorMod(lane, MakeInt(lanes)), MakeInt(0)), publish, nullptr, op->span);
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

  /// C[i, j] += sum_k A[i, k] * B[k, j] as a T.Parallel nest over C (spread over threads
  /// later), for GEMMs that cannot use the tensor-core path.
  Stmt SimtGemm(const GemmOp* op, const std::string& why) {
    ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                           op->c.buffer->name + ": element-wise loops, no tensor cores (" + why + ")");
    Region a = MutateRegion(op->a), b = MutateRegion(op->b), c = MutateRegion(op->c);
    std::vector<Stmt> staged;
    for (Region* r : {&a, &b}) {
      auto it = regs_.find(r->buffer.get());
      if (it == regs_.end()) continue;
      // An operand in registers: other threads need its elements, so it goes through shared.
      Buffer scratch = BufferNode::Make(r->buffer->name + "_staged", r->buffer->dtype,
                                        {MakeInt(it->second.layout->m()), MakeInt(it->second.layout->n())},
                                        Scope::kShared);
      staged.push_back(Allocate::Make(scratch, nullptr, op->span));
      staged.push_back(RegsToTile(it->second, Region::Full(scratch), op->span));
      *r = Region::Full(scratch);
      ctx_.remarks.push_back("T.gemm operand " + op->a.buffer->name + " staged through shared memory");
    }
    auto dims2 = [](const Region& r) {
      std::vector<size_t> d;
      for (size_t k = 0; k < r.ranges.size(); ++k) {
        int64_t e;
        if (!(AsConstInt(r.ranges[k].extent, &e) && e == 1)) d.push_back(k);
      }
      if (d.size() < 2) d = {r.ranges.size() - 2, r.ranges.size() - 1};
      return d;
    };
    auto da = dims2(a), db = dims2(b), dc = dims2(c);
    Expr m = c.ranges[dc[0]].extent, n = c.ranges[dc[1]].extent;
    Expr k = op->trans_a ? a.ranges[da[0]].extent : a.ranges[da[1]].extent;
    DType t = c.buffer->dtype;
    VarRef vi = Var::Make("i"), vj = Var::Make("j"), vk = Var::Make("k");
    auto at = [](const Region& r, const std::vector<size_t>& d, const Expr& x, const Expr& y) {
      std::vector<Expr> idx;
      for (const Range& rg : r.ranges) idx.push_back(rg.min);
      idx[d[0]] = idx[d[0]] + x;
      idx[d[1]] = idx[d[1]] + y;
      return idx;
    };
    auto ci = at(c, dc, vi, vj);
    Expr av = BufferLoad::Make(a.buffer, op->trans_a ? at(a, da, vk, vi) : at(a, da, vi, vk));
    Expr bv = BufferLoad::Make(b.buffer, op->trans_b ? at(b, db, vj, vk) : at(b, db, vk, vj));
    Expr prod = op::MakeBinary(BinOp::kMul, Cast::Make(t, av), Cast::Make(t, bv));
    Stmt upd = BufferStore::Make(c.buffer, ci, op::MakeBinary(BinOp::kAdd, BufferLoad::Make(c.buffer, ci), prod),
                                 op->span);
    Stmt kloop = For::Make(vk, MakeInt(0), k, ForKind::kSerial, upd, {}, op->span);
    int64_t clr = 0;
    if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) {
      Expr zero = t.IsFloat() ? MakeFloat(0, t) : MakeInt(0, t);
      kloop = Seq::Make({IfThenElse::Make(op->clear_accum, BufferStore::Make(c.buffer, ci, zero, op->span), nullptr,
                                          op->span),
                         kloop},
                        op->span);
    }
    Stmt inner = For::Make(vj, MakeInt(0), n, ForKind::kParallel, kloop, {}, op->span);
    staged.push_back(For::Make(vi, MakeInt(0), m, ForKind::kParallel, inner, {}, op->span));
    return Seq::Make(staged, op->span);
  }

 private:
  /// Indices into `tile` of register element (i, j): the region's corner plus i along its
  /// first tile dimension (and j along the second, when `dims` has two); `in_bounds` gets
  /// the edge guard over every dimension.
  static std::vector<Expr> AtCorner(const Region& tile, const std::vector<size_t>& dims, const Expr& i,
                                    const Expr& j, Expr* in_bounds) {
    std::vector<Expr> idx;
    for (const Range& rg : tile.ranges) idx.push_back(rg.min);
    idx[dims[0]] = idx[dims[0]] + i;
    if (dims.size() > 1) idx[dims[1]] = idx[dims[1]] + j;
    // Both edges: a region may start before 0 (T.copy(A[r, c - 2], ...)); the simplifier
    // drops whichever side is provable.
    *in_bounds = transform::InBounds(tile.buffer, idx);
    return idx;
  }

  /// The mma layout of a GEMM's register operand (inference gives GEMMs no other).
  static const MmaAccumulatorLayout& Mma(const RegFragment& rf) {
    const auto* mma = dynamic_cast<const MmaAccumulatorLayout*>(rf.layout.get());
    TL_ICHECK(mma) << "T.gemm register operand without an mma layout: " << rf.layout->ToString();
    return *mma;
  }

  static bool IndicesMatch(const std::vector<Expr>& idx, const std::vector<const Var*>& vars) {
    if (idx.size() != vars.size()) return false;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (As<Var>(idx[k]) != vars[k]) return false;
    }
    return true;
  }

  Stmt FillRegs(const RegFragment& rf, const Expr& value, const Span& span) {
    VarRef l = Var::Make("l");
    Stmt st = BufferStore::Make(rf.regs, {l}, Cast::Make(rf.regs->dtype, value), span);
    return For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, span);
  }

  const std::unordered_map<const BufferNode*, cuda::Assigned>& layouts_;
  const std::unordered_map<const GemmOp*, std::string>& simt_gemms_;
  const std::unordered_set<const GemmOp*>& rs_gemms_;
  const std::unordered_set<const GemmOp*>& wgmma_gemms_;
  const std::unordered_map<const GemmOp*, std::string>& no_wgmma_;
  VarRef tx_;
  PassContext& ctx_;
  std::unordered_map<const BufferNode*, RegFragment> regs_;
  std::unordered_map<const BufferNode*, Buffer> demoted_;
  /// Inside a T.Parallel nest over registers: each register fragment's expected indices
  /// (the nest's variables) and the register they map to.
  std::unordered_map<const BufferNode*, std::pair<std::vector<const Var*>, Expr>> current_;
  Span span_;
};

}  // namespace

ir::PrimFunc CudaLowerFragments(const ir::PrimFunc& f, PassContext& ctx) {
  cuda::ThreadBinding tb = cuda::GetThreadBinding(f->body, "cuda-lower-fragments");
  auto arch = ctx.config.find("tl.target_arch");
  cuda::FragmentLayouts inference =
      cuda::InferFragmentLayouts(f->body, tb.threads, arch == ctx.config.end() ? std::string() : arch->second);
  FragmentRewriter rewriter(inference, tb.tx, ctx);
  ir::Stmt body = rewriter.Mutate(f->body);
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-lower-fragments", CudaLowerFragments);

}  // namespace tl::transform
