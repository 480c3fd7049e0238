// SPDX-License-Identifier: Apache-2.0
/// \file An IRVisitor that keeps an arith::Analyzer bound to the ranges of the block indices
/// and enclosing loops, so that a pass's scan can bound an index expression where it meets it.
#pragma once

#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"

namespace tl::transform {

class RangedVisitor : public ir::IRVisitor {
 protected:
  void Visit_(const ir::KernelLaunch* op) override {
    for (size_t i = 0; i < op->block_vars.size(); ++i) {
      an_.BindRange(op->block_vars[i].get(), ir::MakeInt(0, op->block_vars[i]->dtype), op->grid[i]);
    }
    ir::IRVisitor::Visit_(op);
  }
  void Visit_(const ir::For* op) override {
    an_.BindRange(op->var.get(), op->min, op->extent);
    ir::IRVisitor::Visit_(op);
    an_.Unbind(op->var.get());
  }

  arith::Analyzer an_;
};

}  // namespace tl::transform
