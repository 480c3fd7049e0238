// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-stage-accumulator-stores": on sm_90a, a GEMM accumulator written to global
/// memory after its pipelined loop,
///
///     for k in T.Pipelined(...):  ... T.gemm(a, b, c)
///     T.copy(c, C[by * BM, bx * BN])           # float32 registers -> a 16-bit tensor
///
/// goes through a shared tile of the tensor's dtype, as `T.copy(c, c_s); T.copy(c_s, C[...])`:
/// the registers are written to shared memory with stmatrix (eight 16-bit elements a lane per
/// instruction) and the tile leaves with one TMA store (where the tensor's shape allows one;
/// else in coalesced row-wise accesses, as dynamic shapes get), where the direct form is one 4-byte
/// store per pair of columns, each warp's stores touching eight rows (half of every 32-byte
/// sector written). cuBLAS's Hopper kernels end the same way. The meaning is the same (a TMA
/// store clips at the tensor's edges as the direct copy's guards do).
///
/// Staged only where it costs no shared memory: the tile must fit in the bytes of the loop's
/// staged tiles that nothing after the loop uses (dead, so the shared-memory plan reuses them), so
/// the block's footprint and occupancy are unchanged. And only in the simple shape: the copy
/// in the same statement list as the pipelined loop, after it, in no loop, of the whole 2-D float32
/// accumulator of a T.gemm in that loop into float16 / bfloat16, in a kernel that does not
/// program its own barriers.
///
/// Measured on an H100 (benchmarks/gemm_variants.py, fp16 128x256x64 tiles, 3 stages, same
/// call): 8192^3 1.69 -> 1.59 ms (cuBLAS 1.63), bf16 8192^3 1.63 -> 1.55, 4096^3 0.214 ->
/// 0.197; upstream's example_gemm 0.0131 -> 0.0112 ms and its dynamic-shape GEMM 0.306 ->
/// 0.288 ms (no TMA store there); the other GEMM regression functions unchanged.
///
/// Switch `tl.stage_accumulator_stores` (on by default); a remark names each copy staged (or,
/// with the switch off, each copy it would stage).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../explicit_barriers.h"
#include "fragment_inference.h"
#include "pass_helpers.h"
#include "pipeline_schedule.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

/// What a pipelined loop offers: the accumulators its T.gemms write, and the shared tiles its
/// copies fill with their bytes (one stage's).
struct LoopFacts : IRVisitor {
  std::unordered_set<const BufferNode*> accumulators;
  std::unordered_map<const BufferNode*, int64_t> tile_bytes;

