// SPDX-License-Identifier: Apache-2.0
/// \file Shared-memory facts common to planning, barriers and codegen (see shared_plan.h).
#include "shared_plan.h"

#include <algorithm>
#include <unordered_set>

#include "copy_lowering.h"
#include "pass_helpers.h"
#include "wgmma_select.h"
#include "tl/arith/simplify.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/functor.h"
#include "tl/layout/fragment.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Whether a GEMM operand window starts on a swizzle atom of its buffer (8 rows of 128
/// bytes, or of the row when longer: layout::SwizzleOffset XORs the 16-byte chunk with the
/// row bits above log2 of that). The GEMM library swizzles offsets relative to the window's
/// start, which equals swizzling the buffer's own offsets only when the start is a multiple
/// of the atom: `A_s[:, 32:]` of a 32 x 64 float16 tile starts at byte 64.
bool StartsOnSwizzleAtom(const BufferLoad* load) {
  const Buffer& b = load->buffer;
  int64_t cols = 0;
  if (b->shape.empty() || !AsConstInt(b->shape.back(), &cols)) return false;
  const int64_t atom = 8 * (int64_t{1} << layout::SwizzleShift(cols * b->dtype.bytes()));
  Expr offset = MakeInt(0);
  for (size_t i = 0; i < load->indices.size(); ++i) offset = offset + load->indices[i] * b->StrideOf(i);
  arith::Analyzer an;
  Expr rem = an.Simplify(FloorMod(offset * MakeInt(b->dtype.bytes()), MakeInt(atom)));
  int64_t r = -1;
  return AsConstInt(rem, &r) && r == 0;
}

}  // namespace

bool StartsOnPanelAtom(const Buffer& b, const std::vector<Expr>& start) {
  int64_t cols = 0;
  if (b->shape.empty() || !AsConstInt(b->shape.back(), &cols) || start.size() != b->shape.size()) return false;
  // Rows: a multiple of 8 (stages included: a tile's rows are a multiple of 8 in panel layout).
  Expr rows_offset = MakeInt(0);
  for (size_t i = 0; i + 1 < start.size(); ++i) rows_offset = rows_offset + start[i] * b->StrideOf(i);
  // Columns: the first of a 128-byte panel (Q_s[:, 512:] of a 576-column float16 tile), whose
  // 8-row atoms are 1024-byte aligned like the tile's; a 64-byte row is one panel.
  const int64_t row_bytes = cols * b->dtype.bytes();
  const int64_t panel = row_bytes == 64 ? cols : std::max<int64_t>(1, 128 / b->dtype.bytes());
  arith::Analyzer an;
  int64_t rem_rows = -1, rem_cols = -1;
  return AsConstInt(an.Simplify(FloorMod(rows_offset, MakeInt(8 * cols))), &rem_rows) && rem_rows == 0 &&
         AsConstInt(an.Simplify(FloorMod(start.back(), MakeInt(panel))), &rem_cols) && rem_cols == 0;
}

/// Whether a wgmma operand window `start` (of a call with kWgmmaPanels) begins at row 0 of
/// its tile (of a stage). Its columns need no check here: every such call's windows passed
/// WgmmaUnfit (wgmma_select.cc), which for T.gemm puts them on a panel edge
/// (WgmmaOptions::windows) and for T.wgmma_gemm on a panel edge or inside one, at a column
/// that may be symbolic.
bool StartsOnPanelRow(const Buffer& b, const std::vector<Expr>& start) {
  int64_t r = -1;
  if (start.size() < 2 || start.size() != b->shape.size()) return false;
  return AsConstInt(arith::Analyzer().Simplify(start[start.size() - 2]), &r) && r == 0;
}

std::unordered_set<const BufferNode*> GemmOperands(const Stmt& body) {
  const auto panelled = WgmmaOperands(body);
  std::unordered_set<const BufferNode*> out, unaligned;
  ForEachExpr(body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    if (!HasEffect(call, kGemm)) return;
    // gemm_rs* take A from registers: only their B (argument 1) is a shared operand.
    bool reg_a = HasEffect(call, kRegisterA);
    for (int k = reg_a ? 1 : 0; k < 2; ++k) {
      const auto* addr = As<Call>(call->args[k]);
      const auto* load = addr ? As<BufferLoad>(addr->args[0]) : nullptr;
      if (!load) continue;
      out.insert(load->buffer.get());
      bool aligned = panelled.count(load->buffer.get())
                         ? StartsOnPanelAtom(load->buffer, load->indices) ||
                               (HasEffect(call, kWgmmaPanels) && StartsOnPanelRow(load->buffer, load->indices))
                         : StartsOnSwizzleAtom(load);
      if (!aligned) unaligned.insert(load->buffer.get());
    }
  });
  // A buffer with a window that does not start on an atom is left unswizzled (every GEMM
  // on it reads plain row-major offsets).
  for (const BufferNode* b : unaligned) out.erase(b);
  return out;
}

