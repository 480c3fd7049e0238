// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference (see fragment_inference.h): the helpers the passes
/// share, and the driver that runs the inference visitor (fragment_inference_internal.h;
/// its GEMM and spreading rules are in fragment_inference_gemm.cc and
/// fragment_inference_spread.cc) to a fixed point.
#include "fragment_inference.h"

#include <string>

#include "fragment_inference_internal.h"
#include "register_tiles.h"
#include "shared_plan.h"
#include "thread_binding.h"
#include "tl/support/error.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

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

std::string MmaSyncUnfit(DType a, DType b, DType c, bool trans_a, bool trans_b, int64_t k, bool tf32, bool f16_acc) {
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
  const bool f16_into_f16 = a == DType::Float(16) && c == DType::Float(16);
  if (f16_into_f16 && !f16_acc) {
    return "a float16 accumulator for float16 operands (mma.sync's float16 accumulation is turned off: "
           "tl.mma_f16_accumulators=0)";
  }
  if (sixteen && c != DType::Float(32) && !f16_into_f16) {
    return "a " + c.str() + " accumulator for " + a.str() + " operands";
  }
  if (int8 && c != DType::Int(32)) return "a " + c.str() + " accumulator for " + a.str() + " operands";
  if (int8 && (trans_a || !trans_b)) {
    return std::string(a.str()) + " operands with " + (trans_a ? "A stored K x M" : "B stored K x N") +
           " (ldmatrix cannot transpose bytes; the 8-bit path needs A M x K and B N x K)";
  }
  const int64_t step = int8 ? 32 : 16;
  if (k >= 0 && k % step) return "K = " + std::to_string(k) + " is not a multiple of " + std::to_string(step);
  return "";
}

std::string MmaSyncUnfit(const GemmOp* op, bool f16_acc) {
  int64_t k = -1;
  const Region& a = op->a;
  AsConstInt(op->trans_a ? a.ranges[a.ranges.size() - 2].extent : a.ranges.back().extent, &k);
  return MmaSyncUnfit(a.buffer->dtype, op->b.buffer->dtype, op->c.buffer->dtype, op->trans_a, op->trans_b, k,
                      op->tf32, f16_acc);
}

