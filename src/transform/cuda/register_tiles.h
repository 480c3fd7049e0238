// SPDX-License-Identifier: Apache-2.0
/// \file Which fragments no T.gemm constrains can still live in registers.
#pragma once

#include <optional>
#include <vector>

#include "../thread_range.h"
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
///
/// A 2-D tile may also be read as F[s, j] in a nest over (i, j) of its shape, s free of the
/// nest's variables (a serial loop inside the nest walking the tile's rows: upstream's mHC
/// post reads b_local[i_hci, i1_h] for every i_hci): its group then needs a layout in which
/// every thread holds whole columns (`whole_columns`).
struct RegisterTileGroup {
  std::vector<ir::Buffer> members;
  bool whole_columns = false;
  /// Set when every use runs under a branch on one range of whole warps (with
  /// `range_tiles`): the members are laid out over those threads only.
  std::optional<ThreadRange> threads;
  /// Vectors leading one-loop nests that read members as F[s, j]: the members are register
  /// tiles only if these vectors are, laid out as the members' columns.
  std::vector<ir::Buffer> column_leaders;
};
///
/// Fragments used under a branch that only part of the block's threads take stay out
/// (a layout over all threads would leave elements uncomputed), unless `range_tiles`
/// ("tl.range_register_tiles", on by default) and the branch is a range of whole warps (`threads`).
std::vector<RegisterTileGroup> RegisterTileGroups(const ir::Stmt& body, bool range_tiles = false);

}  // namespace tl::transform::cuda
