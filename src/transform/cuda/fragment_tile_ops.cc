// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments" (see lower_fragments.h), its tile ops on register fragments
/// other than GEMMs (fragment_gemm.cc) and reductions (fragment_reduce.cc): copies between
/// registers and tiles (as vectors where a thread's registers are consecutive in the tile),
/// whole and partial fills, and atomics from registers into a tile.
#include <string>
#include <utility>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/layout/fragment.h"
#include "tl/op/make.h"
#include "tl/target/warp.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "copy_lowering.h"
#include "fragment_inference.h"
#include "lower_fragments.h"

namespace tl::transform::fragments {
using target::kWarpSize;

Stmt FragmentRewriter::Mutate_(const CopyOp* op, const Stmt& self) {
  auto s = regs_.find(op->src.buffer.get()), d = regs_.find(op->dst.buffer.get());
  if (s == regs_.end() && d == regs_.end()) return IRMutator::Mutate_(op, self);
  RefuseUnderThreadBranch(self, "T.copy", {s == regs_.end() ? nullptr : &s->second, d == regs_.end() ? nullptr : &d->second});
  if (s != regs_.end() && d != regs_.end() && !CoversWholeBuffer(op->dst)) {
    TL_USER_ERROR(op->span) << "T.copy into part of register fragment " << op->dst.buffer->name
                            << " is not supported (a fragment is spread over the threads as a whole); copy "
                            << "into the whole fragment, or write the part element-wise in a T.Parallel loop";
  }
  bool whole_src = s != regs_.end() && CoversWholeBuffer(op->src);
  if (s != regs_.end() && d != regs_.end() && (!(*s->second.layout == *d->second.layout) || !whole_src)) {
    // Different layouts, or a part of the source (one row of a 2-D fragment into a per-row
    // vector): through a shared scratch tile, written whole in the source layout and read
    // back from the source's region in the destination's (the barrier pass orders the two).
    Buffer scratch = BufferNode::Make(op->src.buffer->name + "_relayout", op->dst.buffer->dtype,
                                      op->src.buffer->shape, Scope::kShared);
    ctx_.remarks.push_back("T.copy " + op->src.buffer->name + " -> " + op->dst.buffer->name + ": " +
                           (whole_src ? "layouts differ (" + s->second.layout->ToString() + " vs " +
                                            d->second.layout->ToString() + ")"
                                      : std::string("a part of the source fragment")) +
                           ", converted through shared memory");
    Region part = MutateRegion(op->src);
    part.buffer = scratch;
    return Seq::Make({Allocate::Make(scratch, nullptr, op->span),
                      RegsToTile(s->second, Region::Full(scratch), op->span), TileToRegs(d->second, part, op->span)},
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
  // A part of the fragment (`T.copy(acc[64:128, :], C[...])`, `T.copy(acc[:valid, :], S)`):
  // the walks move the elements of that window only (frag_window_).
  const Region& frag_side = from_regs ? op->src : op->dst;
  const RegFragment& rf = from_regs ? s->second : d->second;
  Region window = MutateRegion(frag_side);
  const size_t rank = rf.layout->is_rows() ? 1 : 2;
  if (!CoversWholeBuffer(frag_side) && window.ranges.size() != rank) {
    TL_USER_ERROR(op->span) << "T.copy " << (from_regs ? "from" : "into") << " part of register fragment "
                            << frag_side.buffer->name << ": only a window of a 1-D or 2-D fragment is supported; "
                            << "move the part element-wise in a T.Parallel loop";
  }
  frag_window_ = CoversWholeBuffer(frag_side) ? nullptr : &window;
  Region other = MutateRegion(from_regs ? op->dst : op->src);
  Stmt out = from_regs ? RegsToTile(rf, other, op->span) : TileToRegs(rf, other, op->span);
  frag_window_ = nullptr;
  return out;
}

/// Within the fragment window (frag_window_, when set): whether register element (i, j) lies
/// in it, and (i, j) made relative to its corner.
Expr FragmentRewriter::InWindow(Expr* i, Expr* j) const {
  if (!frag_window_) return Expr();
  Expr inside;
  Expr* at[2] = {i, j};
  for (size_t k = 0; k < frag_window_->ranges.size(); ++k) {
    const Range& r = frag_window_->ranges[k];
    Expr& x = *at[k];
    Expr c = And(GE(x, r.min), LT(x, r.min + r.extent));
    inside = inside ? And(inside, c) : c;
    x = x - r.min;
  }
  return inside;
}

/// For each register l: the element (i, j) it holds goes to / comes from `tile` at the
/// region's corner + (i, j), with edge guards.
std::pair<Stmt, VarRef> FragmentRewriter::RegTileLoop(const RegFragment& rf, const Region& tile, bool to_tile,
                                                      const Span& span) {
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
  TL_ICHECK(dims.size() == want) << "copy between register fragment " << rf.regs->name << " ("
                                 << rf.layout->ToString() << ") and tile " << tile.buffer->name << " of another rank";
  if (to_tile && !frag_window_) {
    if (Stmt st = StmatrixStores(rf, tile, dims, span)) return {st, nullptr};
  }
  int64_t v = rf.layout->vec();
  arith::Analyzer an;
  // Shared tiles may be swizzled in 16-byte chunks: a vector must not cross one.
  bool chunked = tile.buffer->scope != Scope::kShared || v * tile.buffer->dtype.bytes() <= 16;
  // (a window's runs of v columns must be wholly inside or outside it)
  auto multiple = [&](const Expr& e) { return an.CanProve(EQ(FloorMod(e, MakeInt(v, e->dtype)), MakeInt(0, e->dtype))); };
  bool window_runs = !frag_window_ || rf.layout->is_rows() ||
                     (multiple(frag_window_->ranges.back().min) && multiple(frag_window_->ranges.back().extent));
  if (v > 1 && dims.back() + 1 == tile.ranges.size() && tile.buffer->scope != Scope::kLocal && chunked &&
      window_runs && cuda::VectorFits(tile, v, an, cuda::DynamicAlignment(ctx_))) {
    return {VectorRegTileLoop(rf, tile, dims, to_tile, span), nullptr};
  }
  VarRef l = Var::Make("l");
  auto [i, j] = rf.layout->Inverse(tx_, l);
  Expr inside = InWindow(&i, &j);
  Expr in_bounds;
  std::vector<Expr> idx = AtCorner(tile, dims, i, j, &in_bounds);
  Stmt st;
  if (to_tile) {
    st = BufferStore::Make(tile.buffer, idx, Cast::Make(tile.buffer->dtype, BufferLoad::Make(rf.regs, {l})), span);
    st = IfThenElse::Make(inside ? And(inside, in_bounds) : in_bounds, st, nullptr, span);
  } else {
    Expr v = Cast::Make(rf.regs->dtype, BufferLoad::Make(tile.buffer, idx));
    Expr zero = rf.regs->dtype.IsFloat() ? MakeFloat(0, rf.regs->dtype) : MakeInt(0, rf.regs->dtype);
    st = BufferStore::Make(rf.regs, {l}, Select::Make(in_bounds, v, zero), span);
    if (inside) st = IfThenElse::Make(inside, st, nullptr, span);  // (registers outside keep their values)
  }
  return {For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st,
                    {{cuda::kRegisterWalk, MakeInt(1)}}, span),
          l};
}

/// An mma accumulator copied whole into a 16-bit shared tile with stmatrix.x4: 8 registers
/// per lane per instruction instead of a 2-element store each 2 (sm_90; tl.stmatrix_stores, on:
/// 1-3% on upstream's sparse MLA kernels on the H200, BENCHMARKS.md twenty-fourth and
/// twenty-fifth sessions). Its rows are 16 bytes, so the tile keeps the XOR staging swizzle
/// (shared_plan.cc counts stmatrix rows as swizzle-safe). Null when the copy does not fit: another layout, a part of the
/// fragment, rows not 16-byte aligned, or under a branch on the thread index other than the
/// one whose warps hold the fragment (all lanes of each warp must store).
Stmt FragmentRewriter::StmatrixStores(const RegFragment& rf, const Region& tile, const std::vector<size_t>& dims,
                                      const Span& span) {
  if (!cuda::ConfigOn(ctx_, "tl.stmatrix_stores", /*default_on=*/true) || !ctx_.Cuda().HasStmatrix()) return Stmt();
  // (also one held by the warps of a branch on the thread index, ThreadRangeLayout, copied
  // there: every lane of those warps stores)
  const auto* acc = dynamic_cast<const layout::MmaAccumulatorLayout*>(rf.layout->Base());
  const int64_t first = rf.layout->first_thread();
  const bool whole_warps =
      first % kWarpSize == 0 && (thread_branch_ == 0 ? first == 0
                                              : running_ && running_->known && running_->range.lo == first &&
                                                    acc && running_->range.hi == first + acc->num_threads());
  const DType t = tile.buffer->dtype;
  if (!acc || !acc->stmatrix_groups() || !whole_warps || tile.buffer->scope != Scope::kShared ||
      !(t == DType::Float(16) || t == DType::BFloat16()) ||
      !(rf.regs->dtype == DType::Float(32) || rf.regs->dtype == t) || dims.size() != 2 ||
      dims.back() + 1 != tile.ranges.size()) {
    return Stmt();
  }
  int64_t rows = 0, cols = 0;
  if (!AsConstInt(tile.ranges[dims[0]].extent, &rows) || !AsConstInt(tile.ranges[dims[1]].extent, &cols) ||
      rows != acc->m() || cols != acc->n()) {
    return Stmt();
  }
  arith::Analyzer an;
  if (!cuda::VectorFits(tile, 8, an, cuda::DynamicAlignment(ctx_))) return Stmt();
  // Every row start is an element of the fragment (StmatrixRowStart), so inside the region:
  // the region inside the tile means no guards.
  for (size_t k = 0; k < tile.ranges.size(); ++k) {
    const Range& r = tile.ranges[k];
    if (!an.CanProve(GE(r.min, MakeInt(0, r.min->dtype))) ||
        !an.CanProve(LE(r.min + r.extent, tile.buffer->shape[k]))) {
      return Stmt();
    }
  }
  VarRef g = Var::Make("g");
  auto [i, j] = acc->StmatrixRowStart(first ? Expr(tx_) - MakeInt(first) : Expr(tx_), g);
  Expr in_bounds;
  std::vector<Expr> idx = AtCorner(tile, dims, i, j, &in_bounds);
  auto addr = [](const Buffer& b, const std::vector<Expr>& at) {
    return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, at)});
  };
  Stmt st = Evaluate::Make(
      Call::Make(DType::Void(), "stmatrix_x4", {addr(tile.buffer, idx), addr(rf.regs, {Expr(g) * MakeInt(8)})}), span);
  ctx_.remarks.push_back("T.copy from register fragment (" + rf.layout->ToString() + ") into " + tile.buffer->name +
                         ": stmatrix.x4, 8 elements per lane per instruction (tl.stmatrix_stores)");
  return For::Make(g, MakeInt(0), MakeInt(acc->num_local() / 8), ForKind::kUnrolled, st, {}, span);
}

