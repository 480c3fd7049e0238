// SPDX-License-Identifier: Apache-2.0
/// \file Facts the CUDA code generator reads off the lowered IR: the kernel launch, the
/// producer threads warp specialization added, the block rasterization panel, and how far a
/// loop unrolls (launch_facts.h).
#include "launch_facts.h"

#include <algorithm>
#include <functional>

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/target/cuda_attrs.h"

namespace tl::codegen::cuda {

using namespace ir;  // NOLINT: implementation file

int64_t ProducerThreads(const Stmt& body) { return target::LaunchMarker(body, target::kWarpSpecializedAttr, 0); }

int64_t MinBlocksPerSm(const Stmt& body) { return target::LaunchMarker(body, target::kMinBlocksPerSmAttr, 1); }

int64_t TmaCacheHint(const Stmt& body) { return target::LaunchMarker(body, target::kTmaCacheHintAttr, 0); }
bool LoopTermsApart(const Stmt& body) { return target::LaunchMarker(body, target::kLoopTermsApartAttr, 0) != 0; }

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

/// Panel width for block rasterization, as cuda-launch-bounds decided it; 0 for none.
int64_t RasterPanel(const KernelLaunch* op) {
  return op->grid.size() < 2 ? 0 : target::LaunchMarker(op->body, target::kRasterPanelAttr, 0);
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
    draws += HasEffect(call, kRandomDraw);
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
