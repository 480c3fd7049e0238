// SPDX-License-Identifier: Apache-2.0
/// \file The CPU pipeline. The CPU target does not emulate threads: a block runs its tile
/// ops as whole-tile loops, so the pipeline is short.
#include "tl/transform/passes.h"

namespace tl::transform {

ir::PrimFunc LowerForCpu(const ir::PrimFunc& f, PassContext& ctx) {
  // Thread-level code has no meaning here: a clear error at the user's line.
  ir::PrimFunc out = RunPass("cpu-reject-thread-level", f, ctx);
  out = RunPass("report-layout-annotations", out, ctx);
  // Simplify first so that tile-op regions are in canonical form before lowering.
  out = RunPass("simplify", out, ctx);
  // The user's own element accesses to global tensors: safe at the edges, as tile ops are.
  out = RunPass("guard-global-access", out, ctx);
  // Tile ops become loops with edge guards; the guards are written naively ...
  out = RunPass("lower-tile-ops-cpu", out, ctx);
  // ... because this simplify proves most of them true (interior tiles) and drops them.
  out = RunPass("simplify", out, ctx);
  // Last, on the final index expressions: 64-bit offsets where a tensor may pass 2^31.
  out = RunPass("legalize-index-width", out, ctx);
  return out;
}

}  // namespace tl::transform
