// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference (see fragment_inference.h).
#include "fragment_inference.h"

#include <optional>
#include <sstream>

#include "../region_util.h"

#include "copy_lowering.h"

#include "register_tiles.h"
#include "shared_plan.h"
#include "tl/support/error.h"
#include "wgmma_select.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file
using layout::FragmentLayout;
using layout::FragmentLayoutRef;
using layout::MmaAccumulatorLayout;

bool IsFragment(const Buffer& b) { return b && b->scope == Scope::kFragment; }

bool IsWhole2D(const Region& r, int64_t* m, int64_t* n) {
  if (r.ranges.size() != 2) return false;
  int64_t a, b, x, y;
  if (!AsConstInt(r.ranges[0].min, &a) || !AsConstInt(r.ranges[1].min, &b) || a || b) return false;
  if (!AsConstInt(r.ranges[0].extent, &x) || !AsConstInt(r.ranges[1].extent, &y)) return false;
  int64_t sx, sy;
  if (!AsConstInt(r.buffer->shape[0], &sx) || !AsConstInt(r.buffer->shape[1], &sy)) return false;
  *m = x;
  *n = y;
  return x == sx && y == sy;
}

ParallelNest CollectNest(const For* op) {
  ParallelNest nest;
  const For* cur = op;
  while (true) {
    nest.loops.push_back(cur);
    const auto* inner = As<For>(cur->body);
    if (!inner || inner->for_kind != ForKind::kParallel) break;
    cur = inner;
  }
  nest.body = nest.loops.back()->body;
  return nest;
}

void AccessCollector::Visit_(const BufferLoad* op) {
  if (IsFragment(op->buffer)) accesses.emplace_back(op->buffer, op->indices);
  IRVisitor::Visit_(op);
}

void AccessCollector::Visit_(const BufferStore* op) {
  if (IsFragment(op->buffer)) accesses.emplace_back(op->buffer, op->indices);
  IRVisitor::Visit_(op);
}

bool IndicesAreVars(const std::vector<Expr>& idx, const ParallelNest& nest) {
  if (idx.size() != nest.loops.size()) return false;
  for (size_t i = 0; i < idx.size(); ++i) {
    if (idx[i] != static_cast<Expr>(nest.loops[i]->var)) return false;
  }
  return true;
}

std::string MmaSyncUnfit(DType a, DType b, DType c, bool trans_a, bool trans_b, int64_t k, bool tf32) {
  if (tf32) {
    // float32 storage (MakeGemm checked A, B and C), rounded to tf32 for m16n8k8. ldmatrix
    // moves a float as two 16-bit halves, so it reads whole floats only along rows: the
    // layouts with K contiguous, as for int8.
    if (trans_a || !trans_b) {
      return std::string("tfloat32 operands with ") + (trans_a ? "A stored K x M" : "B stored K x N") +
             " (ldmatrix cannot transpose 32-bit elements; the tf32 path needs A M x K and B N x K)";
    }
    if (k >= 0 && k % 8) return "K = " + std::to_string(k) + " is not a multiple of 8";
    return "";
  }
  const bool sixteen = a == DType::Float(16) || a == DType::BFloat16();
  const bool int8 = a == DType::Int(8) || a == DType::UInt(8);
  if (a == DType::Float(32)) {
    return "no tensor cores for float32 operands (tiles declared T.tfloat32 take the tf32 ones)";
  }
  if (!sixteen && !int8) return "no tensor cores for " + a.str() + " operands";
  if (a != b) return "operands of different types (" + a.str() + " and " + b.str() + ")";
  if (sixteen && c != DType::Float(32)) return "a " + c.str() + " accumulator for " + a.str() + " operands";
  if (int8 && c != DType::Int(32)) return "a " + c.str() + " accumulator for " + a.str() + " operands";
  if (int8 && (trans_a || !trans_b)) {
    return std::string(a.str()) + " operands with " + (trans_a ? "A stored K x M" : "B stored K x N") +
           " (ldmatrix cannot transpose bytes; the 8-bit path needs A M x K and B N x K)";
  }
  const int64_t step = int8 ? 32 : 16;
  if (k >= 0 && k % step) return "K = " + std::to_string(k) + " is not a multiple of " + std::to_string(step);
  return "";
}

