// SPDX-License-Identifier: Apache-2.0
/// \file One declaration per pass. Each is registered under the name in its comment.
#pragma once

#include "tl/transform/pass.h"

namespace tl::transform {

/// "simplify": arithmetic simplification of every expression; drops guards and loops
/// that are provably redundant (see arith::Simplify). Safe anywhere in a pipeline.
ir::PrimFunc Simplify(const ir::PrimFunc& f, PassContext& ctx);

/// "lower-tile-ops-cpu": replaces T.copy / fill / reduce / atomic by whole-tile loops
/// with edge guards, and T.gemm by a call into the CPU tile-GEMM library. After it no
/// tile-op node is left. Precondition: regions were checked by the front end.
ir::PrimFunc LowerTileOpsCpu(const ir::PrimFunc& f, PassContext& ctx);

/// The CPU pipeline, in order (see pipeline_cpu.cc for why each pass is where it is).
ir::PrimFunc LowerForCpu(const ir::PrimFunc& f, PassContext& ctx);

}  // namespace tl::transform
