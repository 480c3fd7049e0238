// SPDX-License-Identifier: Apache-2.0
/// \file Fragment layout inference, the GEMM rules: which instruction path a T.gemm takes
/// (wgmma on Hopper, mma.sync with A from shared memory or registers, A staged through
/// shared memory, or per-element loops, with the reason) and the warp split, hence the mma
/// accumulator layout, its C (and register A) fragment gets.
#include <cctype>
#include <optional>
#include <string>

#include "copy_lowering.h"
#include "fragment_inference_internal.h"
#include "tl/arith/simplify.h"
#include "tl/target/warp.h"
#include "wgmma_select.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file
using target::kWarpSize;
using layout::FragmentLayoutRef;
using layout::MmaAccumulatorLayout;

namespace {

/// ldmatrix (the mma.sync path, and B of the register-A path) reads 8 consecutive 16-bit
/// elements per row at 16-byte aligned addresses: a window whose row length or start
/// column breaks that (a slice B_s[2:18, 2:18] of an 18 x 20 tile) faults on the GPU with a
/// misaligned address, so such GEMMs take the element-wise path. wgmma's own operand
/// checks are stricter (whole 2-D tiles), and other dtypes never use ldmatrix.
bool LdmatrixRowsAligned(const GemmOp* op, bool reg_a) {
  arith::Analyzer an;
  // 8-bit (32-bit) operands go through ldmatrix on the int8 (tf32) mma.sync path only.
  const bool narrow_mma = (op->a.buffer->dtype.bytes() == 1 || op->tf32) && MmaSyncUnfit(op).empty();
  for (const Region* r : {&op->a, &op->b}) {
    if (r == &op->a && reg_a) continue;
    int bytes = r->buffer->dtype.bytes();
    if (!(bytes == 2 || ((bytes == 1 || bytes == 4) && narrow_mma)) || r->buffer->scope != Scope::kShared) continue;
    if (!cuda::VectorFits(*r, 16 / bytes, an)) return false;
  }
  return true;
}

}  // namespace

void FragmentLayoutInference::Visit_(const GemmOp* op) {
  // Under a branch on a range of whole warps that starts on a multiple of its size, the
  // GEMM is the range's (fragment_inference_range.cc): its rules below see that many threads.
  std::optional<ThreadRange> range = OwnRange(op);
  const int64_t size = range ? range->hi - range->lo : 0;
  if (range && size % kWarpSize == 0 && range->lo % size == 0) {
    num_threads_ = size;
    first_thread_ = range->lo;
    RuleGemm(op);
    num_threads_ = block_threads_;
    first_thread_ = 0;
    return;
  }
  RuleGemm(op);
}

