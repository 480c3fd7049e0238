// SPDX-License-Identifier: Apache-2.0
/// \file The schedule of a T.Pipelined loop, shared by its two mechanisms: which copies
/// produce (global -> shared copies hoisted into earlier iterations), which statements
/// consume, and how staged buffers are addressed. "cuda-pipeline" implements the schedule
/// with cp.async and block barriers; "cuda-warp-specialize" with TMA, mbarriers and a
/// producer warpgroup.
#pragma once

#include <functional>

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../stage_buffers.h"
#include "gather_copy.h"
#include "tl/ir/functor.h"
#include "tl/ir/stmt.h"

namespace tl::transform::cuda {

/// T.wgmma_gemm's wgmmas read their shared operands until a T.wait_wgmma. A pipeline loads
/// the next iteration into the stage (or single tile) the current one read, so a
/// T.wgmma_gemm on a tile `staged` names must be waited for with T.wait_wgmma(0) later in the
/// same iteration; refused at the loop's line otherwise.
void CheckWgmmaWaited(const ir::For* loop, const std::function<bool(const ir::BufferNode*)>& staged);

/// Whether the loop body commits or waits for cp.async groups itself (T.ptx_commit_group,
/// T.ptx_wait_group): a pipeline's own groups would shift the counts its waits assume.
bool HasProgramGroups(const ir::For* loop);
/// HasProgramGroups refused at the call's line, for a loop that must be staged.
void CheckNoProgramGroups(const ir::For* loop);

/// The statements of a Seq (nested ones flattened), or `s` alone.
std::vector<ir::Stmt> Flatten(const ir::Stmt& s);

/// The loop's num_stages annotation, 0 when absent.
int64_t NumStages(const ir::For* op);

/// The producers of a pipelined loop: copies global -> shared of the loop body's top
/// level whose regions depend only on the loop variable and values from outside the loop,
/// and whose shared buffer nothing else in the loop writes. They are prefetched, so they
/// may sit anywhere in the body. Empty (with `why` set) when the loop cannot be pipelined.
std::vector<const ir::CopyOp*> PipelineProducers(const ir::For* op, std::string* why);

/// The element copies into shared tiles (gather_copy.h) of a pipelined loop's body that can
/// be prefetched like `producers`: they read only global tensors the loop does not write, no
/// value computed in the body, and write a tile nothing else in the loop reads before them,
/// writes, or allocates. The gather copies left out are described in `refused`.
std::vector<GatherCopy> PipelineGathers(const ir::For* op, const std::vector<const ir::CopyOp*>& producers,
                                        std::vector<std::string>* refused);

/// How many leading statements of a pipelined loop's consumers read its staged tiles: every
/// statement naming a staged tile is among the first n, each reads them synchronously (element
/// loads and synchronous copy intrinsics, as the register walk of `T.copy(stage, fragment)`
/// is: no tile op, no GEMM, nothing asynchronous, no barrier), and statements follow them.
/// Then a stage is free once those n have run, and its refill can be issued right there,
/// before the rest of the iteration: one more stage of loads in flight (upstream's order for
/// a loop that copies its stages into registers first, as its mHC post does). 0 otherwise.
size_t StageReadersPrefix(const std::vector<ir::Stmt>& consumers,
                          const std::unordered_set<const ir::BufferNode*>& staged);

/// How many leading statements of a pipelined loop's consumers hold every read of its staged
/// tiles, when each of those reads is done by the statement's end: synchronous element work as
/// in StageReadersPrefix, or a T.gemm (lowered to mma.sync or to wgmma that it waits for; not
/// T.wgmma_gemm, whose wgmmas read on until a T.wait_wgmma). Unlike StageReadersPrefix the
/// readers may run to the end of the body (n == consumers.size()). A stage can be refilled once
/// they have run: for loops whose loads are gathered rows (latency-bound), keeping s loads in
/// flight instead of s - 1 is worth the extra barrier, as upstream's order for its sparse MLA
/// kernels does. 0 when no statement reads a staged tile or a reader does not qualify.
size_t StageReadersThrough(const std::vector<ir::Stmt>& consumers,
                           const std::unordered_set<const ir::BufferNode*>& staged);

/// The copies of a pipelined loop grouped by the consumer statement that last reads their
/// stage tiles (a copy's refill can be issued right after it), with the first statement that
/// reads them (where its loads must have landed). Groups are ordered by that last reader.
struct RefillGroup {
  std::vector<size_t> copies;  ///< indices into the producers
  size_t first_reader = 0, last_reader = 0;
};
/// Refill groups for a loop whose staged tiles are read synchronously (as in
/// StageReadersThrough, a T.gemm that waits for its own work included) by consumers that
/// read different copies' tiles last at different statements: each stage refilled once its
/// own last reader is done keeps s loads of each copy in flight, and each copy is waited for
/// just before its first reader (upstream's order for its dequantizing GEMMs: the packed
/// weights refilled after the dequantizing loop, the activations after the GEMM). Empty when
/// there is a single group, a staged tile no consumer reads, or a reader that does not qualify.
std::vector<RefillGroup> PerCopyRefillGroups(const std::vector<ir::Stmt>& consumers,
                                             const std::vector<const ir::BufferNode*>& copy_tiles);

/// Substitutes, inside T.Pipelined bodies, lets of plain index arithmetic into the copies
/// after them (`k0 = ko * bk; T.copy(A[by * bm, k0], A_s)`), so that such copies can be
/// prefetched (and proven aligned).
ir::Stmt InlinePipelineIndexLets(const ir::Stmt& body);

// StageSelector and StagedBuffer (target-neutral, stage_buffers.h), by their old names.
using transform::StageSelector;
using transform::StagedBuffer;

/// `r` with the loop variable `var` replaced by `value`.
ir::Region SubstituteRegion(const ir::Region& r, const ir::Var* var, const ir::Expr& value);

}  // namespace tl::transform::cuda
