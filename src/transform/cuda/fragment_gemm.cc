// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-lower-fragments" (see lower_fragments.h), its GEMMs: T.gemm with a register
/// accumulator as ldmatrix + mma.sync (gemm_ss), wgmma on Hopper, A in registers (gemm_rs),
/// or element loops where tensor cores do not apply; layout inference
/// (fragment_inference.cc) made the choice.
#include <string>
#include <unordered_set>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/printer.h"
#include "tl/layout/fragment.h"
#include "tl/op/make.h"
#include "tl/target/cuda_target.h"
#include "tl/transform/passes.h"
#include "../region_util.h"
#include "copy_lowering.h"
#include "fragment_inference.h"
#include "gemm_live_columns.h"
#include "lower_fragments.h"
#include "shared_plan.h"
#include "thread_binding.h"

namespace tl::transform::fragments {

using ir::IRVisitor;

/// T.gemm with A in registers (the accumulator layout of M x K, warps along M only):
/// gemm_rs packs A's registers into mma operands without touching shared memory.
Stmt FragmentRewriter::RegisterAGemm(const GemmOp* op, bool wgmma) {
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
  if (op->tf32) return RegisterTf32AGemm(op, a, c, b, std::move(out));
  std::vector<Expr> args = {
      Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(a.regs, {MakeInt(0)})}),
      Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b.buffer, bmins)}),
      Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(c.regs, {MakeInt(0)})}),
      MakeInt(c.layout->m()), MakeInt(c.layout->n()), MakeInt(a.layout->n()),
      MakeInt(Mma(c).warps().warps_m), MakeBool(op->trans_b), b.buffer->StrideOf(b.ranges.size() - 2)};
  if (wgmma) {
    // tl::gemm_rs_wgmma(A regs, B tile base, C regs) reads B in its panelled layout; B is a
    // whole tile or a stage of one (`V_s[k % 2, :, :]`, WgmmaOptions::stages), whose first
    // element is where that stage's panels start.
    // (A, B, C, M, N, K, trans_b, proxy_fence, 64-row blocks per warpgroup)
    const int64_t reps = MBlocksPerWarpgroup(c);
    std::vector<Expr> wargs = {args[0], args[1],
                               args[2], args[3], args[4], args[5], MakeBool(op->trans_b), MakeBool(true),
                               MakeInt(reps)};
    out.push_back(Evaluate::Make(Call::Make(DType::Void(), "gemm_rs_wgmma", wargs), op->span));
    ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                           op->c.buffer->name + ": A from registers, wgmma m64n" +
                           std::to_string(std::min<int64_t>(c.layout->n(), 256)) + "k16 with B from shared memory" +
                           (reps > 1 ? ", " + std::to_string(reps) + " 64-row blocks per warpgroup" : ""));
    return Seq::Make(out, op->span);
  }
  out.push_back(Evaluate::Make(Call::Make(DType::Void(), "gemm_rs", args), op->span));
  ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                         op->c.buffer->name + ": A from registers (no trip through shared memory), "
                         "ldmatrix + mma.sync m16n8k16 for B" +
                         NotWgmmaNote(PlanOf(op)));
  return Seq::Make(out, op->span);
}

