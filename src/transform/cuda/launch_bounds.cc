// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-launch-bounds": T.annotate_min_blocks_per_sm(n) (the pass config
/// "tl.min_blocks_per_sm", which the front end sets for the function) becomes a marker at
/// the top of each kernel launch's body, which the code generator reads as the second
/// argument of __launch_bounds__ (launch_facts.h MinBlocksPerSm). The marker is a launch
/// fact, not code: nothing is emitted for it.
#include <string>

#include "shared_plan.h"
#include "tl/ir/functor.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Marker : public IRMutator {
 public:
  explicit Marker(int64_t n) : n_(n) {}

 protected:
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    Stmt mark = AttrStmt::Make(cuda::kMinBlocksPerSmAttr, {MakeInt(n_)}, op->span);
    return KernelLaunch::Make(op->grid, op->block_vars, op->threads, Seq::Make({mark, op->body}, op->span),
                              op->span);
  }

 private:
  int64_t n_;
};

}  // namespace

ir::PrimFunc CudaLaunchBounds(const ir::PrimFunc& f, PassContext& ctx) {
  auto it = ctx.config.find("tl.min_blocks_per_sm");
  if (it == ctx.config.end()) return f;
  int64_t n = 0;
  try {
    n = std::stoll(it->second);
  } catch (const std::exception&) {
    n = 0;
  }
  if (n < 1) TL_USER_ERROR(f->span) << "tl.min_blocks_per_sm must be a positive integer, got '" << it->second << "'";
  return ir::PrimFuncNode::Make(f->name, f->params, Marker(n).Mutate(f->body), f->span);
}

TL_REGISTER_PASS("cuda-launch-bounds", CudaLaunchBounds);

}  // namespace tl::transform
