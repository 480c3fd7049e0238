// SPDX-License-Identifier: Apache-2.0
/// \file "raise-parallel-copies": in the body of a T.Pipelined loop, a T.Parallel nest that
/// only copies a global tensor's box into a whole shared tile, element by element,
///
///     for i, k in T.Parallel(M, K):
///         A_shared[i, k] = A[by * M + i, ko * K + k]
///
/// is the tile copy `T.copy(A[by * M : by * M + M, ko * K : ko * K + K], A_shared)`, and
/// becomes one. The pipeliner prefetches tile copies only (cp.async stages, or TMA and a
/// producer warpgroup on sm_90a); written as a loop, the same load ran in order, each
/// iteration waiting for its own tiles (upstream's `example_gemm_intrinsics` ran at 0.58x
/// upstream's speed that way). The meaning is the same: a tile copy reads out-of-range
/// elements as zero, as guard-global-access makes the loop's reads do.
///
/// Raised only where it is exactly a copy: a perfect nest of T.Parallel loops from 0 over
/// the tile's whole shape, one store whose indices are the loop variables in order, a load
/// of the same dtype from a global tensor whose indices are, in the same order, each loop
/// variable plus an offset free of the loop variables (other dimensions loop-free points);
/// not under a branch, and not in a kernel that programs its own barriers.
///
/// Switch `tl.raise_parallel_copies` (on by default, both targets; checked on an H100: the whole
/// CUDA suite passes with it, and upstream's emitter GEMM runs 5% faster). A remark names each
/// nest raised, or, with the switch off, each nest it would raise.
#include <string>
#include <vector>

#include "explicit_barriers.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/op/make.h"
#include "tl/support/error.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

/// The copy a T.Parallel nest is, or null.
Stmt AsTileCopy(const For* outer) {
  std::vector<const For*> loops;
  Stmt body;
  for (const For* f = outer; f; f = As<For>(f->body)) {
    int64_t mn = 1;
    if (f->for_kind != ForKind::kParallel || !AsConstInt(f->min, &mn) || mn != 0) return nullptr;
    loops.push_back(f);
    body = f->body;
  }
  const auto* store = As<BufferStore>(body);
  if (!store || store->buffer->scope != Scope::kShared || store->indices.size() != loops.size()) return nullptr;
  const auto* load = As<BufferLoad>(store->value);
  if (!load || load->buffer->scope != Scope::kGlobal || load->buffer->dtype != store->buffer->dtype) return nullptr;
  const Buffer& dst = store->buffer;
  auto is_loop_var = [&](const Var* v) {
    for (const For* f : loops) {
      if (f->var.get() == v) return true;
    }
    return false;
  };
  for (size_t d = 0; d < loops.size(); ++d) {
    int64_t extent = 0, size = -1;
    if (store->indices[d].get() != loops[d]->var.get() || !AsConstInt(loops[d]->extent, &extent) ||
        !AsConstInt(dst->shape[d], &size) || extent != size) {
      return nullptr;
    }
  }
  // Each global index: loop variable d (the next one, in order) plus a loop-free offset, or
  // a loop-free point.
  op::RegionSpec src{load->buffer, {}, {}}, to{dst, {}, {}};
  arith::Analyzer an;
  size_t next = 0;
  for (const Expr& index : load->indices) {
    if (next < loops.size() && UsesVar(index, [&](const Var* v) { return v == loops[next]->var.get(); })) {
      if (index->dtype != loops[next]->var->dtype) return nullptr;
      Expr offset = an.Simplify(index - loops[next]->var);
      if (UsesVar(offset, is_loop_var)) return nullptr;
      src.mins.push_back(offset);
      src.extents.push_back(loops[next]->extent);
      ++next;
    } else {
      if (UsesVar(index, is_loop_var)) return nullptr;
      src.mins.push_back(index);
      src.extents.push_back(nullptr);
    }
  }
  if (next != loops.size()) return nullptr;
  for (size_t d = 0; d < loops.size(); ++d) {
    to.mins.push_back(MakeInt(0, dst->shape[d]->dtype));
    to.extents.push_back(dst->shape[d]);
  }
  try {
    return op::MakeCopy(src, to, store->span);
  } catch (const CompileError&) {
    return nullptr;  // (not a copy T.copy accepts: the loop stays as written)
  }
}

class Raiser : public IRMutator {
 public:
  explicit Raiser(bool apply) : apply_(apply) {}
  std::vector<int> raised;       ///< lines of the nests made tile copies
  std::vector<int> would_raise;  ///< lines of the nests left as loops because the switch is off

 protected:
  // A kernel that programs its barriers keeps its copies as written (its own schedule).
  Stmt Mutate_(const KernelLaunch* op, const Stmt& self) override {
    return ProgramsBarriers(op->body) ? self : IRMutator::Mutate_(op, self);
  }
  // A pipelined loop under a branch (a warpgroup's role, say) is left as written.
  Stmt Mutate_(const IfThenElse* op, const Stmt& self) override {
    (void)op;
    return self;
  }
  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind == ForKind::kPipelined) {
      ++pipelined_;
      Stmt out = IRMutator::Mutate_(op, self);
      --pipelined_;
      return out;
    }
    if (op->for_kind == ForKind::kParallel) {
      // (a nest inside another T.Parallel is element work of that loop: never a tile op)
      Stmt copy = pipelined_ ? AsTileCopy(op) : nullptr;
      if (!copy) return self;
      (apply_ ? raised : would_raise).push_back(op->span.line);
      return apply_ ? copy : self;
    }
    return IRMutator::Mutate_(op, self);
  }

 private:
  bool apply_;
  int pipelined_ = 0;
};

}  // namespace

ir::PrimFunc RaiseParallelCopies(const ir::PrimFunc& f, PassContext& ctx) {
  Raiser raiser(ConfigOn(ctx, "tl.raise_parallel_copies", /*default_on=*/true));
  Stmt body = raiser.Mutate(f->body);
  for (int line : raiser.raised) {
    ctx.remarks.push_back("T.Parallel at line " + std::to_string(line) +
                          ": copies a global box into a shared tile element by element; made that tile copy, "
                          "which the T.Pipelined loop around it can prefetch (tl.raise_parallel_copies=False "
                          "keeps the loop)");
  }
  for (int line : raiser.would_raise) {
    ctx.remarks.push_back("T.Parallel at line " + std::to_string(line) +
                          ": copies a global box into a shared tile element by element, so the T.Pipelined loop "
                          "around it loads in order; tl.raise_parallel_copies=True makes it a tile copy the loop "
                          "prefetches");
  }
  return ir::PrimFuncNode::Make(f->name, f->params, body, f->span);
}

TL_REGISTER_PASS("raise-parallel-copies", RaiseParallelCopies);

}  // namespace tl::transform
