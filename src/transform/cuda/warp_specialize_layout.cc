// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, the kernel's layout: the specialized body around the two
/// branches, the produced tiles' stage dimension, and the mbarrier bookkeeping both
/// branches index by: which loads share a full/empty pair (FormGroups), where each pair's
/// barriers sit in tl_ws_bars (per group g and stage s: full at g * S + s, empty at
/// (G + g) * S + s, then one barrier for the prologue's loads), and their initialization.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <unordered_set>
#include <vector>

#include "../region_util.h"
#include "copy_lowering.h"
#include "pipeline_schedule.h"
#include "shared_plan.h"
#include "warp_specialize.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

/// The kernel's new thread-binding body: the declarations both roles share, the mbarriers
/// and their initialization, the register split, then `if ws_is_producer: producer else:
/// consumer`; and the remark saying what was made.
Stmt WarpSpecializer::Build(const Roles& roles) {
  const Span& span = loop_->span;
  std::vector<Stmt> common = roles.common;
  int64_t groups = static_cast<int64_t>(groups_.size());
  Buffer bars = BufferNode::Make("tl_ws_bars", DType::UInt(64),
                                 {MakeInt(2 * groups * stages_ + (prologue_.empty() ? 0 : 1))}, Scope::kShared);
  common.push_back(Allocate::Make(bars, nullptr, span));
  int64_t bytes = 0;
  Stmt producer = Producer(bars, &bytes);  // (first: it collects the descriptors InitBarriers prefetches)
  common.push_back(InitBarriers(bars));
  for (const Stmt& s : ClusterStart()) common.push_back(s);

  // As many registers as the producer's release leaves the consumers, at most 256
  // (setmaxnreg's limit): 256 for one consumer warpgroup, 240 for two, 112 for four (see
  // MostConsumerRegisters). One warpgroup at 256 rather than 240 was faster on the H200 (fourteenth session: upstream's FP8 GEMM with two accumulators 0.0790
  // -> 0.0766 ms, spilling 80 bytes rather than 252; GQA forward 0.0308 -> 0.0302, MHA
  // forward 0.0152 -> 0.0148). tl.ws_consumer_registers=n (a multiple of 8, 24..256, within
  // the register file) overrides it, for measurements.
  const int64_t consumer_regs = ConsumerRegisters();
  if (auto it = ctx_.config.find("tl.ws_consumer_registers");
      it != ctx_.config.end() && consumer_regs == MostConsumerRegisters(threads_) &&
      std::atoll(it->second.c_str()) != consumer_regs) {
    ctx_.remarks.push_back("tl.ws_consumer_registers=" + it->second + " ignored: a multiple of 8 in [24, " +
                           std::to_string(std::min<int64_t>(256, consumer_regs)) + "] fits these " +
                           std::to_string(threads_) + " consumer threads");
  }
  common.push_back(AttrStmt::Make(cuda::kWarpSpecializedAttr,
                                  {MakeInt(kProducerThreads), MakeInt(kProducerRegisters), MakeInt(consumer_regs)},
                                  span));
  Stmt consumer = Consumer(bars, roles, consumer_regs);
  common.push_back(IfThenElse::Make(Call::Make(DType::Bool(), "ws_is_producer", {MakeInt(threads_)}), producer,
                                    consumer, span));
  // (in clusters: no block exits while the other may still arrive on its empty barriers)
  if (ClusterBlocks() > 1) common.push_back(CallStmt("cluster_sync", {}, span));
  ctx_.remarks.push_back(SpecializedRemark(bytes, consumer_regs));
  return Seq::Make(common, binding_span_);
}

/// Thread 0 prefetches the TMA descriptors, then initializes every group's full barriers (one arrival: the producer's
/// arrive_expect_tx) and empty barriers (EmptyArrivals), and the prologue's.
Stmt WarpSpecializer::InitBarriers(const Buffer& bars) {
  const Span& span = loop_->span;
  int64_t groups = static_cast<int64_t>(groups_.size());
  std::vector<Stmt> init = descriptor_prefetches_;
  for (int64_t g = 0; g < groups; ++g) {
    for (int64_t s = 0; s < stages_; ++s) {
      init.push_back(CallStmt("mbarrier_init", {AddressOf(bars, {MakeInt(g * stages_ + s)}), MakeInt(1)}, span));
      init.push_back(CallStmt("mbarrier_init", {AddressOf(bars, {MakeInt((groups + g) * stages_ + s)}),
                                                MakeInt(EmptyArrivals())}, span));
    }
  }
  if (!prologue_.empty()) init.push_back(CallStmt("mbarrier_init", {PrologueBar(bars), MakeInt(1)}, span));
  init.push_back(CallStmt("mbarrier_init_fence", {}, span));
  return IfThenElse::Make(EQ(tx_, MakeInt(0)), Seq::Make(init, span), nullptr, span);
}

