// SPDX-License-Identifier: Apache-2.0
/// \file One T.copy between a global tensor and a whole shared tile as TMA box loads or
/// stores (sm_90); a store may also take a run of whole rows of its tile.
///
/// The tensor map covers the whole global tensor (innermost dimension first, as the
/// driver takes it); the box is the copied region, except that a tile in wgmma's panel
/// layout (64 16-bit elements per 128-byte row, 128-byte swizzle: see
/// WgmmaOperandOffset) is loaded one panel at a time, each with SWIZZLE_128B, which writes
/// exactly that layout. Other tiles are plain row-major and use no swizzle. Boxes that
/// reach past the tensor's edge are filled with zeros by the hardware (and their bytes
/// still count towards the mbarrier's transaction).
///
/// In the IR a load is `tma_load(desc, smem, bar, c0, c1, ...)` (coordinates innermost
/// first) with `desc = tma_descriptor(address_of(G[0, ...]), swizzle, box0, box1, ...)`;
/// codegen turns each distinct descriptor into a `__grid_constant__` kernel parameter
/// and a host-side tensor-map spec.
#pragma once

#include <string>
#include <unordered_set>
#include <vector>

#include "pass_helpers.h"
#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// TMA swizzle modes, numbered as CUtensorMapSwizzle.
enum class TmaSwizzle : int { kNone = 0, kB32 = 1, kB64 = 2, kB128 = 3 };

/// Why `copy` cannot be TMA box loads into its destination tile, or "" when it can.
/// `panelled`: the destination is a wgmma operand in panel layout.
/// `promise` (DynamicAlignment): dynamic sizes promised to be multiples of some number of
/// elements; a dynamic innermost dimension it covers gives rows of whole 16-byte units.
/// `row_range`: a run of whole rows of the tile will do (T.tma_copy, whose program orders
/// its own barriers; the pipelines that load by TMA count on whole tiles).
std::string TmaLoadUnfit(const ir::CopyOp* copy, bool panelled, const std::vector<ir::Param>& params,
                         const AlignmentPromise& promise = {}, bool row_range = false);

/// The loads of `copy` (whose destination region may select a stage of a staged tile)
/// completing on the mbarrier at `bar` (an address_of expression); adds their bytes to
/// `*bytes`. Only for copies TmaLoadUnfit accepts.
ir::Stmt LowerTmaLoad(const ir::CopyOp* copy, bool panelled, const ir::Expr& bar, int64_t* bytes);

/// Why the tile of `copy` (which TmaLoadUnfit accepts) cannot be loaded in `blocks` slices of
/// rows, one per block of a cluster, each multicast to all of them; "" when it can: the copy
/// fills its whole tile, its rows run along one dimension of the tensor, and each slice
/// starts where a box may (on a 1024-byte swizzle atom of each panel, or 128-byte aligned).
std::string TmaMulticastUnfit(const ir::CopyOp* copy, bool panelled, int64_t blocks);

/// The loads of slice `rank` (an expression: the block's rank in its cluster) of `blocks`
/// slices of `copy`'s rows, each box multicast to every block of the cluster and completing
/// on the mbarrier at `bar` in each; adds the bytes of the whole tile to `*bytes` (every
/// block receives every slice). Only for copies TmaMulticastUnfit accepts.
ir::Stmt LowerTmaLoadMulticast(const ir::CopyOp* copy, bool panelled, const ir::Expr& bar, const ir::Expr& rank,
                               int64_t blocks, int64_t* bytes);

/// Whether a TMA store of `copy` reads its tile in wgmma's panel layout: a wgmma operand, or
/// a tile of 16- or 32-bit elements in whole 128-byte panel rows (8 rows a swizzle atom), which the store then gives
/// that layout (written from register fragments without bank conflicts, like the XOR-rows
/// staging tiles it replaces, and readable by a 128-byte-swizzled TMA box).
bool TmaStorePanels(const ir::CopyOp* copy, const std::unordered_set<const ir::BufferNode*>& wgmma_operands);

/// Why `copy` (shared tile -> global tensor) cannot be TMA box stores, or "" when it can.
std::string TmaStoreUnfit(const ir::CopyOp* copy, bool panelled, const std::vector<ir::Param>& params,
                          const AlignmentPromise& promise = {});

/// One copy TmaStoreUnfit accepts, and whether its tile is in panels.
struct TmaStoreCopy {
  const ir::CopyOp* copy;
  bool panelled;
};

/// The stores of `copies` (in order): every thread fences its shared writes for the async
/// proxy, a barrier, then the thread where `issuer` holds stores each box of each copy,
/// commits them and waits until they have read their tiles (so they may be overwritten after
/// the next barrier, which cuda-insert-barriers places). The tiles' panels show in the IR: a
/// tma_store whose descriptor swizzles reads a tile in panel layout (WgmmaOperands).
ir::Stmt LowerTmaStores(const std::vector<TmaStoreCopy>& copies, const ir::Expr& issuer);

}  // namespace tl::transform::cuda
