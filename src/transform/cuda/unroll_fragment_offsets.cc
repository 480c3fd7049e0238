// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-unroll-fragment-offsets": a short serial loop whose T.Parallel nests index a
/// fragment by the loop's variable is unrolled before the fragments are laid out.
///
/// `for s in range(2): for i, j in T.Parallel(16, D): stage[i, j] = acc[i + s * 16, j]`
/// (sparse MLA backward's split store) walks acc's registers, each at row i + s * 16 of
/// its own; with s a runtime value every register tests its row against the step's window
/// (two branches per register, half of the registers idle, scalar stores). With s a
/// constant per step the window is known when the walk is built: the simplifier folds the
/// tests, and the registers of a row pair share them again (vector stores).
///
/// Only loops that are cheap to copy qualify: a constant trip count of at most
/// kMaxUnrolledSteps, and a body that declares nothing (no allocation, no let) and holds no
/// pipelined loop. Each copy's own loops get fresh variables, so every variable stays bound
/// once. The unrolled loop is a remark; "tl.unroll_fragment_offsets" = false keeps it.
#include <string>
#include <vector>

#include "pass_helpers.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

constexpr int64_t kMaxUnrolledSteps = 8;

/// Whether a T.Parallel nest of the body indexes a fragment by `var`, and whether the body
/// declares anything (which a copy would declare twice in one scope).
class BodySurvey : public IRVisitor {
 public:
  explicit BodySurvey(const Var* var) : var_(var) {}
  bool offsets_fragment = false, declares = false;

 protected:
  void Visit_(const For* op) override {
    if (op->for_kind == ForKind::kPipelined) declares = true;  // its stages are not ours to copy
    bool outer = in_parallel_;
    in_parallel_ |= op->for_kind == ForKind::kParallel;
    IRVisitor::Visit_(op);
    in_parallel_ = outer;
  }
  void Visit_(const LetStmt* op) override {
    declares = true;
    IRVisitor::Visit_(op);
  }
  void Visit_(const Allocate* op) override {
    declares = true;
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferLoad* op) override {
    Check(op->buffer, op->indices);
    IRVisitor::Visit_(op);
  }
  void Visit_(const BufferStore* op) override {
    Check(op->buffer, op->indices);
    IRVisitor::Visit_(op);
  }

 private:
  void Check(const Buffer& b, const std::vector<Expr>& indices) {
    if (!in_parallel_ || b->scope != Scope::kFragment) return;
    for (const Expr& i : indices) {
      if (UsesVar(i, [&](const Var* v) { return v == var_; })) offsets_fragment = true;
    }
  }
  const Var* var_;
  bool in_parallel_ = false;
};

/// A copy of a statement in which every loop binds a fresh variable.
class FreshLoops : public IRMutator {
 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    (void)self;
    VarRef fresh = Var::Make(op->var->name, op->var->dtype);
    Stmt body = Substitute(op->body, [&](const Var* v) -> Expr { return v == op->var.get() ? Expr(fresh) : nullptr; });
    return For::Make(fresh, op->min, op->extent, op->for_kind, Mutate(body), op->annotations, op->span);
  }
};

class Unroller : public IRMutator {
 public:
  explicit Unroller(PassContext& ctx) : ctx_(ctx) {}

 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt visited = IRMutator::Mutate_(op, self);
    const auto* loop = As<For>(visited);
    int64_t min = 0, extent = 0;
    if (!loop || (loop->for_kind != ForKind::kSerial && loop->for_kind != ForKind::kUnrolled) || !AsConstInt(loop->min, &min) ||
        !AsConstInt(loop->extent, &extent) || extent < 1 || extent > kMaxUnrolledSteps) {
      return visited;
    }
    BodySurvey survey(loop->var.get());
    survey.Visit(loop->body);
    if (!survey.offsets_fragment || survey.declares) return visited;
    std::vector<Stmt> steps;
    for (int64_t k = min; k < min + extent; ++k) {
      Stmt step = Substitute(loop->body, [&](const Var* v) -> Expr {
        return v == loop->var.get() ? MakeInt(k, loop->var->dtype) : nullptr;
      });
      steps.push_back(FreshLoops().Mutate(step));
    }
    ctx_.remarks.push_back("loop " + loop->var->name + " at line " + std::to_string(loop->span.line) + " unrolled (" +
                           std::to_string(extent) + " steps): its T.Parallel nests offset a fragment by " +
                           loop->var->name + ", a constant in each step");
    return Seq::Make(steps, loop->span);
  }

 private:
  PassContext& ctx_;
};

}  // namespace

ir::PrimFunc CudaUnrollFragmentOffsets(const ir::PrimFunc& f, PassContext& ctx) {
  if (!cuda::ConfigOn(ctx, "tl.unroll_fragment_offsets", /*default_on=*/true)) return f;
  Stmt body = Unroller(ctx).Mutate(f->body);
  return body == f->body ? f : ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("cuda-unroll-fragment-offsets", CudaUnrollFragmentOffsets);

}  // namespace tl::transform