std::string MmaSyncUnfit(const GemmOp* op) {
  int64_t k = -1;
  const Region& a = op->a;
  AsConstInt(op->trans_a ? a.ranges[a.ranges.size() - 2].extent : a.ranges.back().extent, &k);
  return MmaSyncUnfit(a.buffer->dtype, op->b.buffer->dtype, op->c.buffer->dtype, op->trans_a, op->trans_b, k,
                      op->tf32);
}

namespace {

/// Layout inference over one kernel body.
/// A warp split a T.Parallel asks of a GEMM accumulator, with the conflict it resolves.
struct SplitRequest {
  layout::WarpPartition warps;
  std::string why;
  Span span;
};

class LayoutInference : public IRVisitor {
 public:
  LayoutInference(int64_t num_threads, std::string arch, WgmmaOptions wgmma)
      : num_threads_(num_threads), arch_(std::move(arch)), wgmma_(wgmma) {}

  std::unordered_map<const BufferNode*, Assigned> layouts;
  /// Warp splits asked of GEMM accumulators by an earlier attempt (see InferFragmentLayouts),
  /// and those this attempt asks for: a T.Parallel that ties two GEMM accumulators of one
  /// shape needs them split alike.
  std::unordered_map<const BufferNode*, layout::WarpPartition> preferred_split;
  std::unordered_map<const BufferNode*, SplitRequest> split_requests;
  /// Fragments that must stay in shared memory (operands of GEMMs, accumulators of GEMMs
  /// that cannot use the tensor-core layout).
  std::unordered_set<const BufferNode*> forced_shared;
  /// GEMMs lowered to per-element loops, with the reason.
  std::unordered_map<const GemmOp*, std::string> simt_gemms;
  /// GEMMs whose A operand stays in registers (gemm_rs).
  std::unordered_set<const GemmOp*> rs_gemms;
  /// GEMMs whose register-fragment A is written to a shared tile for mma.sync (StageA).
  std::unordered_set<const GemmOp*> staged_a_gemms;
  /// GEMMs on Hopper's wgmma, and those that could not use it on Hopper, with the reason.
  std::unordered_set<const GemmOp*> wgmma_gemms;
  std::unordered_map<const GemmOp*, std::string> no_wgmma;
  /// Per-row vectors whose uses need different layouts (moved to shared memory).
  std::unordered_set<const BufferNode*> conflicted;
  bool changed = false;

  void Assign(const Buffer& b, const FragmentLayoutRef& l, const std::string& origin,
              const Span& span) {
    if (forced_shared.count(b.get())) return;
    auto it = layouts.find(b.get());
    if (l->is_rows() && it != layouts.end() && !(*it->second.layout == *l)) {
      // A per-row vector used next to tiles of different layouts: it stays in shared
      // memory, where every thread can reach every row.
      conflicted.insert(b.get());
      return;
    }
    if (it == layouts.end()) {
      layouts[b.get()] = Assigned{l, origin, span};
      changed = true;
      return;
    }
    if (!(*it->second.layout == *l)) {
      const auto* have = dynamic_cast<const MmaAccumulatorLayout*>(it->second.layout.get());
      const auto* want = dynamic_cast<const MmaAccumulatorLayout*>(l.get());
      if (have && want && have->m() == want->m() && have->n() == want->n() &&
          it->second.origin.rfind("T.gemm", 0) == 0 && !preferred_split.count(b.get())) {
        std::ostringstream why;
        why << "layout conflict for fragment " << b->name << ": " << it->second.origin << " (line "
            << it->second.span.line << ") gives it " << have->ToString() << " but " << origin << " needs "
            << want->ToString();
        split_requests[b.get()] = SplitRequest{want->warps(), why.str(), span};
        return;
      }
      TL_USER_ERROR(span) << "layout conflict for fragment " << b->name << ": " << it->second.origin
                          << " (line " << it->second.span.line << ") gives it " << it->second.layout->ToString()
                          << " but " << origin << " needs " << l->ToString();
    }
  }