/// RegTileLoop for layouts whose registers come in runs of vec() consecutive columns,
/// with the tile's columns contiguous and aligned: one vector access per run, each run
/// wholly inside or wholly outside the tile's buffer (VectorFits), so one guard each.
Stmt FragmentRewriter::VectorRegTileLoop(const RegFragment& rf, const Region& tile, const std::vector<size_t>& dims,
                                         bool to_tile, const Span& span) {
  int64_t v = rf.layout->vec();
  VarRef c = Var::Make("c");
  Expr first = Expr(c) * MakeInt(v);
  auto [i, j] = rf.layout->Inverse(tx_, first);
  Expr inside = InWindow(&i, &j);  // (the run's first column decides for the run: RegTileLoop)
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
  if (inside) st = IfThenElse::Make(inside, st, nullptr, span);  // (registers outside keep their values)
  ctx_.remarks.push_back(std::string("T.copy ") + (to_tile ? "from" : "into") + " register fragment (" +
                         rf.layout->ToString() + "): " + std::to_string(v) + "-element vector accesses");
  return For::Make(c, MakeInt(0), MakeInt(rf.layout->num_local() / v), ForKind::kUnrolled, st, {}, span);
}

Stmt FragmentRewriter::RegsToTile(const RegFragment& rf, const Region& tile, const Span& span) {
  return RegTileLoop(rf, tile, true, span).first;
}

