// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, clusters: blocks that load the same tile in every k-step (a
/// GEMM's A tile for all blocks of one row of C, B for one column) can share it. Two
/// neighbouring blocks along one grid axis are launched as a cluster; each block's producer
/// loads half the shared tile's rows with TMA multicast, which writes them into both blocks'
/// shared memory and completes the bytes on both blocks' full barriers. The L2 then serves
/// that tile once per cluster instead of once per block.
///
/// The pipeline changes in three places:
///   - a stage may only be refilled once the consumers of *both* blocks are done with it:
///     each consumer warp arrives on the empty barrier of every block of the cluster (one
///     arrival per warp and block: mbarrier_arrive_cluster_warp);
///   - a block's full barrier expects the whole tile's bytes, half of them sent by the other
///     block's producer (which may arrive before this block arms its barrier: the
///     transaction count may run ahead within a phase);
///   - the blocks meet (cluster_sync) after initializing their barriers, before either sends
///     to the other, and again at the end, so that no block exits while the other may still
///     arrive on its barriers.
///
/// Which axis: the one whose static, even grid extent lets the most bytes per stage be
/// shared, counting the loop's copies whose source (and the loop's bounds) does not depend on
/// that axis's block index, reads nothing from memory, and whose tile splits into two runs of
/// rows TMA can write (TmaMulticastUnfit). Loops with loads under a guard (block-sparse ones,
/// whose blocks may skip different k-tiles) and the kernels the program launches in clusters
/// itself stay as they are.
/// tl.ws_multicast: True multicasts wherever it can; off by default. Measured on the H100
/// (thirty-ninth session, 8192^3): fp16 128x256x64 1.714 -> 1.725 ms, fp8 128x128x64 1.218 ->
/// 1.289, the MHA forward about 4% slower; the blocks of the GEMMs here are not held back by
/// what the L2 delivers, so sharing a third of the bytes buys nothing, and the coupling of
/// two blocks' stages costs a little.
#include <string>
#include <unordered_set>

#include "tma_copy.h"
#include "warp_specialize.h"
#include "tl/ir/functor.h"
#include "tl/target/cuda_attrs.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// Blocks per cluster when a loop multicasts.
constexpr int64_t kClusterBlocks = 2;

/// Whether every variable of `e` is in `allowed` and `e` reads no memory.
bool OnlyOf(const Expr& e, const std::unordered_set<const Var*>& allowed) {
  bool ok = true;
  ForEachExpr(e, [&](const Expr& x) {
    if (const auto* v = As<Var>(x)) ok = ok && allowed.count(v) > 0;
    if (As<BufferLoad>(x)) ok = false;
  });
  return ok;
}

int64_t TileBytes(const CopyOp* c) {
  int64_t n = c->dst.buffer->dtype.bytes();
  for (const Range& r : c->dst.ranges) {
    int64_t e = 1;
    AsConstInt(r.extent, &e);
    n *= e;
  }
  return n;
}

}  // namespace

void WarpSpecializer::DecideMulticast(const KernelLaunch* launch) {
  cluster_axis_ = -1;
  multicast_.clear();
  if (!ConfigOn(ctx_, "tl.ws_multicast", /*default_on=*/false)) return;
  const std::string at = "T.Pipelined at line " + std::to_string(loop_->span.line) + ": ";
  if (target::FindLaunchMarker(launch->body, target::kClusterDimsAttr)) return;  // the program's own clusters
  // A block whose guard is false arrives on its full barrier without bytes, while the other
  // block of its cluster would still send it half a tile: both must load the same k-tiles.
  if (SkippedStepGuard() || !guards_.empty()) {
    ctx_.remarks.push_back(at + "no multicast (the blocks may skip different k-tiles: loads under a guard)");
    return;
  }
  // What the two blocks of a cluster agree on: the loop's variable, the sizes, the other
  // block indices.
  std::unordered_set<const Var*> common{loop_->var.get()};
  for (const Param& p : f_->params) {
    if (p.var) common.insert(p.var.get());
    if (!p.buffer) continue;
    for (const Expr& d : p.buffer->shape) {
      if (const auto* v = As<Var>(d)) common.insert(v);
    }
  }
  int64_t best_bytes = 0;
  for (size_t axis = 0; axis < 2 && axis < launch->grid.size(); ++axis) {
    int64_t extent = 0;
    if (!AsConstInt(launch->grid[axis], &extent) || extent % kClusterBlocks) continue;
    std::unordered_set<const Var*> allowed = common;
    for (size_t j = 0; j < launch->block_vars.size(); ++j) {
      if (j != axis) allowed.insert(launch->block_vars[j].get());
    }
    if (!OnlyOf(loop_->min, allowed) || !OnlyOf(loop_->extent, allowed)) continue;
    std::vector<const CopyOp*> shared;
    int64_t bytes = 0;
    for (const CopyOp* c : producers_) {
      bool same = true;
      for (const Range& r : c->src.ranges) same = same && OnlyOf(r.min, allowed) && OnlyOf(r.extent, allowed);
      if (!same || !TmaMulticastUnfit(c, panelled_.at(c), kClusterBlocks).empty()) continue;
      shared.push_back(c);
      bytes += TileBytes(c);
    }
    if (bytes > best_bytes) {
      best_bytes = bytes;
      cluster_axis_ = static_cast<int>(axis);
      multicast_ = {shared.begin(), shared.end()};
    }
  }
  if (cluster_axis_ < 0) {
    ctx_.remarks.push_back(at + "no multicast (no tile is the same for two neighbouring blocks along an even grid axis)");
    return;
  }
  std::string names;
  for (const CopyOp* c : producers_) {
    if (multicast_.count(c)) names += (names.empty() ? "" : ", ") + c->dst.buffer->name;
  }
  multicast_remark_ = at + "launched in clusters of " + std::to_string(kClusterBlocks) + " blocks along " +
                      (cluster_axis_ == 0 ? "x" : "y") + "; " + names +
                      " multicast (each block loads 1/" + std::to_string(kClusterBlocks) + " of it for both: " +
                      std::to_string(best_bytes / kClusterBlocks) + " bytes a stage less per block from L2)";
}

int64_t WarpSpecializer::ClusterBlocks() const { return cluster_axis_ < 0 ? 1 : kClusterBlocks; }

/// The launch marker of the clusters, the blocks' meeting after the barriers are
/// initialized (in place of __syncthreads), or "" without clusters.
std::vector<Stmt> WarpSpecializer::ClusterStart() const {
  const Span& span = loop_->span;
  if (cluster_axis_ < 0) return {CallStmt("syncthreads", {}, span)};
  std::vector<Expr> dims{MakeInt(1), MakeInt(1), MakeInt(1)};
  dims[cluster_axis_] = MakeInt(kClusterBlocks);
  return {AttrStmt::Make(target::kClusterDimsAttr, dims, span), CallStmt("cluster_sync", {}, span)};
}

}  // namespace tl::transform::cuda
