// SPDX-License-Identifier: Apache-2.0
/// \file "drop-unused-params": removes the tensor parameters a kernel body never mentions,
/// as upstream's `tilelang.transform.simplify.apply_simplify` does (its Simplify with
/// simplify_arguments): a program built with an optional input it did not use (a GEMV
/// without its bias) then takes only the tensors it reads or writes. Run on request only
/// (apply_simplify), never in a target pipeline: the launch ABI follows the parameters.
///
/// Conservative: a parameter stays when its name appears anywhere in the printed body (a
/// load, a store, a tile op, a view or an address of it: every use prints the name), and
/// when its shape or strides are not all constants (its dynamic sizes may be bound from it).
#include <regex>
#include <string>
#include <vector>

#include "tl/ir/printer.h"
#include "tl/transform/passes.h"

namespace tl::transform {

using namespace ir;  // NOLINT: implementation file

namespace {

bool AllConstant(const std::vector<Expr>& exprs) {
  int64_t v = 0;
  for (const Expr& e : exprs) {
    if (!AsConstInt(e, &v)) return false;
  }
  return true;
}

}  // namespace

ir::PrimFunc DropUnusedParams(const ir::PrimFunc& f, PassContext& ctx) {
  const std::string body = ToString(f->body);
  std::vector<Param> kept;
  for (const Param& p : f->params) {
    if (p.buffer && AllConstant(p.buffer->shape) && AllConstant(p.buffer->strides)) {
      const std::regex word("(^|[^A-Za-z0-9_])" + p.buffer->name + "([^A-Za-z0-9_]|$)");
      if (!std::regex_search(body, word)) {
        ctx.remarks.push_back("parameter " + p.buffer->name + ": dropped (the body never uses it)");
        continue;
      }
    }
    kept.push_back(p);
  }
  if (kept.size() == f->params.size()) return f;
  return PrimFuncNode::Make(f->name, kept, f->body, f->span);
}

TL_REGISTER_PASS("drop-unused-params", DropUnusedParams);

}  // namespace tl::transform