 protected:
  /// ldmatrix (the mma.sync path, and B of the register-A path) reads 8 consecutive 16-bit
  /// elements per row at 16-byte aligned addresses: a window whose row length or start
  /// column breaks that (a slice B_s[2:18, 2:18] of an 18 x 20 tile) faults on the GPU with a
  /// misaligned address, so such GEMMs take the element-wise path. wgmma's own operand
  /// checks are stricter (whole 2-D tiles), and other dtypes never use ldmatrix.
  static bool LdmatrixRowsAligned(const GemmOp* op, bool reg_a) {
    arith::Analyzer an;
    // 8-bit (32-bit) operands go through ldmatrix on the int8 (tf32) mma.sync path only.
    const bool narrow_mma = (op->a.buffer->dtype.bytes() == 1 || op->tf32) && MmaSyncUnfit(op).empty();
    for (const Region* r : {&op->a, &op->b}) {
      if (r == &op->a && reg_a) continue;
      int bytes = r->buffer->dtype.bytes();
      if (!(bytes == 2 || ((bytes == 1 || bytes == 4) && narrow_mma)) || r->buffer->scope != Scope::kShared) continue;
      if (!cuda::VectorFits(*r, 16 / bytes, an)) return false;
    }
    return true;
  }

  void Visit_(const GemmOp* op) override {
    int64_t m, n, ka = 0, kb = 0;
    std::string why;
    layout::WarpPartition warps;
    bool reg_a = IsFragment(op->a.buffer) && !IsFragment(op->b.buffer);
    if (!IsFragment(op->c.buffer) || !IsWhole2D(op->c, &m, &n)) {
      why = "the accumulator is not a whole 2-D fragment";
    } else if (num_threads_ % 32) {
      why = "the thread count is not a multiple of 32";
    } else if (IsFragment(op->b.buffer)) {
      why = "operand B is a fragment";
    } else if (!LdmatrixRowsAligned(op, reg_a)) {
      why = "a shared operand's rows do not start on 16-byte boundaries (ldmatrix reads 16-byte rows)";
    } else if (reg_a) {
      // A in registers: each warp must own whole rows of A and C (warps along M only),
      // and A must hold 16-bit values laid out as an mma accumulator of M x K.
      int64_t w = num_threads_ / 32;
      DType ta = op->a.buffer->dtype;
      bool sixteen = (ta == DType::Float(16) || ta == DType::BFloat16()) && ta == op->b.buffer->dtype &&
                     op->c.buffer->dtype == DType::Float(32);
      if (op->trans_a || !IsWhole2D(op->a, &ka, &kb) || ka != m || !sixteen || m % (16 * w) || n % 8 || kb % 16) {
        why = "operand A is a fragment that the tensor-core path cannot read from registers (it needs "
              "16-bit A of M x K, not transposed, and M a multiple of 16 x warps)";
        StageA(op, m, n, &warps, &why);
      } else {
        // On Hopper, fewer warpgroups than 64-row blocks: the rows wgmma's blocks interleave
        // (mma.sync's gemm_rs reads A and C alike, in either row order).
        layout::WarpPartition rs_split{w, 1};
        layout::WarpPartition wg;
        if (arch_.rfind("sm_90", 0) == 0 && WgmmaPartition(m, &wg) && wg.warps_n == 1 && wg.warps_m == w) {
          rs_split = wg;
        }
        auto a_layout = std::make_shared<MmaAccumulatorLayout>(m, kb, rs_split);
        auto it = layouts.find(op->a.buffer.get());
        if (it != layouts.end() && !(*it->second.layout == *a_layout)) {
          why = "operand A is held as " + it->second.layout->ToString() + " but the register path needs " +
                a_layout->ToString();
          StageA(op, m, n, &warps, &why);
        } else {
          warps = rs_split;
          Assign(op->a.buffer, a_layout, "T.gemm operand A", op->span);
          rs_gemms.insert(op);
          if (arch_.rfind("sm_90", 0) == 0) {
            std::string no = cuda::WgmmaUnfit(op, num_threads_, arch_, /*a_in_registers=*/true);
            if (no.empty()) {
              wgmma_gemms.insert(op);
            } else {
              no_wgmma[op] = no;
            }
          }
        }
      }
    } else if (auto held = HeldSplit(op->c.buffer, op)) {
      // The accumulator already has an mma layout (from another T.gemm into it, or one a
      // T.Parallel ties it to): this GEMM takes the same warp split, on mma.sync unless that
      // split is the wgmma one.
      warps = *held;
      layout::WarpPartition wg;
      bool wgmma_split = WgmmaPartition(m, &wg) && warps == wg;
      if (!wgmma_split && arch_.rfind("sm_90", 0) == 0) {
        wgmma_gemms.erase(op);
        no_wgmma[op] = "its accumulator is laid out as " + MmaAccumulatorLayout(m, n, warps).ToString() +
                       " by another use";
      } else if (wgmma_split) {
        UseWgmma(op);  // records the reason when it cannot
      }
    } else if (UseWgmma(op)) {
      // One warp per 16 rows: the mma.sync accumulator layout with warps M/16 x 1 is
      // exactly the wgmma m64nNk16 layout of each warpgroup; further warpgroups split N.
      WgmmaPartition(m, &warps);
    } else if (!layout::PartitionWarps(m, n, num_threads_ / 32, op->policy, &warps)) {
      why = "a " + std::to_string(m) + "x" + std::to_string(n) + " accumulator cannot be split over " +
            std::to_string(num_threads_ / 32) + " warps in 16x8 tiles";
    }
    if (!why.empty()) {
      rs_gemms.erase(op);
      simt_gemms[op] = why;
      if (IsFragment(op->c.buffer)) forced_shared.insert(op->c.buffer.get());
      if (IsFragment(op->b.buffer)) forced_shared.insert(op->b.buffer.get());
      return;
    }
    Assign(op->c.buffer, std::make_shared<MmaAccumulatorLayout>(m, n, warps), "T.gemm", op->span);
  }