namespace {

/// Register tiles of at least this many 32-bit registers per thread leave an mma.sync GEMM
/// too few for a second fragment buffer: its fragments load right before their mmas
/// (gemm_ss's Prefetch = false). Sparse MLA backward (232 of the 255) spilled 344 bytes per
/// thread with two buffers and ran 8% slower (0.1621 against 0.1493 ms on the H200).
constexpr int64_t kSingleBufferRegisters = 200;

/// 32-bit registers per thread the kernel's register fragments take together.
int64_t RegisterTileWords(const std::unordered_map<const BufferNode*, cuda::Assigned>& layouts) {
  int64_t words = 0;
  for (const auto& [buffer, assigned] : layouts) {
    if (assigned.layout) words += (assigned.layout->num_local() * buffer->dtype.bytes() + 3) / 4;
  }
  return words;
}

bool IsTrue(const Expr& e) {
  int64_t v = 0;
  return AsConstInt(e, &v) && v != 0;
}

/// Whether every value the kernel writes into fragment `a` is exact in TF32: copies from
/// 16-bit float tiles (a bfloat16 or float16 value has at most TF32's 10 mantissa bits and
/// float32's exponent range), casts of such values, and constant fills of zero. The tensor
/// cores then need no rounding of A (mHC pre widens bfloat16 rows into its tfloat32 A).
bool WrittenExactInTf32(const Stmt& body, const BufferNode* a) {
  struct Writes : IRVisitor {
    const BufferNode* a;
    bool exact = true;
    static bool Sixteen(const DType& t) { return t.IsFloat() && t.bits == 16; }
    void Visit_(const CopyOp* op) override {
      if (op->dst.buffer.get() == a && !Sixteen(op->src.buffer->dtype)) exact = false;
      IRVisitor::Visit_(op);
    }
    void Visit_(const FillOp* op) override {
      const auto* f = As<FloatImm>(op->value);
      int64_t i = 1;
      bool zero = (f && f->value == 0) || (AsConstInt(op->value, &i) && i == 0);
      if (op->dst.buffer.get() == a && !zero) exact = false;
      IRVisitor::Visit_(op);
    }
    void Visit_(const BufferStore* op) override {
      const auto* cast = As<Cast>(op->value);
      if (op->buffer.get() == a && !(cast && Sixteen(cast->value->dtype))) exact = false;
      IRVisitor::Visit_(op);
    }
    void Visit_(const ReduceOp* op) override {
      if (op->dst.buffer.get() == a) exact = false;
      IRVisitor::Visit_(op);
    }
    void Visit_(const AtomicOp* op) override {
      if (op->dst.buffer.get() == a) exact = false;
      IRVisitor::Visit_(op);
    }
    void Visit_(const GemmOp* op) override {
      if (op->c.buffer.get() == a) exact = false;
      IRVisitor::Visit_(op);
    }
  } writes;
  writes.a = a;
  writes.Visit(body);
  return writes.exact;
}

}  // namespace

/// T.gemm on tfloat32 tiles with A in registers (layout::MmaTf32ALayout, each warp along N
/// holding its rows' copy): tl::gemm_rs_tf32, mma.sync m16n8k8 with B by ldmatrix.
Stmt FragmentRewriter::RegisterTf32AGemm(const GemmOp* op, const RegFragment& a, const RegFragment& c, const Region& b,
                                         std::vector<Stmt> out) {
  const auto* al = dynamic_cast<const layout::MmaTf32ALayout*>(a.layout->Base());
  TL_ICHECK(al) << "tfloat32 register A without its operand layout: " << a.layout->ToString();
  const layout::WarpPartition& w = Mma(c).warps();
  std::vector<Expr> bmins;
  for (const Range& rg : b.ranges) bmins.push_back(rg.min);
  // (A, B, C, M, N, K, WM, WN, MFastest, InterleaveM, LdB, AExact)
  std::vector<Expr> args = {
      Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(a.regs, {MakeInt(0)})}),
      Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b.buffer, bmins)}),
      Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(c.regs, {MakeInt(0)})}),
      MakeInt(c.layout->m()), MakeInt(c.layout->n()), MakeInt(a.layout->n()), MakeInt(w.warps_m),
      MakeInt(w.warps_n), MakeBool(w.m_fastest), MakeBool(w.interleave_m), b.buffer->StrideOf(b.ranges.size() - 2),
      MakeBool(WrittenExactInTf32(kernel_body, op->a.buffer.get()))};
  const bool panels = PanelOperands(b, b);
  out.push_back(Evaluate::Make(Call::Make(DType::Void(), panels ? "gemm_rs_tf32_panels" : "gemm_rs_tf32", args),
                               op->span));
  ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " + op->c.buffer->name +
                         ": A from registers (tf32 operand layout, a copy per warp along N; no trip through "
                         "shared memory), B by ldmatrix, mma.sync m16n8k8 (tf32 tensor cores, operands rounded "
                         "to TF32), warps " + std::to_string(w.warps_m) + "x" + std::to_string(w.warps_n) +
                         NotWgmmaNote(PlanOf(op)) +
                         (panels ? "; B in wgmma's panel layout, which TMA can load (tl.mma_sync_panels)" : "") +
                         (IsTrue(args.back()) ? "; A holds 16-bit floats, exact in TF32: not rounded again"
                                                          : ""));
  return Seq::Make(out, op->span);
}