Stmt FragmentRewriter::TileToRegs(const RegFragment& rf, const Region& tile, const Span& span) {
  Stmt walk = RegTileLoop(rf, tile, false, span).first;
  if (!PanelsAvoidConflicts(rf, tile.buffer)) return walk;
  std::vector<Expr> origin(tile.buffer->shape.size(), MakeInt(0));
  Expr at = Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(tile.buffer, origin)});
  ctx_.remarks.push_back("shared tile " + tile.buffer->name + ": in wgmma's panel layout (128-byte swizzle), "
                         "which register fragment " + rf.regs->name + " (" + rf.layout->ToString() +
                         ") reads several rows per instruction without bank conflicts");
  return Seq::Make({Evaluate::Make(Call::Make(DType::Void(), "panel_layout", {at, at}), span), walk}, span);
}

/// Whether a register walk of `rf` reading the shared tile `t` hits bank conflicts that the
/// panel layout removes: each warp instruction reads 32 / row_lanes rows, less than 128 bytes
/// of each, and rows a multiple of 128 bytes apart share their banks (8-way for the mma
/// operand layouts), while the panel layout XORs each row's 16-byte chunks by the row. Only
/// for tiles of 2- or 4-byte elements that no T.gemm reads (a GEMM operand's layout is the
/// GEMM path's) and whose shape the panels fit (rows a multiple of 8, of 64 or 128k bytes).
bool FragmentRewriter::PanelsAvoidConflicts(const RegFragment& rf, const Buffer& t) {
  const FragmentLayout& lay = *rf.layout;
  int64_t rows = 0, cols = 0;
  const int64_t bytes = t->dtype.bytes();
  if (t->scope != Scope::kShared || t->shape.size() != 2 || lay.is_rows() || (bytes != 2 && bytes != 4) ||
      !AsConstInt(t->shape[0], &rows) || !AsConstInt(t->shape[1], &cols) || rows % 8) {
    return false;
  }
  const int64_t row_bytes = cols * bytes;
  if (row_bytes % 128 != 0 && row_bytes != 64) return false;
  const int64_t lanes = std::min<int64_t>(lay.row_lanes(), kWarpSize);
  if (kWarpSize / lanes < 2 || lanes * lay.vec() * bytes >= 128) return false;
  struct GemmTiles : IRVisitor {
    const BufferNode* tile;
    bool read = false;
    void Visit_(const GemmOp* g) override { read |= g->a.buffer.get() == tile || g->b.buffer.get() == tile; }
  } gemms;
  gemms.tile = t.get();
  gemms.Visit(kernel_body);
  return !gemms.read;
}