bool Swizzled(const Buffer& b, const std::unordered_set<const BufferNode*>& gemm_operands,
              const std::unordered_set<const BufferNode*>& wgmma_operands) {
  if (b->scope != Scope::kShared || b->shape.size() < 2) return false;
  if (!gemm_operands.count(b.get()) && !wgmma_operands.count(b.get())) return false;  // (TMA-stored panels)
  int64_t cols, rows;
  if (!AsConstInt(b->shape.back(), &cols) || !AsConstInt(b->shape[b->shape.size() - 2], &rows)) return false;
  // wgmma panels: 128-byte panels (or one 64-byte one) of 8-row atoms (WgmmaOperandOffset)
  const int64_t row_bytes = cols * b->dtype.bytes();
  if (wgmma_operands.count(b.get())) return rows % 8 == 0 && (row_bytes % 128 == 0 || row_bytes == 64);
  return layout::CanSwizzle(cols * b->dtype.bytes(), rows * cols * b->dtype.bytes());
}

int64_t ConstBytes(const Buffer& b) {
  int64_t n = 0;
  if (!AsConstInt(arith::Analyzer().Simplify(b->NumElements()), &n)) return -1;
  return n * b->dtype.bytes();
}

std::unordered_set<const BufferNode*> StagingTiles(const Stmt& body,
                                                    const std::unordered_set<const BufferNode*>& gemm_operands) {
  struct Finder : IRVisitor {
    std::unordered_set<const BufferNode*> candidates, excluded;
    bool in_copy_helper = false;
    void Visit_(const Allocate* a) override {
      const Buffer& b = a->buffer;
      int64_t cols = 0, rows = 1, d = 0;
      // 1-byte tiles are left alone: their element loops (dequantization) pay the XOR on
      // every access, and a warp's consecutive byte accesses share banks without conflict
      // (the H200 run: the int8 x int4 GEMM 20% slower with them swizzled).
      bool fixed = b->scope == Scope::kShared && b->shape.size() >= 2 && b->dtype.bytes() >= 2;
      for (size_t i = 0; fixed && i < b->shape.size(); ++i) {
        fixed = AsConstInt(b->shape[i], &d);
        if (i + 1 == b->shape.size()) cols = d; else rows *= d;
      }
      if (fixed && layout::CanSwizzle(cols * b->dtype.bytes(), rows * cols * b->dtype.bytes())) {
        candidates.insert(b.get());
      }
      IRVisitor::Visit_(a);
    }
    void Visit_(const Call* op) override {
      if (HasEffect(op, kAddress)) {
        const auto* at = op->args.empty() ? nullptr : As<BufferLoad>(op->args[0]);
        if (at && !in_copy_helper) excluded.insert(at->buffer.get());
        IRVisitor::Visit_(op);
        return;
      }
      // The copy helpers' byte counts (codegen_cuda.cc): vec_copy(dst, src, bytes),
      // cp_async(dst, src, bytes, pred), vec_zero(dst, bytes), cast_copy(dst, src, lanes),
      // stmatrix_x4(dst row, registers): 16 bytes per lane.
      bool helper = false;
      int64_t n = 0;
      if (IsIntrinsic(op, TL_INTRINSIC_NAME("vec_copy")) || IsIntrinsic(op, TL_INTRINSIC_NAME("cp_async"))) {
        helper = op->args.size() > 2 && AsConstInt(op->args[2], &n) && n <= 16;
      } else if (IsIntrinsic(op, TL_INTRINSIC_NAME("vec_zero"))) {
        helper = op->args.size() > 1 && AsConstInt(op->args[1], &n) && n <= 16;
      } else if (IsIntrinsic(op, TL_INTRINSIC_NAME("stmatrix_x4"))) {
        // each lane's address is the start of one 8-element row of 16-bit values: 16 bytes,
        // aligned (fragment_tile_ops.cc checks), which the swizzle keeps together
        const auto* addr = op->args.empty() ? nullptr : As<Call>(op->args[0]);
        const auto* at = addr && HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
        helper = at && at->buffer->dtype.bytes() == 2;
      } else if (IsIntrinsic(op, TL_INTRINSIC_NAME("cast_copy")) && op->args.size() > 2 &&
                 AsConstInt(op->args[2], &n)) {
        helper = true;
        for (size_t k = 0; k < 2; ++k) {
          const auto* addr = As<Call>(op->args[k]);
          const auto* at = addr && HasEffect(addr, kAddress) ? As<BufferLoad>(addr->args[0]) : nullptr;
          helper = helper && at && n * at->buffer->dtype.bytes() <= 16;
        }
      }
      bool saved = in_copy_helper;
      in_copy_helper = helper;
      IRVisitor::Visit_(op);
      in_copy_helper = saved;
    }
  } f;
  f.Visit(body);
  std::unordered_set<const BufferNode*> out;
  for (const BufferNode* b : f.candidates) {
    if (!f.excluded.count(b) && !gemm_operands.count(b)) out.insert(b);
  }
  return out;
}

