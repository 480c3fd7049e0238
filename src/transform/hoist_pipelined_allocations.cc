// SPDX-License-Identifier: Apache-2.0
/// \file "hoist-pipelined-allocations": shared tiles allocated inside a T.Pipelined body
/// (`x_s = T.alloc_shared(...)` written in the loop, as upstream's DeepSeek mHC example
/// does) are allocated once, just before the loop. Pipelining issues a stage's loads ahead
/// of its iteration, in a prologue outside the body, so the tiles it stages must exist
/// there; a tile's contents never carry from one iteration to the next (each iteration
/// writes it before reading), so one allocation for all iterations means the same.
/// Allocations whose shape depends on the loop variable stay where they are.
#include <vector>

#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

class Hoister : public IRMutator {
 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt visited = IRMutator::Mutate_(op, self);
    const auto* loop = As<For>(visited);
    if (!loop || loop->for_kind != ForKind::kPipelined) return visited;
    std::vector<Stmt> body = FlattenSeq(loop->body), hoisted;
    std::vector<Stmt> kept;
    for (const Stmt& s : body) {
      const auto* alloc = As<Allocate>(s);
      bool loop_free = alloc && alloc->buffer->scope == Scope::kShared && !alloc->init;
      for (const Expr& d : alloc ? alloc->buffer->shape : std::vector<Expr>{}) {
        loop_free &= !UsesVar(d, [&](const Var* v) { return v == loop->var.get(); });
      }
      (loop_free ? hoisted : kept).push_back(s);
    }
    if (hoisted.empty()) return visited;
    hoisted.push_back(For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(kept, loop->span),
                                loop->annotations, loop->span));
    return Seq::Make(hoisted, loop->span);
  }
};

}  // namespace

ir::PrimFunc HoistPipelinedAllocations(const ir::PrimFunc& f, PassContext& ctx) {
  (void)ctx;
  return ir::PrimFuncNode::Make(f->name, f->params, Hoister().Mutate(f->body), f->span);
}

TL_REGISTER_PASS("hoist-pipelined-allocations", HoistPipelinedAllocations);

}  // namespace tl::transform