Stmt FragmentRewriter::Mutate_(const FillOp* op, const Stmt& self) {
  auto it = regs_.find(op->dst.buffer.get());
  if (it == regs_.end()) return IRMutator::Mutate_(op, self);
  RefuseUnderThreadBranch(self, "T.fill", {&it->second});
  if (CoversWholeBuffer(op->dst)) return FillRegs(it->second, op->value, op->span);
  return FillPartOfRegs(it->second, MutateRegion(op->dst), op->value, op->span);
}

/// T.fill of a region of a register fragment (`T.clear(C_local[:64, :32])`): each thread
/// sets those of its registers whose element falls inside the region.
Stmt FragmentRewriter::FillPartOfRegs(const RegFragment& rf, const Region& region, const Expr& value,
                                      const Span& span) {
  const size_t rank = rf.layout->is_rows() ? 1 : 2;
  TL_ICHECK(region.ranges.size() == rank) << "T.fill region of rank " << region.ranges.size()
                                          << " on a register fragment of rank " << rank;
  VarRef l = Var::Make("l");
  auto [i, j] = rf.layout->Inverse(tx_, l);
  Expr inside;
  const Expr at[2] = {i, j};
  for (size_t d = 0; d < rank; ++d) {
    const Range& rg = region.ranges[d];
    inside = And(inside, And(GE(at[d], rg.min), LT(at[d], rg.min + rg.extent)));
  }
  Stmt st = BufferStore::Make(rf.regs, {l}, Cast::Make(rf.regs->dtype, value), span);
  st = IfThenElse::Make(inside, st, nullptr, span);
  return For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, span);
}

