// SPDX-License-Identifier: Apache-2.0
/// \file Hopper's barriers programmed by hand (T.alloc_barrier, T.ws, T.tma_copy): the
/// markers the front end leaves in the IR (python/tilelang/language/barriers.py), shared by
/// the CPU emulation (cpu/emulate_mbarriers.cc) and the CUDA lowering
/// (cuda/explicit_warp_specialize.cc).
///
/// - `tl.barrier_init(mbars[0], c0, c1, ...)` follows the Allocate of a shared uint64 tile
///   of mbarriers: barrier i expects c_i arrivals per phase.
/// - `tl.ws(g0, ...)` is the first statement of the then-branch of `if` over the thread
///   range of warpgroups g0.. (`with T.ws(g):`): tile ops there are that warpgroup's.
/// - `tl.tma_copy(address_of(bar), scope)` precedes the CopyOp of `T.tma_copy(src, dst,
///   barrier=bar, leader_scope_threads=scope)`: one thread issues it (scope 0), or the first
///   thread of each group of `scope` threads issues it as that group sees it, the barrier's
///   phase expecting its bytes.
#pragma once

#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/ir/stmt.h"

namespace tl::transform {

inline constexpr const char* kBarrierInitAttr = "tl.barrier_init";
inline constexpr const char* kWsAttr = "tl.ws";
inline constexpr const char* kTmaCopyAttr = "tl.tma_copy";

/// Whether a kernel body programs its barriers: a barrier allocation, a T.ws block, a
/// T.tma_copy, or an mbarrier operation (its own schedule; cuda-explicit-warp-specialize).
inline bool ProgramsBarriers(const ir::Stmt& body) {
  bool found = false;
  struct Finder : ir::IRVisitor {
    bool* found;
    void Visit_(const ir::AttrStmt* op) override {
      *found |= op->key == kBarrierInitAttr || op->key == kWsAttr || op->key == kTmaCopyAttr;
    }
  } f;
  f.found = &found;
  f.Visit(body);
  ir::ForEachExpr(body, [&](const ir::Expr& e) { found |= ir::HasEffect(ir::As<ir::Call>(e), ir::kPerThread); });
  return found;
}

/// The `tl.ws` marker opening `body`, or null.
inline const ir::AttrStmt* WsMarker(const ir::Stmt& body) {
  const ir::Stmt* first = &body;
  while (const auto* seq = ir::As<ir::Seq>(*first)) {
    if (seq->stmts.empty()) return nullptr;
    first = &seq->stmts[0];
  }
  const auto* attr = ir::As<ir::AttrStmt>(*first);
  return attr && attr->key == kWsAttr ? attr : nullptr;
}

}  // namespace tl::transform
