// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-launch-bounds": T.annotate_min_blocks_per_sm(n) (the pass config
/// "tl.min_blocks_per_sm", which the front end sets for the function) becomes a marker at
/// the top of each kernel launch's body, which the code generator reads as the second
/// argument of __launch_bounds__ (launch_facts.h MinBlocksPerSm). The marker is a launch
/// fact, not code: nothing is emitted for it. The pass config "tl.raster_panel" = n (0: the
/// plain block order) likewise becomes a T.use_swizzle(n) marker for launches whose source
/// did not ask for one, in place of the automatic choice; the panel width decided from
/// either (RasterPanels) is a kRasterPanelAttr marker, which codegen prints as the block
/// order. "tl.loop_terms_apart" becomes a marker too (kLoopTermsApartAttr): how addresses
/// print. "tl.tma_cache_hint" (none, evict_normal, evict_first, evict_last) becomes the
/// kTmaCacheHintAttr marker: the L2 policy every TMA load of the kernel carries.
/// (target/cuda_attrs.h lists the markers.)
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "raster_panel.h"
#include "shared_plan.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

/// Puts `key`(n) at the top of each kernel launch's body (unless `unless_present` and the
/// body already holds such a marker at its top level).
class Marker : public IRMutator {
 public:
  Marker(std::string key, int64_t n, bool unless_present) : key_(std::move(key)), n_(n), unless_present_(unless_present) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    if (unless_present_ && HasMarker(op->body)) return self;
    Stmt mark = AttrStmt::Make(key_, {MakeInt(n_)}, op->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, Seq::Make({mark, op->body}, op->span),
                              op->span);
  }

 private:
  bool HasMarker(const Stmt& s) const {
    if (const auto* attr = As<AttrStmt>(s)) return attr->key == key_;
    if (const auto* seq = As<Seq>(s)) {
      for (const Stmt& c : seq->stmts) {
        if (HasMarker(c)) return true;
      }
    }
    if (const auto* f = As<For>(s)) return f->for_kind == ForKind::kThreadBinding && HasMarker(f->body);
    return false;
  }
  std::string key_;
  int64_t n_;
  bool unless_present_;
};

/// Block rasterization, decided here and written as a kRasterPanelAttr marker for codegen
/// (the decision: RasterPanelWidth, raster_panel.h).
class RasterPanels : public IRMutator {
 public:
  /// `tensor_bytes`: the kernel's tensor parameters together, -1 when a shape is not
  /// constant; `l2_bytes`: the target's L2, 0 when not known.
  RasterPanels(int64_t tensor_bytes, int64_t l2_bytes, std::vector<std::string>* remarks)
      : tensor_bytes_(tensor_bytes), l2_bytes_(l2_bytes), remarks_(remarks) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    int64_t panel = cuda::RasterPanelWidth(op, -1, tensor_bytes_, l2_bytes_, remarks_);
    if (panel <= 0) return self;
    Stmt mark = AttrStmt::Make(cuda::kRasterPanelAttr, {MakeInt(panel)}, op->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, Seq::Make({mark, op->body}, op->span),
                              op->span);
  }

 private:
  const int64_t tensor_bytes_;
  const int64_t l2_bytes_;
  std::vector<std::string>* remarks_;
};

/// tl.tma_cache_hint's policy as the marker's number (0: none), or nullopt when unset.
std::optional<int64_t> TmaCacheHintConfig(const PassContext& ctx, const ir::PrimFunc& f) {
  auto it = ctx.config.find("tl.tma_cache_hint");
  if (it == ctx.config.end()) return std::nullopt;
  static const char* const kNames[] = {"none", "evict_normal", "evict_first", "evict_last"};
  for (int64_t k = 0; k < 4; ++k) {
    if (it->second == kNames[k]) return k;
  }
  TL_USER_ERROR(f->span) << "tl.tma_cache_hint must be one of none, evict_normal, evict_first, evict_last, got '"
                         << it->second << "'";
  return std::nullopt;
}

}  // namespace

ir::PrimFunc CudaLaunchBounds(const ir::PrimFunc& f, PassContext& ctx) {
  Stmt body = f->body;
  constexpr int64_t kMost = std::numeric_limits<int64_t>::max();
  if (auto n = ConfigInt(ctx, "tl.min_blocks_per_sm", 1, kMost, f->span, "a positive integer")) {
    body = Marker(cuda::kMinBlocksPerSmAttr, *n, false).Mutate(body);
  }
  if (ConfigOn(ctx, "tl.loop_terms_apart", true)) body = Marker(cuda::kLoopTermsApartAttr, 1, false).Mutate(body);
  if (auto n = ConfigInt(ctx, "tl.raster_panel", 0, kMost, f->span, "a non-negative integer (0: the plain block order)")) {
    body = Marker("threadblock_swizzle", *n, true).Mutate(body);
  }
  body = RasterPanels(cuda::TensorBytes(f), ctx.TargetsCuda() ? ctx.Cuda().L2Bytes() : 0, &ctx.remarks).Mutate(body);
  if (auto hint = TmaCacheHintConfig(ctx, f); hint && *hint != 0) {
    body = Marker(cuda::kTmaCacheHintAttr, *hint, false).Mutate(body);
  }
  return body == f->body ? f : ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-launch-bounds", CudaLaunchBounds);

}  // namespace tl::transform
