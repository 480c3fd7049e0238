// SPDX-License-Identifier: Apache-2.0
/// \file What shared-memory planning (cuda-plan-shared-memory) and barrier insertion
/// (cuda-insert-barriers) must agree on: which tiles take which layout (and so which are
/// 1024-byte aligned), and which statements barriers may be placed between.
///
/// The plan itself (each tile's offset and layout) is written into the IR as
/// `T.attr("tl.shared_offset", offset, layout)` immediately before the tile's Allocate
/// (target/cuda_attrs.h), which barrier insertion and the code generator read. Allocate has
/// no annotation field and buffers are not expressions, so an adjacent attribute is the
/// smallest addition: no new node kind, readable in IR dumps, and ignored by every pass
/// that does not look for it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tl/ir/stmt.h"
#include "tl/target/cuda_attrs.h"

namespace tl::transform::cuda {

// The attributes these passes leave for codegen (target/cuda_attrs.h), by their short names here.
using target::kLoopTermsApartAttr;
using target::kTmaCacheHintAttr;
using target::kMinBlocksPerSmAttr;
using target::kRasterPanelAttr;
using target::kSharedOffsetAttr;
using target::kWarpSpecializedAttr;
using target::ReadSharedPlan;
using target::SharedLayout;
using target::SharedPlan;

/// Whether `s` is the warp-specialized split `if ws_is_producer(n): ... else: ...`.
bool IsWarpSpecializedSplit(const ir::Stmt& s);

/// Buffers read by gemm_ss (A and B) or gemm_rs (B) as shared operands, each through
/// windows that start on a swizzle atom of its layout (the others are left unswizzled).
std::unordered_set<const ir::BufferNode*> GemmOperands(const ir::Stmt& body);

/// Whether a window of `b` starting at `start` (one index per dimension) starts on an atom
/// of wgmma's panel layout: a row that is a multiple of 8 and the first column of a 128-byte
/// panel, so that its offsets in the panels are the window's own plus a multiple of 1024
/// bytes, which the swizzle leaves alone (tl::swizzle, tile_ops.h).
bool StartsOnPanelAtom(const ir::Buffer& b, const std::vector<ir::Expr>& start);

/// Whether codegen swizzles `b`: a shared GEMM operand whose rows allow it, or a tile in panel
/// layout. Those wgmma reads (`wgmma_operands`, see WgmmaOperands; TMA-stored panel tiles too)
/// take wgmma's panel layout, the others XOR rows.
bool Swizzled(const ir::Buffer& b, const std::unordered_set<const ir::BufferNode*>& gemm_operands,
              const std::unordered_set<const ir::BufferNode*>& wgmma_operands);

/// Byte size of a buffer, or -1 when its shape is not known at compile time.
int64_t ConstBytes(const ir::Buffer& b);

/// Shared tiles of 2-byte or wider elements that no GEMM reads and that may take the
/// XOR-rows swizzle (rows a power of two of at least 64 bytes) because every access goes through codegen's offsets: element
/// loads and stores, and addresses only as the destination or source of the copy helpers
/// (vec_copy, cast_copy, vec_zero, cp_async, stmatrix_x4) of at most 16 bytes, which the swizzle keeps
/// inside one 16-byte chunk. Tiles written from register fragments (an epilogue's staging
/// tile: each warp stores 8 rows at one column) then store without bank conflicts.
std::unordered_set<const ir::BufferNode*> StagingTiles(const ir::Stmt& body,
                                                        const std::unordered_set<const ir::BufferNode*>& gemm_operands);

/// Whether cuda-insert-barriers looks inside `s` (a For, While or IfThenElse) and may put
/// barriers between its statements: it holds block-level work (GEMMs, thread-partitioned
/// loops, barriers, async copies) and its control does not depend on the thread index
/// `tx`. Anything else is one unit, which barriers only go around.
bool BarriersGoInside(const ir::Stmt& s, const ir::Var* tx);

/// Whether `s` is `cp_async_wait(0)`: every cp.async this thread issued has landed.
bool IsWaitAll(const ir::Stmt& s);

}  // namespace tl::transform::cuda