  void Visit_(const For* op) override {
    if (op->for_kind != ForKind::kParallel) return IRVisitor::Visit_(op);
    ParallelNest nest = CollectNest(op);
    AccessCollector c;
    c.Visit(nest.body);
    FragmentLayoutRef anchor;
    Buffer anchor_buf;
    for (auto& [b, idx] : c.accesses) {
      auto it = layouts.find(b.get());
      if (it != layouts.end() && IndicesAreVars(idx, nest)) {
        anchor = it->second.layout;
        anchor_buf = b;
        break;
      }
    }
    if (anchor && !anchor->is_rows()) {
      for (auto& [b, idx] : c.accesses) {
        int64_t m, n;
        if (b->shape.size() == 2 && IsWhole2D(Region::Full(b), &m, &n) && m == anchor->m() && n == anchor->n() &&
            IndicesAreVars(idx, nest)) {
          Assign(b, anchor, "T.Parallel with " + anchor_buf->name, op->span);
        }
        // A per-row vector read or written next to the tile: it holds this tile's rows.
        if (IsFragment(b) && b->shape.size() == 1 && !IsRowVector(b, anchor->m())) conflicted.insert(b.get());
        if (IsRowVector(b, anchor->m()) && idx.size() == 1 && idx[0] == static_cast<Expr>(nest.loops[0]->var)) {
          Assign(b, anchor->Rows(), "T.Parallel with " + anchor_buf->name,
                 op->span);
        }
      }
    } else if (anchor) {
      for (auto& [b, idx] : c.accesses) {
        if (IsRowVector(b, anchor->m()) && IndicesAreVars(idx, nest)) {
          Assign(b, anchor, "T.Parallel with " + anchor_buf->name, op->span);
        }
      }
    } else {
      // No register tile leads this loop: its vectors must be reachable by any thread.
      for (auto& [b, idx] : c.accesses) {
        if (IsFragment(b) && b->shape.size() == 1) conflicted.insert(b.get());
      }
    }
    IRVisitor::Visit(nest.body);
  }