void FragmentLayoutInference::RuleGemm(const GemmOp* op) {
  int64_t m, n, ka = 0, kb = 0;
  std::string why;
  layout::WarpPartition warps;
  bool reg_a = IsFragment(op->a.buffer) && !IsFragment(op->b.buffer);
  if (target_.Known() && !target_.HasMmaSync()) {
    // The mma.sync shapes of the tensor-core path (m16n8k16, k32, tf32 k8) are sm_80's.
    why = target_.arch + " has none of the mma.sync shapes the tensor-core path uses (sm_80 and newer)";
  } else if (!IsFragment(op->c.buffer) || !IsWhole2D(op->c, &m, &n)) {
    why = "the accumulator is not a whole 2-D fragment";
  } else if (num_threads_ % kWarpSize) {
    why = "the thread count is not a multiple of 32";
  } else if (IsFragment(op->b.buffer)) {
    why = "operand B is a fragment";
  } else if (op->a.buffer->scope == Scope::kGlobal || op->b.buffer->scope == Scope::kGlobal) {
    // ldmatrix and wgmma read shared memory only; a tensor operand read in place would fault.
    why = std::string("operand ") + (op->a.buffer->scope == Scope::kGlobal ? "A" : "B") +
          " is a global tensor (the tensor cores read operands from shared memory: T.copy it into a "
          "T.alloc_shared tile first)";
  } else if (!LdmatrixRowsAligned(op, reg_a)) {
    why = "a shared operand's rows do not start on 16-byte boundaries (ldmatrix reads 16-byte rows)";
  } else if (reg_a) {
    // A in registers: each warp must own whole rows of A and C (warps along M only),
    // and A must hold 16-bit values laid out as an mma accumulator of M x K.
    int64_t w = num_threads_ / kWarpSize;
    DType ta = op->a.buffer->dtype;
    bool sixteen = (ta == DType::Float(16) || ta == DType::BFloat16()) && ta == op->b.buffer->dtype &&
                   op->c.buffer->dtype == DType::Float(32);
    if (Tf32RegisterA(op, m, n, &warps)) {
      // (the tfloat32 A operand of mma.sync m16n8k8, replicated over the warps along N)
    } else if (op->trans_a || !IsWhole2D(op->a, &ka, &kb) || ka != m || !sixteen || m % (16 * w) || n % 8 ||
               kb % 16) {
      why = "operand A is a fragment that the tensor-core path cannot read from registers (it needs "
            "16-bit A of M x K, not transposed, and M a multiple of 16 x warps)";
      StageA(op, m, n, &warps, &why);
    } else {
      // On Hopper, fewer warpgroups than 64-row blocks: the rows wgmma's blocks interleave
      // (mma.sync's gemm_rs reads A and C alike, in either row order).
      layout::WarpPartition rs_split{w, 1};
      layout::WarpPartition wg;
      if (target_.IsHopper() && WgmmaPartition(m, &wg) && wg.warps_n == 1 && wg.warps_m == w) {
        rs_split = wg;
      }
      auto a_layout = std::make_shared<MmaAccumulatorLayout>(m, kb, rs_split);
      auto it = layouts.find(op->a.buffer.get());
      if (it != layouts.end() && !(*it->second.layout == *Held(a_layout))) {
        why = "operand A is held as " + it->second.layout->ToString() + " but the register path needs " +
              a_layout->ToString();
        StageA(op, m, n, &warps, &why);
      } else {
        warps = rs_split;
        Assign(op->a.buffer, Held(a_layout), "T.gemm operand A", op->span);
        gemm_plans[op].register_a = true;
        if (target_.IsHopper()) {
          std::string no = cuda::WgmmaUnfit(op, num_threads_, target_, /*a_in_registers=*/true, nullptr, wgmma_);
          if (no.empty()) {
            gemm_plans[op].wgmma = true;
          } else {
            gemm_plans[op].not_wgmma = no;
          }
        }
      }
    }
  } else if (auto held = HeldSplit(op->c.buffer, op)) {
    // The accumulator already has an mma layout (from another T.gemm into it, or one a
    // T.Parallel ties it to): this GEMM takes the same warp split, on mma.sync unless that
    // split is the wgmma one.
    warps = *held;
    layout::WarpPartition wg;
    bool wgmma_split = WgmmaPartition(m, &wg) && warps == wg;
    if (!wgmma_split && target_.IsHopper()) {
      gemm_plans[op].wgmma = false;
      gemm_plans[op].not_wgmma = "its accumulator is laid out as " + MmaAccumulatorLayout(m, n, warps).ToString() +
                     " by another use";
    } else if (wgmma_split) {
      UseWgmma(op);  // records the reason when it cannot
    }
  } else if (UseWgmma(op)) {
    // One warp per 16 rows: the mma.sync accumulator layout with warps M/16 x 1 is
    // exactly the wgmma m64nNk16 layout of each warpgroup; further warpgroups split N.
    WgmmaPartition(m, &warps);
  } else if (!layout::PartitionWarps(m, n, num_threads_ / kWarpSize, op->policy, &warps)) {
    why = "a " + std::to_string(m) + "x" + std::to_string(n) + " accumulator cannot be split over " +
          std::to_string(num_threads_ / kWarpSize) + " warps in 16x8 tiles";
  }
  if (!why.empty()) {
    gemm_plans[op].register_a = false;
    gemm_plans[op].simt = why;
    if (IsFragment(op->c.buffer)) forced_shared.insert(op->c.buffer.get());
    if (IsFragment(op->b.buffer)) forced_shared.insert(op->b.buffer.get());
    return;
  }
  Assign(op->c.buffer, Held(std::make_shared<MmaAccumulatorLayout>(m, n, warps)), "T.gemm", op->span);
}

/// A tfloat32 register fragment A read in place by mma.sync m16n8k8 (tl::gemm_rs_tf32): A is
/// M x K in the tf32 A-operand layout (layout::MmaTf32ALayout) over the accumulator's warp
/// grid, each warp along N holding a copy of its rows' A, as upstream keeps mHC pre's x_frag;
/// B a shared N x K tile (ldmatrix moves 4-byte elements along K only). False, with nothing
/// assigned, when any of that does not hold or A already has another layout.
bool FragmentLayoutInference::Tf32RegisterA(const GemmOp* op, int64_t m, int64_t n, layout::WarpPartition* warps) {
  int64_t ka = 0, kb = 0;
  const DType f32 = DType::Float(32);
  if (!op->tf32 || !wgmma_.tf32_mma || op->trans_a || !op->trans_b || op->a.buffer->dtype != f32 ||
      op->b.buffer->dtype != f32 || op->c.buffer->dtype != f32 || op->b.buffer->scope != Scope::kShared ||
      !IsWhole2D(op->a, &ka, &kb) || ka != m || kb % 8) {
    return false;
  }
  layout::WarpPartition split;
  if (auto held = HeldSplit(op->c.buffer, op)) {
    split = *held;
  } else if (!layout::PartitionWarps(m, n, num_threads_ / kWarpSize, op->policy, &split)) {
    return false;
  }
  auto a_layout = std::make_shared<layout::MmaTf32ALayout>(m, kb, split);
  auto it = layouts.find(op->a.buffer.get());
  if (it != layouts.end() && !(*it->second.layout == *Held(a_layout))) return false;
  Assign(op->a.buffer, Held(a_layout), "T.gemm operand A", op->span);
  *warps = split;
  gemm_plans[op].register_a = true;
  if (target_.IsHopper()) gemm_plans[op].not_wgmma = "a tfloat32 GEMM with A in registers takes mma.sync here";
  return true;
}