/// T.gemm on Hopper: wgmma m64nNk16 from shared memory, one warpgroup per 64 rows of
/// C. The operands' shared layout follows (cuda::WgmmaOperandOffset, in codegen).
Stmt FragmentRewriter::WgmmaGemm(const GemmOp* op) {
  const RegFragment& rf = regs_.at(op->c.buffer.get());
  std::vector<Stmt> out;
  int64_t clr = 0;
  if (!(AsConstInt(op->clear_accum, &clr) && clr == 0)) {
    out.push_back(IfThenElse::Make(op->clear_accum, FillRegs(rf, MakeFloat(0, rf.regs->dtype), op->span), nullptr,
                                   op->span));
  }
  // An operand's first element: the tile's, or a window's first panel (WgmmaOptions::windows).
  auto base = [](const Region& r) {
    std::vector<Expr> start;
    for (const Range& rg : r.ranges) start.push_back(rg.min);
    return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(r.buffer, start)});
  };
  Region a = MutateRegion(op->a), b = MutateRegion(op->b);
  // (the last two dimensions: a stage of a staged tile has leading ones of extent 1)
  Expr k = op->trans_a ? a.ranges[a.ranges.size() - 2].extent : a.ranges.back().extent;
  // Warpgroups beyond one per 64 rows split N (the accumulator's m-fastest warp order);
  // fewer own several 64-row blocks each (its interleaved rows).
  const int64_t wg_n = Mma(rf).warps().warps_n, n_per_wg = rf.layout->n() / wg_n;
  const int64_t reps = MBlocksPerWarpgroup(rf);
  // (A, B, C, M, N, K, trans_a, trans_b, proxy_fence, warpgroups along N, blocks per warpgroup)
  std::vector<Expr> args = {base(a), base(b),
                            Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(rf.regs, {MakeInt(0)})}),
                            MakeInt(rf.layout->m()), MakeInt(rf.layout->n()), k,
                            MakeBool(op->trans_a), MakeBool(op->trans_b), MakeBool(true), MakeInt(wg_n),
                            MakeInt(reps)};
  const std::string clipped = ClipToLiveColumns(op, k, wg_n, reps, &args);
  int64_t n_issue = n_per_wg;
  AsConstInt(args[4], &n_issue);
  n_issue /= wg_n;
  if (op->async_wgmma) {
    // (KTileA, KTileB): the columns of the tiles whose windows K-major operands are, when a
    // window is narrower than its tile (T.wgmma_gemm on A_s[:, j * 16 : (j + 1) * 16]).
    int64_t kc = 0, ka = 0, kb = 0;
    AsConstInt(k, &kc);
    ka = kc, kb = kc;
    if (!op->trans_a) AsConstInt(a.buffer->shape.back(), &ka);
    if (op->trans_b) AsConstInt(b.buffer->shape.back(), &kb);
    if (ka != kc || kb != kc) {
      args.push_back(MakeInt(ka));
      args.push_back(MakeInt(kb));
    }
  }
  // T.wgmma_gemm: issued and committed, waited for by the program's T.wait_wgmma.
  out.push_back(Evaluate::Make(Call::Make(DType::Void(), op->async_wgmma ? "gemm_ss_wgmma_issue" : "gemm_ss_wgmma",
                                          args),
                               op->span));
  ctx_.remarks.push_back(std::string(op->async_wgmma ? "T.wgmma_gemm " : "T.gemm ") + op->a.buffer->name + " x " +
                         op->b.buffer->name + " -> " + op->c.buffer->name + ": wgmma m64n" + std::to_string(std::min<int64_t>(n_issue, 256)) +
                         (op->a.buffer->dtype.bits == 8 ? "k32 (float8)" : "k16") + " from shared memory, " +
                         std::to_string(rf.layout->m() / 64 / reps * wg_n) +
                         " warpgroup(s)" +
                         (wg_n > 1 ? " (" + std::to_string(wg_n) + " along N, " + std::to_string(n_per_wg) +
                                         " columns each)"
                                   : "") +
                         (reps > 1 ? " (" + std::to_string(reps) + " 64-row blocks each)" : "") +
                         (op->async_wgmma ? ", not waited for (T.wait_wgmma)" : "") + clipped);
  return Seq::Make(out, op->span);
}

