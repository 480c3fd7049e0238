// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments": gives every fragment a home and rewrites its uses.
///
/// Layout inference (fragment_inference.h) decides where each fragment lives. Rewrite:
/// a fragment with a layout becomes `num_local` registers per thread; T.Parallel nests
/// over it become loops over each thread's own registers, and copies, fills, reductions
/// and GEMMs address the registers (fragment_tile_ops.cc, fragment_reduce.cc,
/// fragment_gemm.cc; branches on the thread index, fragment_branches.cc; the accesses of a
/// nest, fragment_nest_access.cc; this file places fragments and rewrites element accesses
/// and T.Parallel nests). Fragments without a layout are kept in shared memory
/// (a reported decision), where every tile op works on them as on shared tiles, except
/// small ones used as per-thread scalars, of which each thread holds a copy
/// (per_thread_fragments.h).
///
/// Precondition: "cuda-bind-threads" wrapped the kernel body in a thread binding `tx`.
#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "tl/arith/comparison.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/printer.h"
#include "tl/layout/fragment.h"
#include "tl/op/make.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "copy_lowering.h"
#include "pass_helpers.h"
#include "tl/target/cuda_attrs.h"
#include "fragment_inference.h"
#include "../per_thread_fragments.h"
#include "lower_fragments.h"
#include "thread_binding.h"