namespace {

/// Work done by the whole block together; see BarriersGoInside.
bool HasBlockLevelWork(const Stmt& s) {
  struct Finder : IRVisitor {
    bool found = false;
    void Visit_(const For* op) override {
      if (op->annotations.count(kPartitioned)) found = true;
      if (!found) IRVisitor::Visit_(op);
    }
    void Visit_(const Call* op) override {
      if (HasEffect(op, kBlockLevel)) {
        found = true;
      }
    }
  } f;
  f.Visit(s);
  return f.found;
}

/// Whether `s` reads a shared buffer it also writes: then threads may exchange data
/// inside it (a cross-warp reduction in a loop of register work, say, or a tile copied
/// by a vectorized copy and read by other threads), which needs barriers inside even
/// without block-level work. Synchronous writes through an intrinsic's first argument
/// (vec_copy, atomics) count as writes: a lowered copy is such a call. (cp.async writes
/// are ordered by their pipeline's own waits and barriers; the program's own, T.ptx_cp_async,
/// count as writes: they land at its T.ptx_wait_group, and other threads read them after it.)
bool ReadsWhatItWrites(const Stmt& s) {
  struct Finder : IRVisitor {
    std::unordered_set<const BufferNode*> reads, writes;
    void Visit_(const BufferLoad* op) override {
      if (op->buffer->scope == Scope::kShared) reads.insert(op->buffer.get());
      IRVisitor::Visit_(op);
    }
    void Visit_(const BufferStore* op) override {
      if (op->buffer->scope == Scope::kShared) writes.insert(op->buffer.get());
      IRVisitor::Visit_(op);
    }
    void Visit_(const Call* op) override {
      // Atomic updates need no barrier among themselves (each is one indivisible step), so
      // only the plain writes of lowered copies count, and the program's own cp.async.
      const bool plain_write =
          (HasEffect(op, kWritesArg0) && !HasEffect(op, kReadsArg0)) || HasEffect(op, kProgramGroupCopy);
      const auto* addr = plain_write && !op->args.empty() ? As<Call>(op->args[0]) : nullptr;
      const auto* dst = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
      if (!dst) return IRVisitor::Visit_(op);
      // the destination's address is not a read of it (an atomic's is)
      if (dst->buffer->scope == Scope::kShared) writes.insert(dst->buffer.get());
      for (const Expr& i : dst->indices) Visit(i);
      for (size_t k = 1; k < op->args.size(); ++k) Visit(op->args[k]);
    }
  } f;
  f.Visit(s);
  for (const BufferNode* b : f.writes) {
    if (f.reads.count(b)) return true;
  }
  return false;
}

/// Whether `e` reads a per-thread buffer (a T.alloc_var or local array).
bool ReadsThreadLocals(const Expr& e) {
  bool reads = false;
  ForEachExpr(e, [&](const Expr& x) {
    const auto* load = As<BufferLoad>(x);
    reads = reads || (load && (load->buffer->scope == Scope::kVar || load->buffer->scope == Scope::kLocal));
  });
  return reads;
}

}  // namespace

bool BarriersGoInside(const Stmt& s, const Var* tx) {
  // Control that reads a thread's own variables (T.alloc_var) may differ between threads
  // (`idx = s * 64 + tx // 2; if idx < 100:`): barriers go inside it only for block-level
  // work, which the program runs there on every thread alike; data exchanged through shared
  // memory alone does not make it uniform.
  auto needs = [&](const Expr& control) {
    return HasBlockLevelWork(s) || (!ReadsThreadLocals(control) && ReadsWhatItWrites(s));
  };
  if (const auto* loop = As<For>(s)) {
    return loop->for_kind != ForKind::kThreadBinding && !loop->annotations.count(kPartitioned) &&
           !UsesVar(loop->extent, tx) && needs(loop->extent);
  }
  if (const auto* w = As<While>(s)) return !UsesVar(w->cond, tx) && needs(w->cond);
  if (const auto* br = As<IfThenElse>(s)) return !UsesVar(br->cond, tx) && needs(br->cond);
  return false;
}

bool IsWarpSpecializedSplit(const Stmt& s) {
  const auto* br = As<IfThenElse>(s);
  const auto* call = br ? As<Call>(br->cond) : nullptr;
  return HasEffect(call, kRoleTest);
}

bool IsWaitAll(const Stmt& s) {
  const auto* ev = As<Evaluate>(s);
  const auto* call = ev ? As<Call>(ev->value) : nullptr;
  int64_t n = -1;
  return IsIntrinsic(call, TL_INTRINSIC_NAME("cp_async_wait")) && !call->args.empty() && AsConstInt(call->args[0], &n) &&
         n == 0;
}

}  // namespace tl::transform::cuda