namespace {

/// Propagates the layouts known so far to a fixed point; per-row vectors caught between
/// two layouts move to shared memory (and propagation restarts without them).
void Propagate(FragmentLayoutInference& inference, const ir::Stmt& body) {
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

FragmentLayouts InferOnce(const Stmt& body, int64_t threads, const target::CudaTarget& target, WgmmaOptions wgmma,
                          bool range_tiles, bool mma_columns,
                          std::unordered_map<const BufferNode*, layout::WarpPartition>* preferred,
                          std::unordered_map<const BufferNode*, SplitRequest>* requests) {
  FragmentLayoutInference inference(threads, target, wgmma);
  inference.mma_columns = mma_columns;
  struct Loads : IRVisitor {
    std::unordered_set<const BufferNode*>* out;
    void Visit_(const CopyOp* op) override {
      if (IsFragment(op->dst.buffer) && !IsFragment(op->src.buffer)) out->insert(op->dst.buffer.get());
    }
    void Visit_(const ReduceOp* op) override {
      if (IsFragment(op->dst.buffer) && op->dim == 0 && op->src.buffer->shape.size() == 2) {
        out->insert(op->dst.buffer.get());
      }
    }
  } loads;
  loads.out = &inference.loaded;
  loads.Visit(body);
  inference.SetThreadIndex(GetThreadBinding(body, "cuda-lower-fragments").tx.get());
  inference.NoteUseRanges(body);
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
  // A group read across its rows (F[s, j]) gets whole columns per thread.
  std::vector<RegisterTileGroup> groups = RegisterTileGroups(body, range_tiles);
  for (const auto& group : groups) {
    bool free = true;
    for (const Buffer& b : group.members) {
      free &= !inference.layouts.count(b.get()) && !inference.forced_shared.count(b.get());
    }
    if (!free) continue;
    const Buffer& first = group.members[0];
    int64_t m = 0, n = 0;
    AsConstInt(first->shape[0], &m);
    // (a group used only under a branch on a range of warps: over those threads)
    int64_t over = group.threads ? group.threads->hi - group.threads->lo : threads;
    layout::FragmentLayoutRef own;
    if (first->shape.size() == 1) {
      own = layout::VectorLayout::Choose(m, over);
    } else {
      AsConstInt(first->shape[1], &n);
      own = group.whole_columns ? layout::RowStripLayout::ChooseWholeColumns(m, n, over)
                                : layout::RowStripLayout::Choose(m, n, over);
    }
    if (!own) continue;
    if (group.threads) own = std::make_shared<layout::ThreadRangeLayout>(own, group.threads->lo);
    for (const Buffer& b : group.members) inference.Assign(b, own, "element-wise use (no T.gemm)", Span{});
  }
  // A tile read as F[s, j] under a vector's nest needs that vector in registers as its
  // columns (the nest walks the vector's registers); otherwise the tile stays in shared memory.
  for (const auto& group : groups) {
    if (group.column_leaders.empty() || !inference.layouts.count(group.members[0].get())) continue;
    const layout::FragmentLayoutRef& held = inference.layouts.at(group.members[0].get()).layout;
    layout::FragmentLayoutRef columns = held->whole_columns() ? held->Columns() : nullptr;
    bool led = columns != nullptr;
    for (const Buffer& v : group.column_leaders) {
      auto it = inference.layouts.find(v.get());
      led &= it != inference.layouts.end() && *it->second.layout == *columns;
    }
    if (led) continue;
    for (const Buffer& b : group.members) {
      inference.layouts.erase(b.get());
      inference.forced_shared.insert(b.get());
    }
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
    if (inference.gemm_plans[g].wgmma) continue;
    for (const Region* r : {&g->a, &g->b}) {
      std::vector<Expr> start;
      for (const Range& range : r->ranges) start.push_back(range.min);
      if (!StartsOnPanelAtom(r->buffer, start)) misread.insert(r->buffer.get());
    }
  }
  for (const GemmOp* g : collect.found) {
    bool shared_a = g->a.buffer->scope == Scope::kShared;
    GemmPlan& plan = inference.gemm_plans[g];
    if (plan.wgmma && ((shared_a && misread.count(g->a.buffer.get())) || misread.count(g->b.buffer.get()))) {
      plan.wgmma = false;
      plan.not_wgmma = "an operand is also read by a GEMM that does not use wgmma, through a window "
                       "that does not start on a multiple of 8 rows of the tile";
    }
  }
  inference.CheckRangeLayouts();
  FragmentLayouts out;
  out.layouts = std::move(inference.layouts);
  out.gemms = std::move(inference.gemm_plans);
  *requests = std::move(inference.split_requests);
  return out;
}

/// The 32-bit registers a thread holds for the register fragments (their bytes over 4: a bool
/// or 8-bit element is a quarter register), and whether any is a per-column vector.
int64_t RegisterWords(const FragmentLayouts& out, bool* has_columns) {
  int64_t bytes = 0;
  *has_columns = false;
  for (const auto& [buffer, assigned] : out.layouts) {
    bytes += assigned.layout->num_local() * std::max(1, buffer->dtype.bytes());
    *has_columns |= dynamic_cast<const layout::MmaColumnsLayout*>(assigned.layout.get()) != nullptr;
  }
  return (bytes + 3) / 4;
}

FragmentLayouts InferWithRetries(const Stmt& body, int64_t threads, const target::CudaTarget& target,
                                 WgmmaOptions wgmma, bool range_tiles, bool mma_columns) {
  // A T.Parallel over two GEMM accumulators of one shape needs them split over the warps
  // alike; when their GEMMs chose differently, inference runs again with the split the loop
  // asked for given to the GEMM (on mma.sync when it is not the wgmma split).
  std::unordered_map<const BufferNode*, layout::WarpPartition> preferred;
  std::unordered_map<const BufferNode*, SplitRequest> requests;
  for (int attempt = 0;; ++attempt) {
    FragmentLayouts out = InferOnce(body, threads, target, wgmma, range_tiles, mma_columns, &preferred, &requests);
    if (requests.empty()) return out;
    if (attempt == 3) TL_USER_ERROR(requests.begin()->second.span) << requests.begin()->second.why;
    for (auto& [b, req] : requests) preferred[b] = req.warps;
  }
}

}  // namespace

FragmentLayouts InferFragmentLayouts(const Stmt& body, int64_t threads, const target::CudaTarget& target, WgmmaOptions wgmma,
                                     bool range_tiles, bool mma_columns, bool force_columns) {
  FragmentLayouts out = InferWithRetries(body, threads, target, wgmma, range_tiles, mma_columns);
  bool has_columns = false;
  const int64_t words = RegisterWords(out, &has_columns);
  if (!has_columns || force_columns || words <= kColumnVectorRegisterBudget) return out;
  FragmentLayouts shared = InferWithRetries(body, threads, target, wgmma, range_tiles, /*mma_columns=*/false);
  shared.columns_note = "per-column vectors next to GEMM accumulators stay in shared memory: the register fragments "
                        "take " + std::to_string(words) + " registers a thread with them in registers (more than " +
                        std::to_string(kColumnVectorRegisterBudget) + "; tl.mma_column_vectors=True holds them there)";
  return shared;
}

}  // namespace tl::transform::cuda
