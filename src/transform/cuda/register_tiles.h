// SPDX-License-Identifier: Apache-2.0
/// \file Which fragments no T.gemm constrains can still live in registers.
#pragma once

#include <vector>

#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// Groups of fragments (2-D tiles, or 1-D vectors that are used element-wise on their own)
/// that can be held in registers under one layout of their own.
/// A fragment qualifies when every use is one the register rewrite supports: whole-tile
/// T.copy, T.fill of the tile or of a part of it, a row reduction (T.reduce_*, dim=1) or an
/// atomic with it as the source, and element access F[i, j] in a T.Parallel nest over
/// exactly its shape (a vector: a one-loop nest of only such vectors; whole copies with a
/// run of memory or another vector; fills). The
/// fragments a nest or a copy ties together must share a layout, so they form a group,
/// and one member that does not qualify keeps the whole group out (in shared memory,
/// where every use works).
std::vector<std::vector<ir::Buffer>> RegisterTileGroups(const ir::Stmt& body);

}  // namespace tl::transform::cuda