  void Visit_(const ReduceOp* op) override {
    auto it = layouts.find(op->src.buffer.get());
    if (it != layouts.end() && !it->second.layout->is_rows() && op->dim == 1 &&
        IsRowVector(op->dst.buffer, it->second.layout->m())) {
      Assign(op->dst.buffer, it->second.layout->Rows(),
             "T.reduce of " + op->src.buffer->name, op->span);
    }
    IRVisitor::Visit_(op);
  }

  /// The warp split `c` must take: one asked of it by an earlier attempt, or that of the mma
  /// accumulator layout it already holds from a use other than `op` itself; null when there
  /// is none, or when this GEMM's tiles do not fit it (16 x 8 tiles per warp).
  std::optional<layout::WarpPartition> HeldSplit(const Buffer& c, const GemmOp* op) {
    int64_t m = 0, n = 0;
    auto fits = [&](const layout::WarpPartition& w) {
      return IsWhole2D(op->c, &m, &n) && w.warps_m * w.warps_n * 32 == num_threads_ && m % (16 * w.warps_m) == 0 &&
             n % (8 * w.warps_n) == 0;
    };
    auto pref = preferred_split.find(c.get());
    if (pref != preferred_split.end() && fits(pref->second)) return pref->second;
    auto it = layouts.find(c.get());
    if (it == layouts.end() || it->second.span.line == op->span.line) return std::nullopt;
    const auto* mma = dynamic_cast<const MmaAccumulatorLayout*>(it->second.layout.get());
    if (mma && fits(mma->warps())) return mma->warps();
    return std::nullopt;
  }

  /// A register fragment the tensor cores cannot read as A in place is written to a shared
  /// tile (or stays in the shared memory it was kept in) and read from there by ldmatrix +
  /// mma.sync (instead of per-element loops): the types gemm_ss's tensor cores take
  /// (MmaSyncUnfit), whole A with 16-byte rows, C split over the warps as usual.
  /// Clears *why when it applies; otherwise adds why mma.sync does not apply either.
  void StageA(const GemmOp* op, int64_t m, int64_t n, layout::WarpPartition* warps, std::string* why) {
    int64_t ra = 0, ca = 0;
    std::string unfit = MmaSyncUnfit(op);
    if (!unfit.empty()) {
      *why += "; nor through shared memory: " + unfit;
      return;
    }
    if (!IsWhole2D(op->a, &ra, &ca) || (ca * op->a.buffer->dtype.bytes()) % 16) return;
    if (auto held = HeldSplit(op->c.buffer, op)) {
      *warps = *held;
    } else if (!layout::PartitionWarps(m, n, num_threads_ / 32, op->policy, warps)) {
      return;
    }
    staged_a_gemms.insert(op);
    wgmma_gemms.erase(op);
    if (arch_.rfind("sm_90", 0) == 0) no_wgmma[op] = "operand A is a register fragment, staged through shared memory";
    why->clear();
  }

  /// The accumulator split of a wgmma GEMM with M rows: warps M/16 x (warpgroups per
  /// 64-row block), in the m-fastest order (warpgroup g at rows 64 (g % (M/64)), columns
  /// part g / (M/64)); false when the block's warpgroups do not divide over the rows.
  /// Fewer warpgroups than 64-row blocks each own several blocks: warps 4 x warpgroups,
  /// with interleaved rows (block r of warpgroup g is rows 64 (r warpgroups + g)).
  bool WgmmaPartition(int64_t m, layout::WarpPartition* out) const {
    const int64_t wgs = num_threads_ / 128, blocks = m / 64;
    if (m <= 0 || m % 64 || num_threads_ % 128) return false;
    if (wgs % blocks == 0) {
      *out = layout::WarpPartition{m / 16, wgs / blocks, true}.Normalized();
    } else if (blocks % wgs == 0) {
      *out = layout::WarpPartition{4 * wgs, 1, false, true};
    } else {
      return false;
    }
    return true;
  }