namespace tl::transform {
namespace fragments {

Stmt FragmentRewriter::Mutate_(const Allocate* op, const Stmt& self) {
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
  const Var* tx = tx_.get();
  if (HeldPerThread(b, kernel_body, [tx](const Expr& e) { return As<Var>(e) == tx; })) {
    Buffer local = BufferNode::Make(b->name, b->dtype, b->shape, Scope::kLocal, b->strides);
    demoted_[b.get()] = local;
    ctx_.remarks.push_back("fragment " + b->name +
                           ": registers, a copy per thread (used element by element, written outside T.Parallel "
                           "loops by every thread that uses it alike)");
    return Allocate::Make(local, op->init, op->span);
  }
  Buffer shared = BufferNode::Make(b->name, b->dtype, b->shape, Scope::kShared, b->strides);
  demoted_[b.get()] = shared;
  ctx_.remarks.push_back("fragment " + b->name + ": kept in shared memory (no T.gemm fixes its layout)");
  return Allocate::Make(shared, op->init, op->span);
}

Buffer FragmentRewriter::MutateBuffer(const Buffer& b) {
  auto it = demoted_.find(b.get());
  return it == demoted_.end() ? b : it->second;
}

Expr FragmentRewriter::Mutate_(const BufferLoad* op, const Expr& self) {
  auto it = regs_.find(op->buffer.get());
  if (it == regs_.end()) return IRMutator::Mutate_(op, self);
  auto local = current_.find(op->buffer.get());
  if (local == current_.end() || !IndicesMatch(op->indices, local->second.first)) {
    if (std::optional<Expr> reg = ColumnRead(op)) return BufferLoad::Make(it->second.regs, {*reg});
    if (std::optional<Expr> reg = FoldedRead(op, it->second)) return BufferLoad::Make(it->second.regs, {*reg});
    if (unmapped_) {  // a trial (Mutate_(Seq)): the statement goes through shared memory
      NoteUnmapped(op->buffer, ToString(self));
      return self;
    }
    TL_USER_ERROR(span_) << "fragment " << op->buffer->name
                         << " (held in registers) can only be accessed element-wise inside a T.Parallel "
                            "loop over its whole shape, as "
                         << op->buffer->name << "[i, j] (or at the loop's variables plus offsets the loop does not "
                         << "change, " << op->buffer->name << "[i + s * 32, j], where every iteration that runs "
                         << "stays inside the fragment)";
  }
  return BufferLoad::Make(it->second.regs, {local->second.second});
}

Stmt FragmentRewriter::Mutate_(const BufferStore* op, const Stmt& self) {
  span_ = op->span;
  auto it = regs_.find(op->buffer.get());
  if (it == regs_.end()) return IRMutator::Mutate_(op, self);
  auto local = current_.find(op->buffer.get());
  if (local == current_.end() || !IndicesMatch(op->indices, local->second.first)) {
    if (unmapped_) {
      NoteUnmapped(op->buffer, ToString(BufferLoad::Make(op->buffer, op->indices)));
      return self;
    }
    TL_USER_ERROR(op->span) << "fragment " << op->buffer->name
                            << " (held in registers) can only be written element-wise inside a T.Parallel "
                               "loop over its whole shape";
  }
  return BufferStore::Make(it->second.regs, {local->second.second}, Mutate(op->value), op->span);
}

Stmt FragmentRewriter::Mutate_(const For* op, const Stmt& self) {
  span_ = op->span;
  if (Stmt printed = PrintRegisterTile(op); printed) return printed;
  if (op->for_kind != ForKind::kParallel) {
    enclosing_loops_.push_back({op->var.get(), {op->min, op->extent}});
    Stmt out = IRMutator::Mutate_(op, self);
    enclosing_loops_.pop_back();
    // A loop choosing the row of a column read (F[s, j]) is unrolled: registers cannot be
    // indexed at run time (a loop left rolled would put the fragment in local memory).
    int64_t extent = 0;
    const auto* loop = As<For>(out);
    if (column_row_vars_.count(op->var.get()) && loop && loop->for_kind == ForKind::kSerial &&
        AsConstInt(loop->extent, &extent) && extent <= 64) {
      return For::Make(loop->var, loop->min, loop->extent, ForKind::kUnrolled, loop->body, loop->annotations,
                       loop->span);
    }
    return out;
  }
  ParallelNest nest = CollectNest(op);
  ++in_parallel_;
  struct Leave {
    int* depth;
    ~Leave() { --*depth; }
  } leave{&in_parallel_};
  AccessCollector c;
  c.Visit(nest.body);
  const RegFragment* anchor = nullptr;
  Buffer anchor_buf;
  std::optional<NestAnchor> at;
  for (auto& [b, idx] : c.accesses) {
    auto it = regs_.find(b.get());
    if (it == regs_.end()) continue;
    at = AnchorOf(idx, nest);
    if (at && (IndicesAreVars(idx, nest) || UnreachedIterationsIdle(*at, nest, b))) {
      anchor = &it->second;
      anchor_buf = b;
      break;
    }
    at.reset();
  }
  if (!anchor) return IRMutator::Mutate_(op, self);
  // for l in [0, num_local): (i, j) = inverse(tx, l); body with F[i, j] -> F_regs[l]
  // (and, next to a tile, a per-row vector R[i] -> R_regs[row of l]). An anchor at
  // F[i + c, j] walks the same registers with i = (its row) - c, guarded to the loop's
  // range: the iterations no register reaches do nothing (UnreachedIterationsIdle).
  const FragmentLayout& lay = *anchor->layout;
  VarRef l = Var::Make("l");
  auto [fi, fj] = lay.Inverse(tx_, l);
  std::vector<Expr> element = {fi, fj};
  current_.clear();
  column_reads_.clear();
  folded_reads_.clear();
  FragmentLayoutRef columns = at->indices.size() == 2 ? lay.Columns() : nullptr;
  std::vector<const Var*> nest_vars;
  for (const For* loop : nest.loops) nest_vars.push_back(loop->var.get());
  for (const auto& [buf, rf] : regs_) {
    // A vector leads the nest: a tile whose columns it matches is read as F[s, j] at its
    // register's column.
    if (lay.is_rows() && at->indices.size() == 1 && rf.layout->whole_columns() && *rf.layout->Columns() == lay) {
      column_reads_[buf] = ColumnReads{at->indices[0], l, rf.layout->regs_per_row(), nest_vars};
    }
    if (*rf.layout == lay) current_[buf] = {at->indices, l};
    if (!lay.is_rows() && at->indices.size() == 2) {
      FragmentLayoutRef folded = rf.layout->FoldedColumns(lay.n());
      if (folded && *folded == lay) folded_reads_[buf] = FoldedReads{at->indices[0], at->indices[1], l, lay.n(), nest_vars};
    }
    if (!lay.is_rows() && *rf.layout == *lay.Rows()) current_[buf] = {{at->indices[0]}, lay.RowLocal(l)};
    if (!columns) continue;
    // (a per-column vector: the register of l's column; with whole columns, register
    // row * per_row + q holds column q's element of that row, which F[s, j] reads)
    Expr column = lay.ColumnLocal(l);
    if (*rf.layout == *columns) current_[buf] = {{at->indices[1]}, column};
    if (*rf.layout == lay && lay.whole_columns()) {
      column_reads_[buf] = ColumnReads{at->indices[1], column, lay.regs_per_row(), nest_vars};
    }
  }
  Stmt body = Mutate(nest.body);
  current_.clear();
  column_reads_.clear();
  folded_reads_.clear();
  std::unordered_map<const Var*, Expr> value;
  Expr in_range;
  for (size_t d = 0; d < at->vars.size(); ++d) {
    if (at->inner[d]) {  // a fused dimension: exactly covered, no guard
      value[at->vars[d]] = FloorDiv(element[d], MakeInt(at->inner_extent[d]));
      value[at->inner[d]] = FloorMod(element[d], MakeInt(at->inner_extent[d]));
      continue;
    }
    value[at->vars[d]] = at->offsets[d] ? element[d] - at->offsets[d] : element[d];
  }
  for (const For* loop : nest.loops) {
    int64_t ext = -1, dim = -2;
    size_t d = 0;
    while (d < at->vars.size() && at->vars[d] != loop->var.get()) ++d;
    if (d == at->vars.size() || at->inner[d]) continue;  // a fused pair's loop
    AsConstInt(loop->extent, &ext);
    AsConstInt(anchor_buf->shape[d], &dim);
    if (!at->offsets[d] && ext == dim) continue;  // every register's index is in the loop's range
    Expr v = value[loop->var.get()];
    Expr ok = And(GE(v, MakeInt(0)), LT(v, loop->extent));
    in_range = in_range ? And(in_range, ok) : ok;
  }
  body = Substitute(body, [&](const Var* v) -> Expr {
    auto it = value.find(v);
    return it == value.end() ? nullptr : it->second;
  });
  if (in_range) body = IfThenElse::Make(in_range, body, nullptr, op->span);
  if (lay.is_rows()) body = GuardReplicatedWrites(body, lay);
  return For::Make(l, MakeInt(0), MakeInt(lay.num_local()), ForKind::kUnrolled, body,
                   {{cuda::kRegisterWalk, MakeInt(1)}}, op->span);
}

Stmt FragmentRewriter::Mutate_(const Seq* op, const Stmt& self) {
  // Inside a T.Parallel nest or a branch on the thread index a whole-fragment copy cannot
  // go: what cannot be walked there is reported to the statement list around them.
  if (in_parallel_ > 0 || thread_branch_ > 0) return IRMutator::Mutate_(op, self);
  std::vector<Stmt> out;
  bool changed = false;
  for (const Stmt& child : op->stmts) {
    std::vector<std::pair<Buffer, std::string>> bad;
    auto* outer = unmapped_;
    const size_t remarks = ctx_.remarks.size();
    unmapped_ = &bad;
    Stmt trial = Mutate(child);
    unmapped_ = outer;
    if (bad.empty()) {
      changed |= trial != child;
      out.push_back(trial);
      continue;
    }
    ctx_.remarks.resize(remarks);
    for (Stmt& s : RoundTrip(child, bad)) out.push_back(std::move(s));
    changed = true;
  }
  return changed ? Seq::Make(std::move(out), op->span) : self;
}

void FragmentRewriter::NoteUnmapped(const Buffer& frag, std::string access) {
  for (const auto& [b, first] : *unmapped_) {
    if (b.get() == frag.get()) return;  // its first such access is the one a remark names
  }
  unmapped_->emplace_back(frag, std::move(access));
}

std::vector<Stmt> FragmentRewriter::RoundTrip(const Stmt& s, const std::vector<std::pair<Buffer, std::string>>& bad) {
  // Each register fragment the statement accesses in a way no nest walks: written to a
  // shared twin before it, the statement on the twin, and read back when it writes it.
  std::unordered_map<const BufferNode*, Buffer> twins;
  struct Twin : IRMutator {
    std::unordered_map<const BufferNode*, Buffer>* twins;
    Buffer MutateBuffer(const Buffer& b) override {
      auto it = twins->find(b.get());
      return it == twins->end() ? b : it->second;
    }
  } twin;
  twin.twins = &twins;
  std::vector<Stmt> before, after;
  std::unordered_set<const BufferNode*> written;
  cuda::AddWrites(s, &written);
  for (const auto& [frag, access] : bad) {
    const BufferNode* b = frag.get();
    Buffer shared = BufferNode::Make(frag->name + "_shared", frag->dtype, frag->shape, Scope::kShared);
    twins[b] = shared;
    Region whole_f = Region::Full(frag), whole_s = Region::Full(shared);
    before.push_back(Allocate::Make(shared, nullptr, s->span));
    before.push_back(Mutate(CopyOp::Make(whole_f, whole_s, s->span)));
    if (written.count(b)) after.push_back(Mutate(CopyOp::Make(whole_s, whole_f, s->span)));
    ctx_.remarks.push_back("fragment " + frag->name + " (registers) goes through shared memory at line " +
                           std::to_string(s->span.line) + ": that statement accesses it as " + access +
                           ", which no T.Parallel nest there walks in its registers (" +
                           (written.count(b) ? "written to a shared tile and read back" : "written to a shared tile") +
                           ")");
  }
  before.push_back(Mutate(twin.Mutate(s)));
  for (Stmt& a : after) before.push_back(std::move(a));
  return before;
}

/// T.print of a whole tile (serial loops around a once-per-block print) when the tile is
/// a register fragment: every thread prints the elements it holds, with their indices.
Stmt FragmentRewriter::PrintRegisterTile(const For* op) {
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

}  // namespace fragments

ir::PrimFunc CudaLowerFragments(const ir::PrimFunc& f, PassContext& ctx) {
  cuda::ThreadBinding tb = cuda::GetThreadBinding(f->body, "cuda-lower-fragments");
  cuda::FragmentLayouts inference =
      cuda::InferFragmentLayouts(f->body, tb.threads, ctx.Cuda(), cuda::WgmmaOptionsOf(ctx),
                                 cuda::ConfigOn(ctx, "tl.range_register_tiles", /*default_on=*/true),
                                 cuda::ConfigOn(ctx, "tl.mma_column_vectors", /*default_on=*/true),
                                 cuda::ConfigTrue(ctx, "tl.mma_column_vectors"));
  if (!inference.columns_note.empty()) ctx.remarks.push_back(inference.columns_note);
  fragments::FragmentRewriter rewriter(inference, tb.tx, ctx);
  rewriter.threads = tb.threads;
  rewriter.kernel_body = f->body;
  ir::Stmt body = rewriter.Mutate(f->body);
  // Each register fragment's layout, written before its declaration for the reader of the
  // IR and of the generated source (cuda_attrs.h); nothing reads it back to decide anything.
  std::unordered_map<const ir::BufferNode*, std::string> notes;
  for (const auto& [fragment, rf] : rewriter.RegisterFragments()) {
    notes[rf.regs.get()] = rf.layout->ToString() + ", " + std::to_string(rf.layout->num_local()) + " per thread";
  }
  struct Noter : ir::IRMutator {
    const std::unordered_map<const ir::BufferNode*, std::string>* notes;
    ir::Stmt Mutate_(const ir::Seq* op, const ir::Stmt& self) override {
      std::vector<ir::Stmt> out;
      for (const ir::Stmt& s : op->stmts) {
        const auto* alloc = ir::As<ir::Allocate>(s);
        auto note = alloc ? notes->find(alloc->buffer.get()) : notes->end();
        if (note != notes->end()) out.push_back(target::FragmentLayoutAttr(alloc->buffer->name, note->second, s->span));
        out.push_back(Mutate(s));
      }
      return ir::Seq::Make(out, op->span);
    }
  } noter;
  noter.notes = &notes;
  return ir::PrimFuncNode::Make(f->name, f->params, noter.Mutate(body), f->span);
}

TL_REGISTER_PASS("cuda-lower-fragments", CudaLowerFragments);

}  // namespace tl::transform