/// A B tile wider than the tensor it is loaded from (cuda::LiveGemmColumns): the wgmmas
/// cover only the columns that can be non-zero, rounded up to what the instruction and
/// B's layout take (whole 64-column panels of an N-major B; 16 rows of a K-major B, whose
/// k steps must then stay inside one 128-byte panel, since its panel stride counts all N
/// rows). Not with warpgroups split along N or repeated along M, whose registers are
/// placed by N, nor for T.wgmma_gemm, which the program waits for itself. The result
/// names the clip for the remark ("" when there is none).
std::string FragmentRewriter::ClipToLiveColumns(const GemmOp* op, const Expr& k, int64_t wg_n, int64_t reps,
                                                std::vector<Expr>* args) {
  int64_t n = 0, kc = 0;
  if (!cuda::ConfigOn(ctx_, "tl.gemm_live_columns", /*default_on=*/true)) return "";
  if (op->async_wgmma || wg_n != 1 || reps != 1 || !AsConstInt((*args)[4], &n) || !AsConstInt(k, &kc)) return "";
  if (op->trans_b && kc * op->b.buffer->dtype.bits > 128 * 8) return "";
  std::string source;
  const int64_t live = cuda::LiveGemmColumns(kernel_body, op, &source);
  const int64_t step = op->trans_b ? 16 : 64;
  const int64_t clipped = (live + step - 1) / step * step;
  if (live <= 0 || clipped >= n) return "";
  (*args)[4] = MakeInt(clipped);
  return "; over its first " + std::to_string(clipped) + " of " + std::to_string(n) +
         " columns: B's columns from " + std::to_string(live) + " on lie outside " + source +
         " for every block and step, so their products are zero (tl.gemm_live_columns)";
}

/// T.wgmma_gemm must become wgmma from shared memory (gemm_ss_wgmma_issue): the reason it
/// cannot, at the user's line.
void FragmentRewriter::RequireAsyncWgmma(const GemmOp* op) {
  std::string why;
  const cuda::GemmPlan& plan = PlanOf(op);
  if (plan.wgmma && !plan.register_a && plan.simt.empty()) return;
  if (!plan.not_wgmma.empty()) {
    why = plan.not_wgmma;
  } else if (!plan.simt.empty()) {
    why = plan.simt;
  } else if (plan.register_a) {
    why = "operand A is a register fragment (T.wgmma_gemm reads A and B from shared memory here)";
  } else if (!plan.wgmma) {
    const target::CudaTarget& t = ctx_.Cuda();
    why = !t.HasWgmma() ? "the target is " + (t.Known() ? t.arch : std::string("unknown")) + ", not sm_90a"
                        : "the GEMM takes another path";
  }
  TL_USER_ERROR(op->span) << "T.wgmma_gemm() requires Hopper WGMMA lowering (sm_90a, operands fit for wgmma), "
                          << "but this GEMM cannot use it: " << why;
}

/// T.wait_wgmma: the accumulators of the kernel's T.wgmma_gemm calls are written here, so
/// each is pinned in its registers after the wait (tl::wgmma_hold): no read of it moves
/// above the wait.
Stmt FragmentRewriter::Mutate_(const Evaluate* op, const Stmt& self) {
  const auto* call = As<Call>(op->value);
  if (!HasEffect(call, kWgmmaWait)) return IRMutator::Mutate_(op, self);
  if (!async_accs_ready_) {
    async_accs_ready_ = true;
    struct Accumulators : IRVisitor {
      std::vector<const BufferNode*>* out;
      std::unordered_set<const BufferNode*> seen;
      void Visit_(const GemmOp* g) override {
        if (g->async_wgmma && seen.insert(g->c.buffer.get()).second) out->push_back(g->c.buffer.get());
        IRVisitor::Visit_(g);
      }
    } accs;
    accs.out = &async_accs_;
    accs.Visit(kernel_body);
  }
  std::vector<Stmt> out{self};
  for (const BufferNode* acc : async_accs_) {
    auto it = regs_.find(acc);
    if (it == regs_.end()) continue;
    const Buffer& regs = it->second.regs;
    out.push_back(Evaluate::Make(
        Call::Make(DType::Void(), "wgmma_hold",
                   {Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(regs, {MakeInt(0)})}), regs->shape[0]}),
        op->span));
  }
  return out.size() == 1 ? self : Seq::Make(out, op->span);
}