Stmt FragmentRewriter::Mutate_(const AtomicOp* op, const Stmt& self) {
  auto it = op->src.buffer ? regs_.find(op->src.buffer.get()) : regs_.end();
  if (it == regs_.end()) return IRMutator::Mutate_(op, self);
  RefuseUnderThreadBranch(self, "T.atomic_*");
  const RegFragment& rf = it->second;
  Region dst = MutateRegion(op->dst);
  std::vector<size_t> dims;
  for (size_t k = 0; k < dst.ranges.size(); ++k) {
    int64_t e;
    if (!(AsConstInt(dst.ranges[k].extent, &e) && e == 1)) dims.push_back(k);
  }
  // (a vector of per-row or per-column values: one dimension, the last of the region's when
  // all have one element)
  const size_t want = rf.layout->is_rows() ? 1 : 2;
  if (dims.size() < want && dst.ranges.size() >= want) {
    dims.clear();
    for (size_t k = dst.ranges.size() - want; k < dst.ranges.size(); ++k) dims.push_back(k);
  }
  if (dims.size() != want) {
    TL_USER_ERROR(op->span) << "T.atomic_* from register fragment " << op->src.buffer->name << " (" << want
                            << "-D) into a region of " << dims.size() << " dimensions of more than one element";
  }
  // (a window of the fragment, `T.atomic_add(D[...], acc[64:128, :])`: its elements only,
  // placed by their offset in the window, as T.copy's register walks)
  Region window = MutateRegion(op->src);
  if (!CoversWholeBuffer(op->src) && window.ranges.size() != want) {
    TL_USER_ERROR(op->span) << "T.atomic_* from part of register fragment " << op->src.buffer->name
                            << ": only a window of a 1-D or 2-D fragment is supported";
  }
  frag_window_ = CoversWholeBuffer(op->src) ? nullptr : &window;
  VarRef l = Var::Make("l");
  auto [i, j] = rf.layout->Inverse(tx_, l);
  Expr inside = InWindow(&i, &j);
  frag_window_ = nullptr;
  Expr in_bounds;
  std::vector<Expr> idx = AtCorner(dst, dims, i, j, &in_bounds);
  if (inside) in_bounds = And(inside, in_bounds);
  // A vector's elements have copies in several threads: only the first copy's thread adds.
  if (rf.layout->is_rows()) {
    if (Expr first = rf.layout->FirstCopy(tx_)) in_bounds = in_bounds ? And(first, in_bounds) : first;
  }
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

}  // namespace tl::transform::fragments
