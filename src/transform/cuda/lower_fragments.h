// SPDX-License-Identifier: Apache-2.0
/// \file The rewriter of "cuda-lower-fragments", one class in three files:
/// lower_fragments.cc (where each fragment lives, element accesses, T.Parallel nests,
/// copies, fills, atomics, and the pass itself), fragment_gemm.cc (T.gemm: mma.sync,
/// wgmma, register A, element loops) and fragment_reduce.cc (T.reduce_*).
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "tl/ir/equal.h"
#include "tl/ir/functor.h"
#include "tl/layout/fragment.h"
#include "tl/transform/pass.h"
#include "../region_util.h"
#include "../thread_range.h"
#include "fragment_inference.h"

namespace tl::transform::fragments {

using namespace ir;  // NOLINT: an internal header of one pass, included by its own files only
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
  /// The register fragments made so far: the original fragment -> its registers and layout.
  const auto& RegisterFragments() const { return regs_; }
  /// A fragment held in registers: its per-thread array and its layout.
  struct RegFragment {
    Buffer regs;
    FragmentLayoutRef layout;
  };
  FragmentRewriter(const cuda::FragmentLayouts& inference, VarRef tx, PassContext& ctx)
      : layouts_(inference.layouts), gemm_plans_(inference.gemms), tx_(std::move(tx)), ctx_(ctx) {}
  /// The kernel being rewritten (where per-thread fragments are looked for).
  Stmt kernel_body;
  /// The block's thread count (to tell which threads a branch on the thread index selects).
  int64_t threads = 0;

 protected:
  Stmt Mutate_(const Allocate* op, const Stmt& self) override;
  Buffer MutateBuffer(const Buffer& b) override;
  Expr Mutate_(const BufferLoad* op, const Expr& self) override;
  Stmt Mutate_(const BufferStore* op, const Stmt& self) override;
  Stmt Mutate_(const For* op, const Stmt& self) override;
  /// Tries each statement; one that accesses a register fragment in a way no T.Parallel
  /// nest walks (`s[bn, bq * 16 + h]` over three loops, a read at a serial loop's index)
  /// goes through a shared twin of the fragment instead (RoundTrip), with a remark.
  Stmt Mutate_(const Seq* op, const Stmt& self) override;
  std::vector<Stmt> RoundTrip(const Stmt& s, const std::vector<std::pair<Buffer, std::string>>& bad);
  /// Records a fragment access the trial could not map (the first per fragment).
  void NoteUnmapped(const Buffer& frag, std::string access);
  /// T.print of a whole tile (serial loops around a once-per-block print) when the tile is
  /// a register fragment: every thread prints the elements it holds, with their indices.
  Stmt PrintRegisterTile(const For* op);
  Stmt Mutate_(const CopyOp* op, const Stmt& self) override;
  /// For each register l: the element (i, j) it holds goes to / comes from `tile` at the
  /// region's corner + (i, j), with edge guards.
  std::pair<Stmt, VarRef> RegTileLoop(const RegFragment& rf, const Region& tile, bool to_tile, const Span& span);
  /// RegTileLoop for layouts whose registers come in runs of vec() consecutive columns,
  /// with the tile's columns contiguous and aligned: one vector access per run, each run
  /// wholly inside or wholly outside the tile's buffer (VectorFits), so one guard each.
  Stmt StmatrixStores(const RegFragment& rf, const Region& tile, const std::vector<size_t>& dims, const Span& span);
  Stmt VectorRegTileLoop(const RegFragment& rf, const Region& tile, const std::vector<size_t>& dims, bool to_tile,
                         const Span& span);
  /// Whether register element (i, j) lies in frag_window_ (null when there is none), with
  /// (i, j) made relative to the window's corner.
  Expr InWindow(Expr* i, Expr* j) const;
  Stmt RegsToTile(const RegFragment& rf, const Region& tile, const Span& span);
  Stmt TileToRegs(const RegFragment& rf, const Region& tile, const Span& span);
  bool PanelsAvoidConflicts(const RegFragment& rf, const Buffer& tile);
  /// T.gemm with A in registers (the accumulator layout of M x K, warps along M only):
  /// gemm_rs packs A's registers into mma operands without touching shared memory.
  Stmt RegisterAGemm(const GemmOp* op, bool wgmma);
  Stmt RegisterTf32AGemm(const GemmOp* op, const RegFragment& a, const RegFragment& c, const Region& b,
                         std::vector<Stmt> out);
  /// T.gemm on Hopper: wgmma m64nNk16 from shared memory, one warpgroup per 64 rows of
  /// C. The operands' shared layout follows (cuda::WgmmaOperandOffset, in codegen).
  Stmt WgmmaGemm(const GemmOp* op);
  std::string ClipToLiveColumns(const GemmOp* op, const Expr& k, int64_t wg_n, int64_t reps, std::vector<Expr>* args);
  Stmt Mutate_(const FillOp* op, const Stmt& self) override;
  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override;
  Stmt Mutate_(const LetStmt* op, const Stmt& self) override;
  /// A tile op on register fragments (or a tensor-core GEMM) under a condition on the
  /// thread index is refused: a fragment is spread over all the block's threads, so the
  /// threads that take the branch hold only part of it.
  /// A copy or fill of fragments laid out over exactly the threads of the branch it runs in
  /// (layout::ThreadRangeLayout, "tl.range_register_tiles") is not refused.
  void RefuseUnderThreadBranch(const Stmt& op, const char* what, std::vector<const RegFragment*> frags = {});
  Stmt Mutate_(const GemmOp* op, const Stmt& self) override;
  /// T.wait_wgmma (kWgmmaWait): the wait, then the in-flight accumulators pinned.
  Stmt Mutate_(const Evaluate* op, const Stmt& self) override;
  void RequireAsyncWgmma(const GemmOp* op);
  Stmt Mutate_(const ReduceOp* op, const Stmt& self) override;
  Stmt Mutate_(const AtomicOp* op, const Stmt& self) override;
  /// Row reduction of a register tile: each thread folds the registers of each of its
  /// rows, the lanes that share a row combine with warp shuffles, and when several warps
  /// split a row their partials meet in a small shared workspace.
  Stmt FoldColumnWindow(const ReduceOp* op, const FragmentLayout& lay, const VarRef& lr, const VarRef& q,
                        const Stmt& fold);
  Stmt ReduceRows(const ReduceOp* op, const RegFragment& rf);
  Stmt ReduceIntoRows(const ReduceOp* op, const RegFragment& dst_rf);
  /// Whether the mma.sync GEMM on shared tiles a and b reads them in wgmma's panels.
  bool PanelOperands(const Region& a, const Region& b);
  /// A whole register vector (a 1-D fragment) reduced to one value: in-thread fold, warp
  /// shuffles, a shared workspace across warps; null when its layout does not allow it.
  Stmt ReduceVector(const ReduceOp* op, const RegFragment& rf);
  /// C[i, j] += sum_k A[i, k] * B[k, j] as a T.Parallel nest over C (spread over threads
  /// later), for GEMMs that cannot use the tensor-core path.
  Stmt SimtGemm(const GemmOp* op, const std::string& why);
  /// A GEMM operand held in registers, written to a shared tile of its shape (appended to
  /// `out`, with the tile's allocation) for readers in other threads; the tile's region.
  /// `reader` ends the remark (" for ldmatrix").
  Region StageOperand(const Buffer& operand, const RegFragment& rf, const std::string& reader, const Span& span,
                      std::vector<Stmt>* out);

