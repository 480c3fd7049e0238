// SPDX-License-Identifier: Apache-2.0
/// \file What the CUDA passes write into the IR for the code generator: launch markers and
/// the shared-memory plan, with each tile's place in the arena and its layout. The passes
/// decide; codegen prints what is written here and re-derives none of it (it includes no
/// transform header).
///
/// Each is an AttrStmt, readable in IR dumps and ignored by passes that do not look for it:
///   T.attr("tl.shared_offset", offset, layout)  immediately before a shared tile's Allocate,
///                                               in the same Seq (cuda-plan-shared-memory)
///   T.attr("tl.warp_specialized", producer_threads, producer_regs, consumer_regs)
///                                               (cuda-warp-specialize, explicit too)
///   T.attr("tl.min_blocks_per_sm", n), T.attr("tl.loop_terms_apart", 1),
///   T.attr("tl.raster_panel", columns),
///   T.attr("tl.tma_cache_hint", policy)         launch markers (cuda-launch-bounds)
///   T.attr("tl.cluster_dims", x, y, z)          launch marker (T.ClusterKernel, cuda-warp-specialize)
///   T.attr("tl.fragment_layout:acc = <layout>") immediately before a register fragment's
///                                               Allocate, in the same Seq (cuda-lower-fragments):
///                                               how its elements sit in the threads' registers,
///                                               for the reader (codegen prints it as a comment)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "tl/ir/stmt.h"

namespace tl::target {

inline constexpr const char* kSharedOffsetAttr = "tl.shared_offset";
/// In a kernel body that cuda-warp-specialize split into a producer warpgroup (launched
/// above the thread binding's range) and consumers: `if ws_is_producer(n): ... else: ...`.
inline constexpr const char* kWarpSpecializedAttr = "tl.warp_specialized";
/// The minimum blocks per SM of __launch_bounds__ (from T.annotate_min_blocks_per_sm).
inline constexpr const char* kMinBlocksPerSmAttr = "tl.min_blocks_per_sm";
/// Addresses inside loops are printed as the loops' first address plus the loop terms
/// (tl.loop_terms_apart; arith/sum_terms.h).
inline constexpr const char* kLoopTermsApartAttr = "tl.loop_terms_apart";
/// Blocks launch in panels of this many columns (T.use_swizzle, or the GEMM default); 0 or
/// absent: the plain order.
inline constexpr const char* kRasterPanelAttr = "tl.raster_panel";
/// The L2 cache policy of the kernel's TMA loads (tl.tma_cache_hint): 0 or absent none,
/// 1 evict-normal, 2 evict-first, 3 evict-last (templates' tl::L2Hint).
inline constexpr const char* kTmaCacheHintAttr = "tl.tma_cache_hint";
/// The kernel is launched in thread-block clusters of (x, y, z) blocks (`__cluster_dims__`):
/// T.ClusterKernel's cluster_dims, or cuda-warp-specialize's multicast. Absent: no clusters.
inline constexpr const char* kClusterDimsAttr = "tl.cluster_dims";

/// The key prefix of a fragment's layout note: the rest is "<buffer> = <layout>" (a key, as
/// the front end's "tl.remark:" notes: the IR has no string values).
inline constexpr const char* kFragmentLayoutPrefix = "tl.fragment_layout:";

/// The note that register fragment `buffer` is held in `layout`.
ir::Stmt FragmentLayoutAttr(const std::string& buffer, const std::string& layout, const Span& span);

/// Whether `attr` is such a note; then its buffer's name and layout.
bool ReadFragmentLayoutAttr(const ir::AttrStmt& attr, std::string* buffer, std::string* layout);

/// How a shared tile's elements sit in its bytes (layout/shared.h has the offsets).
enum class SharedLayout : int64_t {
  kPlain = 0,
  kXorRows = 1,         ///< 16-byte chunks XOR the row: a GEMM operand, conflict-free ldmatrix
  kStagingXorRows = 2,  ///< the same, for a tile no GEMM reads (an epilogue's staging tile)
  kWgmmaPanels = 3,     ///< wgmma's 128-byte panels, rows XOR-swizzled within each
};

inline bool IsSwizzled(SharedLayout l) { return l != SharedLayout::kPlain; }

/// Bytes [lo, hi) of the arena and the layout of one planned tile.
struct PlannedTile {
  int64_t lo = 0, hi = 0;
  SharedLayout layout = SharedLayout::kPlain;
  bool Overlaps(const PlannedTile& o) const { return lo < o.hi && o.lo < hi; }
};
using SharedPlan = std::unordered_map<const ir::BufferNode*, PlannedTile>;

/// The `tl.shared_offset` attribute placing `tile` at `offset` in `layout`.
ir::Stmt SharedOffsetAttr(int64_t offset, SharedLayout layout, const Span& span);

/// Every planned tile of `body` (a tile without the attribute is not in the plan).
SharedPlan ReadSharedPlan(const ir::Stmt& body);

/// `body` without the tl.shared_offset attributes (codegen reads the plan first).
ir::Stmt DropSharedPlan(const ir::Stmt& body);

/// The constant of the first launch-level marker `key` (in the kernel's top-level
/// sequences, through the thread binding), or `otherwise`.
int64_t LaunchMarker(const ir::Stmt& body, const char* key, int64_t otherwise);
/// The launch marker `key` of a kernel body (its top level or the thread binding's), or null.
const ir::AttrStmt* FindLaunchMarker(const ir::Stmt& body, const char* key);
/// The cluster dimensions of a kernel body's kClusterDimsAttr marker; (1, 1, 1) without one.
std::array<int64_t, 3> ClusterDims(const ir::Stmt& body);

}  // namespace tl::target