  bool UseWgmma(const GemmOp* op) {
    if (arch_.rfind("sm_90", 0) != 0) return false;
    std::string why = cuda::WgmmaUnfit(op, num_threads_, arch_, false, nullptr, wgmma_);
    if (why.empty()) {
      wgmma_gemms.insert(op);
      return true;
    }
    no_wgmma[op] = why;
    return false;
  }

  static bool IsRowVector(const Buffer& b, int64_t m) {
    int64_t len = 0;
    return IsFragment(b) && b->shape.size() == 1 && AsConstInt(b->shape[0], &len) && len == m;
  }

  void Visit_(const CopyOp* op) override {
    if (IsFragment(op->src.buffer) && IsFragment(op->dst.buffer)) {
      // Only fills in a missing layout: a copy between two different layouts converts
      // (through shared memory, see FragmentRewriter).
      // Whole fragment to whole fragment of one shape only: one row of a 2-D fragment copied
      // into a per-row vector says nothing about the 2-D fragment's layout.
      auto s = layouts.find(op->src.buffer.get()), d = layouts.find(op->dst.buffer.get());
      bool whole = CoversWholeBuffer(op->src) && CoversWholeBuffer(op->dst) &&
                   op->src.buffer->shape.size() == op->dst.buffer->shape.size();
      if (!whole) {
        s = d = layouts.end();
      }
      if (s != layouts.end() && d == layouts.end()) {
        Assign(op->dst.buffer, s->second.layout, "T.copy from " + op->src.buffer->name, op->span);
      } else if (d != layouts.end() && s == layouts.end()) {
        Assign(op->src.buffer, d->second.layout, "T.copy to " + op->dst.buffer->name, op->span);
      }
    }
    IRVisitor::Visit_(op);
  }

 private:
  int64_t num_threads_;
  std::string arch_;
  WgmmaOptions wgmma_;  ///< the optional wgmma paths (pass configs)
};

/// Propagates the layouts known so far to a fixed point; per-row vectors caught between
/// two layouts move to shared memory (and propagation restarts without them).
void Propagate(LayoutInference& inference, const ir::Stmt& body) {
  // Propagation needs a few sweeps: a T.Parallel before the gemm in program order may
  // only learn its layout after the gemm has been seen.
  for (int round = 0; round < 4; ++round) {
    for (int sweep = 0; sweep < 8; ++sweep) {
      inference.changed = false;
      inference.Visit(body);
      if (!inference.changed) break;
    }
    if (inference.conflicted.empty()) break;
    for (const BufferNode* b : inference.conflicted) {
      inference.layouts.erase(b);
      inference.forced_shared.insert(b);
    }
    inference.conflicted.clear();
  }
}

}  // namespace

