// SPDX-License-Identifier: Apache-2.0
/// \file Facts the CUDA code generator reads off the lowered IR (launch_facts.cc).
#pragma once

#include <cstdint>
#include <string>

#include "tl/ir/stmt.h"

namespace tl::codegen::cuda {

/// The producer threads a warp-specialized kernel adds to the launch, 0 for none.
int64_t ProducerThreads(const ir::Stmt& body);
/// The minimum blocks per SM of __launch_bounds__: T.annotate_min_blocks_per_sm's, else 1.
int64_t MinBlocksPerSm(const ir::Stmt& body);
/// Whether the launch asks for loop terms apart in addresses (tl.loop_terms_apart).
bool LoopTermsApart(const ir::Stmt& body);
/// The L2 policy of the launch's TMA loads (tl.tma_cache_hint's marker): 0 none, 1
/// evict-normal, 2 evict-first, 3 evict-last.
int64_t TmaCacheHint(const ir::Stmt& body);
/// The (first) kernel launch of a function body, or null.
const ir::KernelLaunch* FindLaunch(const ir::Stmt& s);
/// Panel width for block rasterization (the tl.raster_panel marker of cuda-launch-bounds);
/// 0 for none.
int64_t RasterPanel(const ir::KernelLaunch* op);
/// The unroll pragma of a serial loop (T.unroll's unroll_factor; else full, or by 4 for long loops
/// over no register array).
std::string UnrollPragma(const ir::For* op);
/// The largest product of constant trip counts along a chain of loops nested in `s`.
int64_t InnerTrips(const ir::Stmt& s);

}  // namespace tl::codegen::cuda
