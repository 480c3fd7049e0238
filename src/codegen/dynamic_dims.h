// SPDX-License-Identifier: Apache-2.0
/// \file The symbolic sizes of a kernel's parameters, in the order both code generators bind
/// them at launch (a dimension that is a variable, then variables inside dimension
/// expressions, then symbolic strides).
#pragma once

#include <functional>
#include <vector>

#include "tl/ir/functor.h"

namespace tl::codegen {

/// A symbolic variable of the parameters' shapes, with the first (parameter, dimension)
/// that mentions it: a dimension that is the variable itself (`M`) comes first; then the
/// variables that only appear inside a dimension's expression (`n * 4 + 1`), which the
/// runtime solves for from the tensor's size.
struct DynamicDimVar {
  const ir::Var* var;
  ir::VarRef ref;
  int param, dim;
  bool stride;  ///< read from params[param]'s stride `dim` (T.StridedTensor), not its shape
};

inline std::vector<DynamicDimVar> DynamicDimVars(const ir::PrimFunc& f,
                                                 const std::function<bool(const ir::Var*)>& known) {
  std::vector<DynamicDimVar> out;
  auto seen = [&](const ir::Var* v) {
    if (known(v)) return true;
    for (const DynamicDimVar& d : out) {
      if (d.var == v) return true;
    }
    return false;
  };
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t pi = 0; pi < f->params.size(); ++pi) {
      const ir::Buffer& b = f->params[pi].buffer;
      if (!b) continue;
      for (size_t d = 0; d < b->shape.size(); ++d) {
        const ir::Expr& e = b->shape[d];
        std::vector<ir::VarRef> vars;
        if (pass == 0) {
          if (e->kind == ir::NodeKind::kVar) vars.push_back(std::static_pointer_cast<const ir::Var>(e));
        } else if (e->kind != ir::NodeKind::kVar) {
          struct Collect : ir::IRVisitor {
            std::vector<ir::VarRef>* out;
            void Visit(const ir::Expr& x) override {
              if (x && x->kind == ir::NodeKind::kVar) out->push_back(std::static_pointer_cast<const ir::Var>(x));
              ir::IRVisitor::Visit(x);
            }
          } c;
          c.out = &vars;
          c.Visit(e);
        }
        for (const ir::VarRef& v : vars) {
          if (!seen(v.get())) out.push_back({v.get(), v, static_cast<int>(pi), static_cast<int>(d), false});
        }
      }
    }
  }
  // Then symbolic strides (T.StridedTensor((m, n), (s, 1))): bound from the argument's
  // strides, after every size, as the runtime binds sizes first.
  for (size_t pi = 0; pi < f->params.size(); ++pi) {
    const ir::Buffer& b = f->params[pi].buffer;
    if (!b) continue;
    for (size_t d = 0; d < b->strides.size(); ++d) {
      const ir::Expr& e = b->strides[d];
      if (e->kind != ir::NodeKind::kVar) continue;
      const auto* v = static_cast<const ir::Var*>(e.get());
      if (!seen(v)) {
        out.push_back({v, std::static_pointer_cast<const ir::Var>(e), static_cast<int>(pi), static_cast<int>(d), true});
      }
    }
  }
  return out;
}

}  // namespace tl::codegen
