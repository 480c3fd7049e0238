// SPDX-License-Identifier: Apache-2.0
/// \file The register layouts the CUDA lowering chose for a kernel's fragments, as tables
/// (which thread and register hold each element), for tilelang.tools.plot_layout and for
/// users who want to see them. Runs the CUDA pipeline's passes up to layout inference.
#include <map>
#include <string>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"
#include "fragment_inference.h"
#include "pass_helpers.h"
#include "thread_binding.h"

namespace tl::transform {

std::vector<FragmentTable> DescribeFragmentLayouts(const ir::PrimFunc& f, PassContext& ctx) {
  using namespace ir;  // NOLINT: implementation file
  PrimFunc g = PrepareForCudaFragments(f, ctx);
  cuda::ThreadBinding tb = cuda::GetThreadBinding(g->body, "describe-fragment-layouts");
  cuda::FragmentLayouts inferred = cuda::InferFragmentLayouts(g->body, tb.threads, ctx.Cuda(), cuda::WgmmaOptionsOf(ctx));
  std::map<std::string, FragmentTable> by_name;  // sorted, so the order is stable
  arith::Analyzer an;
  for (const auto& [buffer, assigned] : inferred.layouts) {
    const layout::FragmentLayout& lay = *assigned.layout;
    FragmentTable t;
    t.name = buffer->name;
    t.layout = lay.ToString();
    t.origin = assigned.origin;
    t.rows = lay.m();
    t.cols = lay.is_rows() ? 1 : lay.n();
    t.threads = lay.num_threads();
    t.locals = lay.num_local();
    t.thread.assign(t.rows * t.cols, -1);
    t.local.assign(t.rows * t.cols, -1);
    t.replicas.assign(t.rows * t.cols, 0);
    for (int64_t th = 0; th < t.threads; ++th) {
      for (int64_t l = 0; l < t.locals; ++l) {
        auto [i, j] = lay.Inverse(MakeInt(th), MakeInt(l));
        int64_t ii = -1, jj = 0;
        if (!AsConstInt(an.Simplify(i), &ii) || (!lay.is_rows() && !AsConstInt(an.Simplify(j), &jj))) continue;
        if (ii < 0 || ii >= t.rows || jj < 0 || jj >= t.cols) continue;
        int64_t at = ii * t.cols + jj;
        if (t.thread[at] < 0) {
          t.thread[at] = th;
          t.local[at] = l;
        }
        ++t.replicas[at];
      }
    }
    by_name[t.name] = std::move(t);
  }
  std::vector<FragmentTable> out;
  for (auto& [name, t] : by_name) out.push_back(std::move(t));
  return out;
}

}  // namespace tl::transform