/// Whether an mma.sync GEMM reads both shared operands in wgmma's panel layout rather than
/// XOR rows (tl.mma_sync_panels, sm_90 and newer): ldmatrix reads both without bank
/// conflicts, and TMA can write panels (128-byte swizzled boxes), so a pipelined loop
/// feeding the GEMM can be warp-specialized with TMA loads. By default only for 4-byte
/// (tf32) operands, the case measured (upstream's mHC pre-norm GEMM 0.287 -> 0.160 ms on
/// the H200); tl.mma_sync_panels=1 takes 8- and 16-bit ones too, =0 none. Each tile needs
/// rows a multiple of 8, rows of 64 or a multiple of 128 bytes, and every GEMM window into
/// it (this one's and any other GEMM's) starting on a panel atom.
bool FragmentRewriter::PanelOperands(const Region& a, const Region& b) {
  if (!ctx_.Cuda().HasTma() || !cuda::ConfigOn(ctx_, "tl.mma_sync_panels", true)) return false;
  const bool asked = ctx_.config.count("tl.mma_sync_panels") > 0;
  auto starts_on_atom = [](const Region& r) {
    std::vector<Expr> start;
    for (const Range& rg : r.ranges) start.push_back(rg.min);
    return cuda::StartsOnPanelAtom(r.buffer, start);
  };
  if (!off_atom_tiles_) {
    // The tiles some GEMM of the kernel reads through a window off the panel atoms.
    struct Gemms : IRVisitor {
      std::vector<const GemmOp*> found;
      void Visit_(const GemmOp* g) override { found.push_back(g); }
    } gemms;
    gemms.Visit(kernel_body);
    off_atom_tiles_.emplace();
    for (const GemmOp* g : gemms.found) {
      for (const Region* r : {&g->a, &g->b}) {
        if (!starts_on_atom(*r)) off_atom_tiles_->insert(r->buffer.get());
      }
    }
  }
  for (const Region* r : {&a, &b}) {
    const Buffer& t = r->buffer;
    int64_t rows = 0, cols = 0;
    if (t->scope != Scope::kShared || t->shape.size() < 2 || !AsConstInt(t->shape.back(), &cols) ||
        !AsConstInt(t->shape[t->shape.size() - 2], &rows) || (!asked && t->dtype.bytes() != 4)) {
      return false;
    }
    const int64_t row_bytes = cols * t->dtype.bytes();
    if (rows % 8 || !(row_bytes % 128 == 0 || row_bytes == 64)) return false;
    if (!starts_on_atom(*r) || off_atom_tiles_->count(t.get())) return false;
  }
  return true;
}