/// The warp split `c` must take: one asked of it by an earlier attempt, or that of the mma
/// accumulator layout it already holds from a use other than `op` itself; null when there
/// is none, or when this GEMM's tiles do not fit it (16 x 8 tiles per warp).
std::optional<layout::WarpPartition> FragmentLayoutInference::HeldSplit(const Buffer& c, const GemmOp* op) {
  int64_t m = 0, n = 0;
  auto fits = [&](const layout::WarpPartition& w) {
    return IsWhole2D(op->c, &m, &n) && w.warps_m * w.warps_n * kWarpSize == num_threads_ && m % (16 * w.warps_m) == 0 &&
           n % (8 * w.warps_n) == 0;
  };
  auto pref = preferred_split.find(c.get());
  if (pref != preferred_split.end() && fits(pref->second)) return pref->second;
  auto it = layouts.find(c.get());
  if (it == layouts.end() || it->second.span.line == op->span.line) return std::nullopt;
  if (it->second.layout->first_thread() != first_thread_) return std::nullopt;
  const auto* mma = dynamic_cast<const MmaAccumulatorLayout*>(it->second.layout->Base());
  if (mma && fits(mma->warps())) return mma->warps();
  return std::nullopt;
}

/// A register fragment the tensor cores cannot read as A in place is written to a shared
/// tile (or stays in the shared memory it was kept in) and read from there by ldmatrix +
/// mma.sync (instead of per-element loops): the types gemm_ss's tensor cores take
/// (MmaSyncUnfit), whole A with 16-byte rows, C split over the warps as usual.
/// Clears *why when it applies; otherwise adds why mma.sync does not apply either.
void FragmentLayoutInference::StageA(const GemmOp* op, int64_t m, int64_t n, layout::WarpPartition* warps, std::string* why) {
  int64_t ra = 0, ca = 0;
  std::string unfit = MmaSyncUnfit(op, wgmma_.f16_acc_mma);
  if (!unfit.empty()) {
    *why += "; nor through shared memory: " + unfit;
    return;
  }
  if (!IsWhole2D(op->a, &ra, &ca) || (ca * op->a.buffer->dtype.bytes()) % 16) return;
  if (auto held = HeldSplit(op->c.buffer, op)) {
    *warps = *held;
  } else if (!layout::PartitionWarps(m, n, num_threads_ / kWarpSize, op->policy, warps)) {
    return;
  }
  gemm_plans[op].staged_a = true;
  gemm_plans[op].wgmma = false;
  if (target_.IsHopper()) gemm_plans[op].not_wgmma = "operand A is a register fragment, staged through shared memory";
  why->clear();
}

/// The accumulator split of a wgmma GEMM with M rows: warps M/16 x (warpgroups per
/// 64-row block), in the m-fastest order (warpgroup g at rows 64 (g % (M/64)), columns
/// part g / (M/64)); false when the block's warpgroups do not divide over the rows.
/// Fewer warpgroups than 64-row blocks each own several blocks: warps 4 x warpgroups,
/// with interleaved rows (block r of warpgroup g is rows 64 (r warpgroups + g)).
bool FragmentLayoutInference::WgmmaPartition(int64_t m, layout::WarpPartition* out) const {
  const int64_t wgs = num_threads_ / 128, blocks = m / 64;
  if (m <= 0 || m % 64 || num_threads_ % 128) return false;
  if (wgs % blocks == 0) {
    *out = layout::WarpPartition{m / 16, wgs / blocks, true}.Normalized();
  } else if (blocks % wgs == 0) {
    *out = layout::WarpPartition{4 * wgs, 1, false, true};
  } else {
    return false;
  }
  return true;
}

bool FragmentLayoutInference::UseWgmma(const GemmOp* op) {
  if (!target_.IsHopper()) return false;
  std::string why = cuda::WgmmaUnfit(op, num_threads_, target_, false, nullptr, wgmma_);
  if (why.empty()) {
    gemm_plans[op].wgmma = true;
    return true;
  }
  gemm_plans[op].not_wgmma = why;
  return false;
}

}  // namespace tl::transform::cuda