namespace {

FragmentLayouts InferOnce(const Stmt& body, int64_t threads, const std::string& arch, WgmmaOptions wgmma,
                          std::unordered_map<const BufferNode*, layout::WarpPartition>* preferred,
                          std::unordered_map<const BufferNode*, SplitRequest>* requests) {
  LayoutInference inference(threads, arch, wgmma);
  inference.preferred_split = *preferred;
  // First what the GEMMs fix. Conflicts wait: a per-row vector that no tile reaches yet
  // may still meet one of the tiles seeded below.
  for (int sweep = 0; sweep < 8; ++sweep) {
    inference.changed = false;
    inference.Visit(body);
    if (!inference.changed) break;
  }
  inference.conflicted.clear();
  // Tiles that no T.gemm reached get a layout of their own when all their uses allow
  // registers (element-wise work, row reductions, copies): a strip layout whose rows
  // split into vector-wide chunks, so copies are coalesced vector accesses.
  for (const auto& group : RegisterTileGroups(body)) {
    bool free = true;
    for (const Buffer& b : group) free &= !inference.layouts.count(b.get()) && !inference.forced_shared.count(b.get());
    if (!free) continue;
    int64_t m = 0, n = 0;
    AsConstInt(group[0]->shape[0], &m);
    AsConstInt(group[0]->shape[1], &n);
    auto strip = layout::RowStripLayout::Choose(m, n, threads);
    if (!strip) continue;
    for (const Buffer& b : group) inference.Assign(b, strip, "element-wise use (no T.gemm)", Span{});
  }
  Propagate(inference, body);
  // A shared tile read by a wgmma GEMM is laid out in wgmma panels; another GEMM (mma.sync
  // through ldmatrix, or element-wise) reads the same panels (tl::kWgmmaPanels) when its
  // window starts on a panel atom (8 rows, first column). Otherwise the tile would need two
  // layouts: those wgmma GEMMs use mma.sync instead (with the same accumulator layout).
  // One pass suffices: a wgmma GEMM reads whole tiles (WgmmaUnfit), so one moved to
  // mma.sync reads from row 0 and misaligns no tile itself.
  struct Gemms : IRVisitor {
    std::vector<const GemmOp*> found;
    void Visit_(const GemmOp* op) override { found.push_back(op); }
  } collect;
  collect.Visit(body);
  std::unordered_set<const BufferNode*> misread;  // read by a non-wgmma GEMM off a panel atom
  for (const GemmOp* g : collect.found) {
    if (inference.wgmma_gemms.count(g)) continue;
    for (const Region* r : {&g->a, &g->b}) {
      std::vector<Expr> start;
      for (const Range& range : r->ranges) start.push_back(range.min);
      if (!StartsOnPanelAtom(r->buffer, start)) misread.insert(r->buffer.get());
    }
  }
  for (const GemmOp* g : collect.found) {
    bool shared_a = g->a.buffer->scope == Scope::kShared;
    if (inference.wgmma_gemms.count(g) &&
        ((shared_a && misread.count(g->a.buffer.get())) || misread.count(g->b.buffer.get()))) {
      inference.wgmma_gemms.erase(g);
      inference.no_wgmma[g] = "an operand is also read by a GEMM that does not use wgmma, through a window "
                              "that does not start on a multiple of 8 rows of the tile";
    }
  }
  FragmentLayouts out;
  out.layouts = std::move(inference.layouts);
  out.simt_gemms = std::move(inference.simt_gemms);
  out.rs_gemms = std::move(inference.rs_gemms);
  out.staged_a_gemms = std::move(inference.staged_a_gemms);
  out.wgmma_gemms = std::move(inference.wgmma_gemms);
  out.no_wgmma = std::move(inference.no_wgmma);
  *requests = std::move(inference.split_requests);
  return out;
}

}  // namespace

FragmentLayouts InferFragmentLayouts(const Stmt& body, int64_t threads, const std::string& arch, WgmmaOptions wgmma) {
  // A T.Parallel over two GEMM accumulators of one shape needs them split over the warps
  // alike; when their GEMMs chose differently, inference runs again with the split the loop
  // asked for given to the GEMM (on mma.sync when it is not the wgmma split).
  std::unordered_map<const BufferNode*, layout::WarpPartition> preferred;
  std::unordered_map<const BufferNode*, SplitRequest> requests;
  for (int attempt = 0;; ++attempt) {
    FragmentLayouts out = InferOnce(body, threads, arch, wgmma, &preferred, &requests);
    if (requests.empty()) return out;
    if (attempt == 3) TL_USER_ERROR(requests.begin()->second.span) << requests.begin()->second.why;
    for (auto& [b, req] : requests) preferred[b] = req.warps;
  }
}

}  // namespace tl::transform::cuda