  void Visit_(const GemmOp* op) override {
    accumulators.insert(op->c.buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override {
    const Buffer& dst = op->dst.buffer;
    if (dst->scope == Scope::kShared && !tile_bytes.count(dst.get())) {
      int64_t elements = 1;
      for (const Expr& e : dst->shape) {
        int64_t n = 0;
        if (!AsConstInt(e, &n)) n = 0;  // (a symbolic tile: counted as nothing)
        elements *= n;
      }
      tile_bytes[dst.get()] = elements * dst->dtype.bytes();
    }
    IRVisitor::Visit_(op);
  }
};

/// The bytes the loop's staged tiles hold over its stages that nothing after it uses: dead
/// once it ends, so the shared-memory plan can give them to the staged tile.
int64_t DeadStageBytes(const For* loop, const LoopFacts& facts, const std::vector<Stmt>& after) {
  std::unordered_set<const BufferNode*> later;
  for (const Stmt& s : after) {
    for (const BufferNode* b : cuda::BuffersOf(s)) later.insert(b);
  }
  int64_t bytes = 0;
  for (const auto& [tile, n] : facts.tile_bytes) {
    if (!later.count(tile)) bytes += n;
  }
  return bytes * std::max<int64_t>(1, cuda::NumStages(loop));
}

/// The accumulator store a statement is (its tile's bytes), or 0.
int64_t StagedBytes(const CopyOp* copy, const std::unordered_set<const BufferNode*>& accumulators) {
  const Buffer& src = copy->src.buffer;
  const Buffer& dst = copy->dst.buffer;
  if (src->scope != Scope::kFragment || dst->scope != Scope::kGlobal || !accumulators.count(src.get())) return 0;
  int64_t rows = 0, cols = 0;
  if (src->dtype != DType::Float(32) || !cuda::IsWhole2D(copy->src, &rows, &cols)) return 0;
  if (dst->dtype != DType::Float(16) && dst->dtype != DType::BFloat16()) return 0;
  // stmatrix writes 8x8 pieces of 16-bit elements; wgmma accumulators come in 64-row slabs.
  if (rows % 64 || cols % 8) return 0;
  return rows * cols * dst->dtype.bytes();
}

class Stager : public IRMutator {
 public:
  explicit Stager(bool apply) : apply_(apply) {}
  std::vector<int> staged, would_stage;

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    return ProgramsBarriers(op->body) ? self : IRMutator::Mutate_(op, self);
  }
  // Not in a loop (a persistent kernel's tile loop, say): there the next tile's loads may
  // land in the stage bytes while the tile is stored, and a tile loop's tiles are allocated
  // before it.
  Stmt Mutate_(const For* op, const Stmt& self) override {
    (void)op;
    return self;
  }
  Stmt Mutate_(const Seq* op, const Stmt& self) override {
    std::vector<Stmt> out;
    bool changed = false;
    std::unordered_set<const BufferNode*> accumulators;  // of the last pipelined loop so far
    int64_t free_bytes = 0;
    for (size_t i = 0; i < op->stmts.size(); ++i) {
      const Stmt& s = op->stmts[i];
      Stmt m = Mutate(s);
      changed |= m != s;
      const auto* loop = As<For>(s);
      if (loop && loop->for_kind == ForKind::kPipelined) {
        LoopFacts facts;
        facts.Visit(loop->body);
        free_bytes = DeadStageBytes(loop, facts, std::vector<Stmt>(op->stmts.begin() + i + 1, op->stmts.end()));
        accumulators = std::move(facts.accumulators);
      }
      const auto* copy = As<CopyOp>(s);
      int64_t bytes = copy ? StagedBytes(copy, accumulators) : 0;
      if (bytes == 0 || bytes > free_bytes) {
        out.push_back(m);
        continue;
      }
      (apply_ ? staged : would_stage).push_back(copy->span.line);
      if (!apply_) {
        out.push_back(m);
        continue;
      }
      const Buffer& acc = copy->src.buffer;
      Buffer tile = BufferNode::Make(acc->name + "_staged", copy->dst.buffer->dtype, acc->shape, Scope::kShared);
      out.push_back(Allocate::Make(tile, nullptr, copy->span));
      out.push_back(CopyOp::Make(copy->src, Region::Full(tile), copy->span));
      out.push_back(CopyOp::Make(Region::Full(tile), copy->dst, copy->span));
      changed = true;
    }
    return changed ? Seq::Make(std::move(out), op->span) : self;
  }

 private:
  bool apply_;
};

}  // namespace

ir::PrimFunc CudaStageAccumulatorStores(const ir::PrimFunc& f, PassContext& ctx) {
  if (!ctx.Cuda().HasWgmma()) return f;
  // The automatic persistent launch puts the epilogue in a tile loop, which stages nothing
  // (above): with it asked for, the store stays as written and the launch can apply.
  const bool persistent = ConfigTrue(ctx, "tl.auto_persistent");
  Stager stager(!persistent && ConfigOn(ctx, "tl.stage_accumulator_stores", /*default_on=*/true));
  Stmt body = stager.Mutate(f->body);
  for (int line : stager.staged) {
    ctx.remarks.push_back("T.copy at line " + std::to_string(line) +
                          ": the GEMM accumulator goes to global memory through a shared tile (stmatrix, then a "
                          "TMA store where the tensor allows one, else coalesced stores) in bytes the pipelined "
                          "loop's tiles free (tl.stage_accumulator_stores=False stores from registers)");
  }
  for (int line : stager.would_stage) {
    ctx.remarks.push_back("T.copy at line " + std::to_string(line) + ": the GEMM accumulator is stored from registers" +
                          (persistent ? std::string(" (tl.auto_persistent: a tile loop's store is not staged)")
                                      : std::string("; tl.stage_accumulator_stores=True stages it through a shared "
                                                    "tile (stmatrix, then a TMA store)")));
  }
  if (body == f->body) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-stage-accumulator-stores", CudaStageAccumulatorStores);

}  // namespace tl::transform
