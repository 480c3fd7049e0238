// SPDX-License-Identifier: Apache-2.0
/// \file Facts the CUDA code generator reads off the lowered IR: the kernel launch, the
/// producer threads warp specialization added, the block rasterization panel, and how far a
/// loop unrolls (launch_facts.h).
#include "launch_facts.h"

#include <algorithm>
#include <functional>

#include "../../transform/cuda/shared_plan.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// The constant of the first launch-level marker `key` (in the kernel's top-level
/// sequences, through the thread binding), or `otherwise`.
int64_t LaunchMarker(const Stmt& body, const char* key, int64_t otherwise) {
  int64_t value = otherwise;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const auto* attr = As<AttrStmt>(s)) {
      if (attr->key == key) AsConstInt(attr->values[0], &value);
    }
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) find(c);
    }
    if (const auto* f = As<For>(s)) {
      if (f->for_kind == ForKind::kThreadBinding) find(f->body);
    }
    if (const auto* k = As<KernelLaunch>(s)) find(k->body);
  };
  find(body);
  return value;
}

}  // namespace

int64_t ProducerThreads(const Stmt& body) { return LaunchMarker(body, transform::cuda::kWarpSpecializedAttr, 0); }

int64_t MinBlocksPerSm(const Stmt& body) { return LaunchMarker(body, transform::cuda::kMinBlocksPerSmAttr, 1); }

bool LoopTermsApart(const Stmt& body) { return LaunchMarker(body, transform::cuda::kLoopTermsApartAttr, 0) != 0; }

/// The (first) kernel launch of a function body.
const KernelLaunch* FindLaunch(const Stmt& s) {
  if (const auto* k = As<KernelLaunch>(s)) return k;
  if (const auto* seq = As<Seq>(s)) {
    for (const Stmt& c : seq->stmts) {
      if (const auto* k = FindLaunch(c)) return k;
    }
  }
  return nullptr;
}

/// Panel width for block rasterization: T.use_swizzle's (or tl.raster_panel's), else 8 for 2-D grids of GEMM
/// kernels that are wide enough to profit (neighbouring blocks then share operand tiles in
/// L2); 0 for none. A kernel without a GEMM reads disjoint data per block: the panel order
/// gains nothing there and its index arithmetic (four divisions) delays every block's first
/// load, which shows in short element-wise kernels.
int64_t RasterPanel(const KernelLaunch* op) {
  int64_t panel = -1;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const auto* attr = As<AttrStmt>(s)) {
      if (attr->key == "threadblock_swizzle" && !attr->values.empty()) AsConstInt(attr->values[0], &panel);
    }
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) find(c);
    }
    if (const auto* f = As<For>(s)) {
      if (f->for_kind == ForKind::kThreadBinding) find(f->body);
    }
  };
  find(op->body);
  if (op->grid.size() < 2) return 0;
  if (panel >= 0) return panel;  // T.use_swizzle(n), or tl.raster_panel (0: the plain order)
  bool gemm = false;
  ForEachExpr(op->body, [&](const Expr& e) { gemm |= HasEffect(As<Call>(e), kGemm); });
  if (!gemm) return 0;
  int64_t gx = 0;
  return AsConstInt(op->grid[0], &gx) && gx <= 8 ? 0 : 8;
}

/// Full unrolling, except for long loops (over 256 iterations, or 2048 counting the
/// loops inside and random draws) that index no register array by their variable: a tile spread over very few
/// threads, where 512 iterations of a 32-step dot product took NVRTC 90 s to compile. Register arrays need constant indices, so
/// loops over them always unroll fully.
std::string UnrollPragma(const For* op) {
  // T.unroll(..., unroll_factor=n): as asked
  auto factor = op->annotations.find("tl.unroll_factor");
  int64_t n = 0;
  if (factor != op->annotations.end() && AsConstInt(factor->second, &n) && n > 0) {
    return "#pragma unroll " + std::to_string(n);
  }
  // Iterations times the trip counts of the loops nested inside (which the compiler
  // unrolls too when they are short).
  constexpr int64_t kFullUnrollTrips = 256, kFullUnrollWork = 2048;
  // A random-number draw is a whole Philox round (and a normal draw logs and sines): it
  // counts as that many plain statements. 5 x 128 unrolled draws per thread (upstream's
  // T.rng test, one thread per block) took NVRTC over a minute.
  constexpr int64_t kRandomDrawWork = 32;
  int64_t draws = 0;
  ForEachExpr(op->body, [&](const Expr& e) {
    const auto* call = As<Call>(e);
    draws += call && call->op.rfind("rng_", 0) == 0 && call->op != "rng_init";
  });
  int64_t extent = 0;
  if (!AsConstInt(op->extent, &extent) ||
      (extent <= kFullUnrollTrips &&
       extent * InnerTrips(op->body) * (1 + kRandomDrawWork * draws) <= kFullUnrollWork)) {
    return "#pragma unroll";
  }
  bool indexes_registers = false;
  const Var* var = op->var.get();
  ForEachExpr(op->body, [&](const Expr& e) {
    const auto* load = As<BufferLoad>(e);
    if (!load || load->buffer->scope != Scope::kLocal) return;
    for (const Expr& i : load->indices) indexes_registers |= UsesVar(i, [&](const Var* v) { return v == var; });
  });
  struct Stores : IRVisitor {
    const Var* var;
    bool* found;
    void Visit_(const BufferStore* st) override {
      if (st->buffer->scope == Scope::kLocal) {
        for (const Expr& i : st->indices) *found |= UsesVar(i, [&](const Var* v) { return v == var; });
      }
      IRVisitor::Visit_(st);
    }
  } stores;
  stores.var = var;
  stores.found = &indexes_registers;
  stores.Visit(op->body);
  return indexes_registers ? "#pragma unroll" : "#pragma unroll 4";
}

/// The largest product of constant trip counts along a chain of loops nested in `s`.
int64_t InnerTrips(const Stmt& s) {
  struct Walker : IRVisitor {
    int64_t best = 1, current = 1;
    void Visit_(const For* f) override {
      int64_t e = 1;
      if (!AsConstInt(f->extent, &e)) e = 1;
      int64_t saved = current;
      current *= std::max<int64_t>(e, 1);
      best = std::max(best, current);
      IRVisitor::Visit_(f);
      current = saved;
    }
  } w;
  w.Visit(s);
  return w.best;
}

}  // namespace tl::codegen::cuda
