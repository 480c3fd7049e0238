// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference for the CUDA target (the first half of
/// "cuda-lower-fragments"; lower_fragments.cc rewrites the fragments it places).
///
/// The accumulator of a T.gemm gets the mma layout of its warp grid; that layout spreads
/// to fragments used element-for-element with it in a T.Parallel nest, and through
/// fragment-to-fragment copies. Tiles no GEMM reaches get a strip layout when all their
/// uses allow registers (register_tiles.h). A fragment may get only one layout: a second,
/// different one is an error naming both operations; per-row vectors caught between two
/// layouts move to shared memory instead.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tl/ir/functor.h"
#include "tl/layout/fragment.h"
#include "tl/target/cuda_target.h"
#include "wgmma_select.h"

namespace tl::transform::cuda {

bool IsFragment(const ir::Buffer& b);

/// A region covering a whole 2-D buffer from 0: its extents.
bool IsWhole2D(const ir::Region& r, int64_t* m, int64_t* n);

/// The loops of a nest of T.Parallel loops, outermost first, and its innermost body.
struct ParallelNest {
  std::vector<const ir::For*> loops;
  ir::Stmt body;
};
ParallelNest CollectNest(const ir::For* op);

/// Fragment accesses in a statement: buffer and index vector, in visiting order.
class AccessCollector : public ir::IRVisitor {
 public:
  std::vector<std::pair<ir::Buffer, std::vector<ir::Expr>>> accesses;

 protected:
  void Visit_(const ir::BufferLoad* op) override;
  void Visit_(const ir::BufferStore* op) override;
};

/// Whether the indices are exactly the nest's loop variables, in order.
bool IndicesAreVars(const std::vector<ir::Expr>& idx, const ParallelNest& nest);

/// Why gemm_ss's ldmatrix + mma.sync path cannot take a GEMM of these operand and
/// accumulator types, transposes and K ("" when it can; k < 0 when unknown): float16 /
/// bfloat16 into float32 (K a multiple of 16), int8 / uint8 into int32 (K a multiple of
/// 32), or a tf32 GEMM (GemmOp::tf32: float32 rounded to TF32, m16n8k8, K a multiple of 8),
/// the last two with A M x K and B N x K since ldmatrix cannot transpose bytes or floats;
/// with `f16_acc` ("tl.mma_f16_accumulators") also float16 into float16 (m16n8k16 .f16).
/// The same test as gemm_ss's kTensorCore (tile_ops.h), which otherwise runs multiply-add
/// loops.
std::string MmaSyncUnfit(ir::DType a, ir::DType b, ir::DType c, bool trans_a, bool trans_b, int64_t k,
                         bool tf32 = false, bool f16_acc = false);
std::string MmaSyncUnfit(const ir::GemmOp* op, bool f16_acc = false);

/// A fragment's layout and the operation that fixed it (for conflict messages).
struct Assigned {
  layout::FragmentLayoutRef layout;
  std::string origin;
  Span span;
};

/// How one T.gemm is computed, as layout inference chose it together with its accumulator's
/// warp split (fragment_inference_gemm.cc); the lowering (fragment_gemm.cc) follows it.
/// Without any field set: ldmatrix + mma.sync from shared operands (gemm_ss).
struct GemmPlan {
  std::string simt;         ///< why it runs per-thread multiply-add loops ("": the tensor cores)
  bool register_a = false;  ///< A is read from registers (gemm_rs, or wgmma with A in registers)
  bool staged_a = false;    ///< A, a register fragment, is written to a shared tile for ldmatrix
  bool wgmma = false;       ///< on Hopper's wgmma
  std::string not_wgmma;    ///< on Hopper, why it does not use wgmma ("": it does, or not Hopper)
};

/// What layout inference decided for one kernel body.
struct FragmentLayouts {
  std::unordered_map<const ir::BufferNode*, Assigned> layouts;
  /// Each T.gemm's plan (a GEMM not in it: the default plan).
  std::unordered_map<const ir::GemmOp*, GemmPlan> gemms;
  /// Set when per-column vectors were kept out of registers for want of them (a remark).
  std::string columns_note;
};

/// Layout inference over a kernel body of `threads` threads compiled for `target` (unknown:
/// no arch-specific instruction is chosen).
/// wgmma: the optional wgmma paths the pass configs allow (WgmmaOptionsOf); mma_columns:
/// per-column vectors next to mma accumulators in registers (tl.mma_column_vectors), unless
/// the kernel's register fragments already take more than kColumnVectorRegisterBudget
/// 32-bit registers a thread (columns_note says so); `force_columns` holds them there anyway.
FragmentLayouts InferFragmentLayouts(const ir::Stmt& body, int64_t threads, const target::CudaTarget& target,
                                     WgmmaOptions wgmma = {}, bool range_tiles = false, bool mma_columns = true,
                                     bool force_columns = false);

/// Registers a thread may give its register fragments before per-column vectors stay in
/// shared memory: a column vector is recomputed (or reloaded) by every thread holding the
/// columns, which pays where registers are free and, where the loop already spills, costs
/// more than the shared round trip it saves (upstream's sparse MLA backward, H100: 2% slower
/// with its mask in registers, twice; its fragments take about 233 registers a thread and it
/// spills; the forward's about 157, and it is 1.5% faster with them).
constexpr int64_t kColumnVectorRegisterBudget = 192;

}  // namespace tl::transform::cuda