/// The remark of a warp-specialized loop: stages, loads, bytes, barrier pairs, registers.
std::string WarpSpecializer::SpecializedRemark(int64_t bytes, int64_t consumer_regs) const {
  const Span& span = loop_->span;
  int64_t groups = static_cast<int64_t>(groups_.size());
  return "T.Pipelined at line " + std::to_string(span.line) + ": warp-specialized, " +
         std::to_string(stages_) + " stages; a producer warpgroup loads " +
         std::to_string(producers_.size()) + " copies" +
         (im2cols_.empty() ? std::string()
                           : " and " + std::to_string(im2cols_.size()) + " T.im2col tile(s)") +
         " with TMA (" + std::to_string(bytes) +
         " bytes per stage, " + std::to_string(groups) +
         " mbarrier full/empty pair(s) per stage, each waited before the first use of its "
         "tiles and released after the last), " + std::to_string(threads_) +
         " consumer threads; registers " + std::to_string(kProducerRegisters) + "/" +
         std::to_string(consumer_regs) +
         (prologue_.empty() ? std::string()
                            : "; it also loads " + std::to_string(prologue_.size()) +
                                  " tile(s) before the loop with TMA (" + PrologueNames() + ")") +
         (!tile_.outer ? std::string()
                       : "; inside the tile loop at line " + std::to_string(tile_.outer->span.line) +
                             ", both roles running it, stages and phases counted on across tiles (the next "
                             "tile's loads overlap this one's epilogue; tl.ws_tile_loop)");
}

/// Registers per consumer thread: MostConsumerRegisters, or tl.ws_consumer_registers where
/// that is a multiple of 8 in [24, MostConsumerRegisters].
int64_t WarpSpecializer::ConsumerRegisters() const {
  const int64_t most = MostConsumerRegisters(threads_);
  auto it = ctx_.config.find("tl.ws_consumer_registers");
  if (it == ctx_.config.end()) return most;
  int64_t asked = std::atoll(it->second.c_str());
  return asked >= 24 && asked <= 256 && asked % 8 == 0 && asked <= most ? asked : most;
}

/// A produced tile's allocation gets its stage dimension.
Stmt WarpSpecializer::StageAllocation(const Stmt& s) {
  const auto* alloc = As<Allocate>(s);
  if (!alloc || !produced_.count(alloc->buffer.get())) return s;
  Buffer staged = cuda::StagedBuffer(alloc->buffer, stages_);
  staged_[alloc->buffer.get()] = staged;
  return Allocate::Make(staged, alloc->init, alloc->span);
}

/// Barrier groups. By default all copies share one full/empty pair per stage, waited
/// before the first statement that uses any of their tiles and released after the last.
/// With tl.ws_barrier_groups, copies whose tiles are first and last used at different
/// statements get pairs of their own (attention's K released after Q*K^T, V awaited
/// only before P*V); on the H200 that measured 10% slower for the flash-attention
/// forward (2.43 against 2.20 ms at 8k), so it is opt-in.
void WarpSpecializer::FormGroups() {
  consumers_.clear();
  written_in_loop_.clear();
  groups_.clear();
  for (const Stmt& st : cuda::Flatten(loop_->body)) {
    bool produces = false;
    for (const CopyOp* c : producers_) produces |= st.get() == c;
    for (const cuda::Im2colNest& n : im2cols_) produces |= st.get() == n.loop;
    if (!produces) {
      consumers_.push_back(st);
      AddWrites(st, &written_in_loop_);
    }
  }
  // Every load, by its tile: the copies, then the im2col nests (index producers_.size() + j).
  std::vector<const BufferNode*> tiles;
  for (const CopyOp* c : producers_) tiles.push_back(c->dst.buffer.get());
  for (const cuda::Im2colNest& n : im2cols_) tiles.push_back(n.tile.get());
  for (size_t load = 0; load < tiles.size(); ++load) {
    size_t first = consumers_.size(), last = 0;
    for (size_t i = 0; i < consumers_.size(); ++i) {
      if (!BuffersOf(consumers_[i]).count(tiles[load])) continue;
      first = std::min(first, i);
      last = std::max(last, i);
    }
    if (first == consumers_.size()) {
      first = 0;
      last = consumers_.empty() ? 0 : consumers_.size() - 1;
    }
    auto same = std::find_if(groups_.begin(), groups_.end(), [&](const Group& g) {
      return !split_groups_ || (g.first == first && g.last == last);
    });
    if (same == groups_.end()) {
      groups_.push_back(Group{first, last, {}, {}});
      same = groups_.end() - 1;
    }
    if (load < producers_.size()) {
      same->copies.push_back(producers_[load]);
    } else {
      same->im2cols.push_back(load - producers_.size());
    }
    same->first = std::min(same->first, first);
    same->last = std::max(same->last, last);
  }
  // The producer issues in the order the consumers wait.
  std::stable_sort(groups_.begin(), groups_.end(), [](const Group& a, const Group& b) { return a.first < b.first; });
}

Expr WarpSpecializer::Stage(const VarRef& k) { return FloorMod(Count(k), MakeInt(stages_)); }
Expr WarpSpecializer::Round(const VarRef& k) { return FloorDiv(Count(k), MakeInt(stages_)); }

Expr WarpSpecializer::Full(const Buffer& bars, size_t g, const Expr& stage) {
  return AddressOf(bars, {MakeInt(static_cast<int64_t>(g) * stages_) + stage});
}
Expr WarpSpecializer::Empty(const Buffer& bars, size_t g, const Expr& stage) {
  return AddressOf(bars, {MakeInt(static_cast<int64_t>(groups_.size() + g) * stages_) + stage});
}

Expr WarpSpecializer::PrologueBar(const Buffer& bars) {
  return AddressOf(bars, {MakeInt(2 * static_cast<int64_t>(groups_.size()) * stages_)});
}

std::string WarpSpecializer::PrologueNames() const {
  std::string out;
  for (const CopyOp* c : prologue_) out += (out.empty() ? "" : ", ") + c->dst.buffer->name;
  return out;
}

}  // namespace tl::transform::cuda