Stmt FragmentRewriter::Mutate_(const GemmOp* op, const Stmt& self) {
  if (op->async_wgmma) RequireAsyncWgmma(op);
  const cuda::GemmPlan& plan = PlanOf(op);
  if (!plan.simt.empty()) return SimtGemm(op, plan.simt);
  {
    // Every warp holding the accumulator issues its part: under a branch on the thread
    // index, the branch's threads must be exactly those (a GEMM of that range of warps).
    std::vector<const RegFragment*> held;
    for (const Buffer& b : {op->c.buffer, op->a.buffer}) {
      auto r = regs_.find(b.get());
      if (r != regs_.end()) held.push_back(&r->second);
    }
    RefuseUnderThreadBranch(self, "T.gemm", held);
  }
  if (plan.register_a) return RegisterAGemm(op, plan.wgmma);
  if (plan.wgmma) return WgmmaGemm(op);
  auto it = regs_.find(op->c.buffer.get());
  TL_ICHECK(it != regs_.end()) << "gemm accumulator without a layout";
  const RegFragment& rf = it->second;
  std::vector<Stmt> out;
  // A register fragment the tensor cores cannot read in place (layout inference's StageA)
  // is read by ldmatrix from a shared copy.
  auto a_regs = regs_.find(op->a.buffer.get());
  Region a = a_regs != regs_.end() ? StageOperand(op->a.buffer, a_regs->second, " for ldmatrix", op->span, &out)
                                   : MutateRegion(op->a);
  Region b = MutateRegion(op->b);
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
  // MFastest, InterleaveM: the accumulator's warp order when it is not the default one;
  // Tf32: a T.gemm on tfloat32 tiles (operands rounded to TF32); Prefetch (false): one
  // fragment buffer when the register tiles nearly fill the register file.
  const bool interleave = Mma(rf).warps().interleave_m;
  const int64_t tile_words = RegisterTileWords(layouts_);
  const bool single_buffer = tile_words >= kSingleBufferRegisters;
  if (Mma(rf).warps().m_fastest || interleave || op->tf32 || single_buffer) {
    args.push_back(MakeBool(Mma(rf).warps().m_fastest));
  }
  if (interleave || op->tf32 || single_buffer) args.push_back(MakeBool(interleave));
  if (op->tf32 || single_buffer) args.push_back(MakeBool(op->tf32));
  if (single_buffer) args.push_back(MakeBool(false));
  const bool panels = PanelOperands(a, b);
  out.push_back(Evaluate::Make(Call::Make(DType::Void(), panels ? "gemm_ss_panels" : "gemm_ss", args), op->span));
  // gemm_ss (tile_ops.h) takes the tensor cores where cuda::MmaSyncUnfit allows (the same
  // test); other GEMMs run its per-thread multiply-add loop in the same warp layout.
  // (a float16 accumulator: TL_MMA_F16_ACC, set by the JIT from the same key, cuda_target.cc)
  std::string unfit = cuda::MmaSyncUnfit(op, cuda::ConfigOn(ctx_, "tl.mma_f16_accumulators", true));
  // The tf32 tensor cores are compiled in unless tl.enable_tf32_mma is false (TL_TF32_MMA,
  // set by the JIT from the same key; on since the H200 run in which the suite's tf32 tests
  // matched float64 both ways); gemm_ss runs the rounding loops in the same layout otherwise.
  if (op->tf32 && unfit.empty() && !cuda::ConfigOn(ctx_, "tl.enable_tf32_mma", true)) {
    unfit = "the tf32 tensor-core path is turned off (tl.enable_tf32_mma)";
  }
  ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                         op->c.buffer->name + ": " +
                         (unfit.empty() ? std::string("ldmatrix + mma.sync ") +
                                              (op->tf32 ? "m16n8k8 (tf32 tensor cores, operands rounded to TF32)"
                                               : op->a.buffer->dtype.bytes() == 1 ? "m16n8k32 (int8)" : "m16n8k16")
                                        : "multiply-add loops, no tensor cores (" + unfit + ")" +
                                              (op->tf32 ? ", operands rounded to TF32" : "")) +
                         ", warps " +
                         std::to_string(Mma(rf).warps().warps_m) + "x" +
                         std::to_string(Mma(rf).warps().warps_n) +
                         NotWgmmaNote(PlanOf(op)) +
                         (panels ? "; operands in wgmma's panel layout, which TMA can load (tl.mma_sync_panels)" : "") +
                         (single_buffer && unfit.empty()
                              ? "; one fragment buffer (the kernel's register tiles take " + std::to_string(tile_words) +
                                    " registers per thread)"
                              : ""));
  return Seq::Make(out, op->span);
}

Region FragmentRewriter::StageOperand(const Buffer& operand, const RegFragment& rf, const std::string& reader,
                                      const Span& span, std::vector<Stmt>* out) {
  Buffer tile = BufferNode::Make(operand->name + "_staged", operand->dtype,
                                 {MakeInt(rf.layout->m()), MakeInt(rf.layout->n())}, Scope::kShared);
  out->push_back(Allocate::Make(tile, nullptr, span));
  out->push_back(RegsToTile(rf, Region::Full(tile), span));  // the barrier pass orders the readers after it
  ctx_.remarks.push_back("T.gemm operand " + operand->name + " (" + rf.layout->ToString() +
                         ") staged through shared memory" + reader);
  return Region::Full(tile);
}

/// C[i, j] += sum_k A[i, k] * B[k, j] as a T.Parallel nest over C (spread over threads
/// later), for GEMMs that cannot use the tensor-core path.
Stmt FragmentRewriter::SimtGemm(const GemmOp* op, const std::string& why) {
  ctx_.remarks.push_back("T.gemm " + op->a.buffer->name + " x " + op->b.buffer->name + " -> " +
                         op->c.buffer->name + ": element-wise loops, no tensor cores (" + why + ")" +
                         (op->tf32 ? ", operands rounded to TF32" : ""));
  Region a = MutateRegion(op->a), b = MutateRegion(op->b), c = MutateRegion(op->c);
  std::vector<Stmt> staged;
  for (Region* r : {&a, &b}) {
    // An operand in registers: other threads need its elements, so it goes through shared.
    auto it = regs_.find(r->buffer.get());
    if (it != regs_.end()) *r = StageOperand(r->buffer, it->second, "", op->span, &staged);
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
  if (op->tf32) {  // a T.gemm on tfloat32 tiles: operands rounded to TF32 (as on the tensor cores and the CPU)
    av = Call::Make(DType::Float(32), "round_tf32", {av});
    bv = Call::Make(DType::Float(32), "round_tf32", {bv});
  }
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

}  // namespace tl::transform::fragments
