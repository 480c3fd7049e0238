// SPDX-License-Identifier: Apache-2.0
/// \file cuda-warp-specialize, deciding the order of a plain GEMM main loop (the loop's one
/// consumer is a wgmma GEMM from shared memory; GemmMainLoop builds it):
///
///   waited:    each k-tile's wgmmas complete before its stage is released (upstream's order);
///   in flight: k-tile k's wgmmas run while k + 1's are issued; stage k is released a step
///              later, so the loop gets one stage more than the source asked for.
///
/// Waiting costs a wgmma round trip per k-tile, which matters when a k-tile is short work for
/// the tensor cores; in flight costs a stage of shared memory and releases stages later. On
/// the H100 (session 38, same call): FP8 128x128x64 tiles (256 tensor-core cycles a k-tile)
/// 4096^3 0.1695 -> 0.1574 ms and 8192^3 1.35 -> 1.19 ms; fp16 128x128x32 (256 cycles) at
/// 1024^3 0.0145 -> 0.0131 ms; fp16 128x256x64 (1024 cycles) 8192^3 1.694 -> 1.705 ms. So in
/// flight is automatic up to kMostInFlightCycles, where the extra stage fits;
/// tl.ws_gemm_in_flight set to true or false decides it instead (true then adds no stage:
/// tl.ws_extra_stages does).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "shared_plan.h"
#include "warp_specialize.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/target/cuda_target.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

/// k-tiles of at most this many tensor-core cycles a block (an SM's dense rate: 2048 16-bit
/// multiply-adds a cycle, twice as many 8-bit, half as many TF32) keep their wgmmas in flight.
constexpr int64_t kMostInFlightCycles = 512;

/// Shared memory left for what later passes add (reduction scratch, barriers, alignment).
constexpr int64_t kSharedSlack = 8 * 1024;

/// The element bits of the GEMM operand `arg` (an `address_of` a tile's element), or 0.
int OperandBits(const Expr& arg) {
  const auto* addr = As<Call>(arg);
  const auto* load = addr && !addr->args.empty() ? As<BufferLoad>(addr->args[0]) : nullptr;
  return load ? load->buffer->dtype.bits : 0;
}

}  // namespace

/// Shared bytes of the kernel's tiles with the produced ones staged `stages` deep (each
/// tile rounded up to the 1024-byte alignment of wgmma's panels), or -1 when a tile's size
/// is not known at compile time. Tiles first touched after the loop (an epilogue's staging
/// tile) take the bytes of the staged tiles, dead by then, as cuda-plan-shared-memory
/// places them (only what does not fit in those counts).
int64_t WarpSpecializer::SharedBytesWithStages(const Stmt& kernel_body, int64_t stages) const {
  struct Tiles : IRVisitor {
    const std::unordered_set<const BufferNode*>* produced;
    const For* loop;
    int64_t stages = 1;
    std::unordered_map<const BufferNode*, int64_t> bytes;  // per shared tile, staged
    std::unordered_set<const BufferNode*> touched_by_loop;  // before it or in it
    bool loop_done = false, known = true;
    void Visit_(const Allocate* a) override {
      if (a->buffer->scope == Scope::kShared) {
        int64_t b = cuda::ConstBytes(a->buffer);
        known = known && b >= 0;
        b = (b + 1023) / 1024 * 1024;
        bytes[a->buffer.get()] = produced->count(a->buffer.get()) ? b * stages : b;
      }
      IRVisitor::Visit_(a);
    }
    void Visit_(const For* f) override {
      IRVisitor::Visit_(f);
      if (f == loop) loop_done = true;
    }
    void Touch(const Buffer& b) {
      if (b && !loop_done) touched_by_loop.insert(b.get());
    }
    void VisitRegion(const Region& r) override {
      Touch(r.buffer);
      IRVisitor::VisitRegion(r);
    }
    void Visit_(const BufferLoad* op) override {
      Touch(op->buffer);
      IRVisitor::Visit_(op);
    }
    void Visit_(const BufferStore* op) override {
      Touch(op->buffer);
      IRVisitor::Visit_(op);
    }
  } tiles;
  tiles.produced = &produced_;
  tiles.loop = tile_.outer ? tile_.outer : loop_;  // (a tile loop's epilogue tiles live with its stages)
  tiles.stages = stages;
  tiles.Visit(kernel_body);
  if (!tiles.known) return -1;
  int64_t total = 0, staged = 0, after = 0;
  for (const auto& [buffer, b] : tiles.bytes) {
    if (produced_.count(buffer)) staged += b;
    if (tiles.loop_done && !tiles.touched_by_loop.count(buffer)) {
      after += b;
    } else {
      total += b;
    }
  }
  return total + std::max<int64_t>(0, after - staged);
}

