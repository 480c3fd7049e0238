// SPDX-License-Identifier: Apache-2.0
/// \file The "simplify" pass: arith::Simplify over a function body.
#include "tl/arith/simplify.h"
#include "tl/transform/passes.h"

namespace tl::transform {

ir::PrimFunc Simplify(const ir::PrimFunc& f, PassContext& ctx) {
  ir::Stmt body = arith::Simplify(f->body);
  if (body == f->body) return f;
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("simplify", Simplify);

}  // namespace tl::transform