 private:
  /// Indices into `tile` of register element (i, j): the region's corner plus i along its
  /// first tile dimension (and j along the second, when `dims` has two); `in_bounds` gets
  /// the edge guard over every dimension.
  /// `body`, a walk over the registers of per-row vector layout `lay`, with its writes to
  /// memory made by one holder of each row only.
  Stmt GuardReplicatedWrites(const Stmt& body, const FragmentLayout& lay);
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
    const auto* mma = dynamic_cast<const MmaAccumulatorLayout*>(rf.layout->Base());
    TL_ICHECK(mma) << "T.gemm register operand without an mma layout: " << rf.layout->ToString();
    return *mma;
  }
  /// 64-row blocks each warpgroup owns in a wgmma accumulator: more than one when its rows
  /// are interleaved (fewer warpgroups than blocks).
  static int64_t MBlocksPerWarpgroup(const RegFragment& rf) {
    const MmaAccumulatorLayout& l = Mma(rf);
    return l.warps().interleave_m ? l.m() / (16 * l.warps().warps_m) : 1;
  }

  static bool IndicesMatch(const std::vector<Expr>& idx, const std::vector<Expr>& expected) {
    if (idx.size() != expected.size()) return false;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (!StructuralEqual(idx[k], expected[k])) return false;
    }
    return true;
  }

  /// A register fragment's access in a T.Parallel nest that the nest can walk by the
  /// fragment's registers: each index a distinct loop variable plus an offset the nest does
  /// not change (`acc[i, j]`, `acc[i + s * 32, j]`, `acc[j, i]`), one per loop.
  /// A dimension may also be two loops fused (`s[bn, bq * 16 + h]` over T.Parallel(BN, BQ,
  /// 16): a T.reshape of the fragment): the outer variable times the inner loop's extent
  /// plus the inner variable, the two loops covering the dimension exactly.
  struct NestAnchor {
    std::vector<const Var*> vars;   ///< the loop variable of each fragment dimension (the outer, fused)
    std::vector<Expr> offsets;      ///< and what is added to it (null: nothing)
    std::vector<const Var*> inner;  ///< the inner variable of a fused dimension (null: none)
    std::vector<int64_t> inner_extent;
    std::vector<Expr> indices;      ///< the access's indices as written
  };
  static std::optional<NestAnchor> AnchorOf(const std::vector<Expr>& idx, const ParallelNest& nest);
  /// Whether the nest's iterations that the anchor's registers never reach (their fragment
  /// index outside the fragment) do nothing: none exist, or the body is `if cond:` whose
  /// cond provably fails on them (in the ranges of the enclosing loops).
  bool UnreachedIterationsIdle(const NestAnchor& a, const ParallelNest& nest, const Buffer& frag);

  Stmt FillPartOfRegs(const RegFragment& rf, const Region& region, const Expr& value, const Span& span);
  Stmt FillRegs(const RegFragment& rf, const Expr& value, const Span& span) {
    VarRef l = Var::Make("l");
    Stmt st = BufferStore::Make(rf.regs, {l}, Cast::Make(rf.regs->dtype, value), span);
    return For::Make(l, MakeInt(0), MakeInt(rf.layout->num_local()), ForKind::kUnrolled, st, {}, span);
  }

  const std::unordered_map<const BufferNode*, cuda::Assigned>& layouts_;
  const std::unordered_map<const GemmOp*, cuda::GemmPlan>& gemm_plans_;
  /// The plan layout inference chose for `op` (the default plan when it recorded none).
  const cuda::GemmPlan& PlanOf(const GemmOp* op) const {
    static const cuda::GemmPlan kDefault;
    auto it = gemm_plans_.find(op);
    return it == gemm_plans_.end() ? kDefault : it->second;
  }
  /// " (not wgmma: <why>)" when the plan says why it is not wgmma, else "".
  static std::string NotWgmmaNote(const cuda::GemmPlan& plan) {
    return plan.not_wgmma.empty() ? "" : " (not wgmma: " + plan.not_wgmma + ")";
  }
  VarRef tx_;
  /// Tiles some GEMM reads through a window off the panel atoms (found once, PanelOperands).
  std::optional<std::unordered_set<const BufferNode*>> off_atom_tiles_;
  PassContext& ctx_;
  int thread_branch_ = 0;                       ///< depth of branches on the thread index
  /// The fragment's region of the T.copy being lowered when it is not the whole fragment
  /// (`T.copy(acc[64:128, :], C[...])`): the register walks move only the elements inside
  /// it, each to the tile region's corner plus its offset from the window's corner.
  const Region* frag_window_ = nullptr;
  /// The threads running the statement being rewritten, inside branches on the thread index
  /// (nullopt at the top: the whole block).
  std::optional<RunningThreads> running_;
  std::unordered_set<const Var*> tx_aliases_;   ///< lets bound to the thread index itself
  std::unordered_set<const Var*> thread_vars_;  ///< lets whose value depends on the thread
  std::unordered_map<const BufferNode*, RegFragment> regs_;
  /// Accumulators of the kernel's T.wgmma_gemm calls (found at the first T.wait_wgmma).
  std::vector<const BufferNode*> async_accs_;
  bool async_accs_ready_ = false;
  std::unordered_map<const BufferNode*, Buffer> demoted_;
  /// Inside a T.Parallel nest over registers: each register fragment's expected indices
  /// (the nest's variables) and the register they map to.
  std::unordered_map<const BufferNode*, std::pair<std::vector<Expr>, Expr>> current_;
  /// In such a nest led by a tile holding whole columns (FragmentLayout::whole_columns):
  /// the fragments of that layout, read as F[s, j] (s free of the nest's variables) at the
  /// column of the nest's register: row s's register of that column.
  struct ColumnReads {
    Expr column;   ///< the anchor's column index (j)
    Expr in_row;   ///< the register's place in its row: l % regs_per_row
    int64_t per_row = 0;
    std::vector<const Var*> nest_vars;
  };
  std::unordered_map<const BufferNode*, ColumnReads> column_reads_;
  std::unordered_set<const Var*> column_row_vars_;  ///< variables in the row index of a column read
  std::optional<Expr> ColumnRead(const BufferLoad* op);
  /// In a nest led by a tile whose layout is another fragment's FoldedColumns(p): that
  /// fragment, read as G[i, j + p s] (i, j the anchor's indices, s free of the nest's
  /// variables), at the register holding that element in the thread (FoldedLocal).
  struct FoldedReads {
    Expr row, column;  ///< the anchor's indices (i, j)
    Expr local;        ///< the anchor's register
    int64_t p = 0;
    std::vector<const Var*> nest_vars;
  };
  std::unordered_map<const BufferNode*, FoldedReads> folded_reads_;
  std::optional<Expr> FoldedRead(const BufferLoad* op, const RegFragment& rf);
  /// While a statement list tries a statement: the register fragments it could not map,
  /// with the first such access (see Mutate_(Seq)); null: such an access is an error.
  std::vector<std::pair<Buffer, std::string>>* unmapped_ = nullptr;
  int in_parallel_ = 0;  ///< depth of T.Parallel nests being rewritten
  /// Serial loops around the statement being rewritten, with their ranges (min, extent).
  std::vector<std::pair<const Var*, std::pair<Expr, Expr>>> enclosing_loops_;
  Span span_;
};

}  // namespace tl::transform::fragments