/// Decides gemm_in_flight_ (and adds its stage) for a plain GEMM loop, and the remark that says so
/// (gemm_order_remark_, given once the loop is specialized).
void WarpSpecializer::DecideGemmOrder(const Stmt& kernel_body) {
  const Call* gemm = LoneWgmma();
  // the loop shapes GemmMainLoop builds: one barrier group, every step counted by k
  if (!gemm || split_groups_ || groups_.size() != 1 || !guards_.empty() || stages_ < 2 || ConfigTrue(ctx_, "tl.ws_gemm_adaptive")) return;
  const std::string at = "T.Pipelined at line " + std::to_string(loop_->span.line) + ": ";
  // tl.ws_gemm_in_flight_depth (an experiment, not yet run on a GPU): the k-tiles in flight
  gemm_in_flight_depth_ = ConfigInt(ctx_, "tl.ws_gemm_in_flight_depth", 1, 4, loop_->span, "an integer from 1 to 4")
                              .value_or(1);
  const std::string what = gemm_in_flight_depth_ == 1
                               ? "the wgmmas of one k-tile stay in flight while the next is issued"
                               : "the wgmmas of " + std::to_string(gemm_in_flight_depth_) +
                                     " k-tiles stay in flight while the next is issued (tl.ws_gemm_in_flight_depth)";
  if (ctx_.config.count("tl.ws_gemm_in_flight")) {
    gemm_in_flight_ = ConfigTrue(ctx_, "tl.ws_gemm_in_flight");
    if (!gemm_in_flight_) return;
    // stage k is released in step k + depth, and the producer's step k + stages waits for that
    // release: a depth of stages or more would never let it through
    if (gemm_in_flight_depth_ >= stages_) {
      TL_USER_ERROR(loop_->span) << "tl.ws_gemm_in_flight_depth " << gemm_in_flight_depth_ << " needs more than "
                                 << gemm_in_flight_depth_ << " stages; the loop has " << stages_;
    }
    gemm_order_remark_ = at + what + " (tl.ws_gemm_in_flight)";
    return;
  }
  int64_t m = 0, n = 0, k = 0;
  const int bits = OperandBits(gemm->args[0]);
  if (!AsConstInt(gemm->args[3], &m) || !AsConstInt(gemm->args[4], &n) || !AsConstInt(gemm->args[5], &k) || !bits) {
    return;
  }
  const int64_t cycles = m * n * k * bits / (2048 * 16);
  if (cycles > kMostInFlightCycles) return;
  const int64_t depth = gemm_in_flight_depth_;
  const int64_t bytes = SharedBytesWithStages(kernel_body, stages_ + depth);
  const int64_t limit = ctx_.Cuda().MaxSharedBytesPerBlock() - kSharedSlack;
  const std::string more = depth == 1 ? "one stage more" : std::to_string(depth) + " stages more";
  if (bytes < 0 || bytes > limit) {
    gemm_order_remark_ = at + "each k-tile's wgmmas are waited for before the next is issued (in flight, they "
                         "would need " + more + ": " + std::to_string(bytes) + " bytes of shared memory, over " +
                         std::to_string(limit) + ")";
    return;
  }
  gemm_in_flight_ = true;
  stages_ += depth;
  gemm_order_remark_ = at + what + " (a k-tile is " + std::to_string(cycles) + " tensor-core cycles, at most " +
                       std::to_string(kMostInFlightCycles) + "), with " + more + " than num_stages: " +
                       std::to_string(stages_) + " (tl.ws_gemm_in_flight=False: the waited order)";
}

}  // namespace tl::transform::cuda
