// SPDX-License-Identifier: Apache-2.0
/// \file "cuda-pipeline": T.Pipelined(n, num_stages=s) as an s-stage cp.async pipeline.
///
/// The copies global -> shared that open the loop body are the producers; the rest of
/// the body consumes. Each produced shared buffer gets a leading stage dimension of size s.
///
///   for p in [0, s-1):  if p < n: produce(p) into stage p;  commit
///   for k in [0, n):
///     wait until at most s-2 groups are pending; __syncthreads
///     if k + s - 1 < n: produce(k + s - 1) into stage (k + s - 1) % s
///     commit                      (an empty group when nothing was issued keeps counts uniform)
///     consume(k) from stage k % s
///   wait for all groups
///
/// The barrier at the top of iteration k orders every thread's reads of stage (k-1) % s
/// (consumed in k-1) before it is refilled, and makes the copies of stage k visible.
/// Correct for any n, including n < s and n = 0. Loops that do not fit this shape run in
/// order, and the reason is recorded.
#include <unordered_map>
#include <unordered_set>

#include "copy_lowering.h"
#include "thread_binding.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/transform/passes.h"

namespace tl::transform {
namespace {

using namespace ir;  // NOLINT: implementation file

std::vector<Stmt> Flatten(const Stmt& s) {
  if (const auto* seq = As<Seq>(s)) return seq->stmts;
  return {s};
}

int64_t NumStages(const For* op) {
  auto it = op->annotations.find("num_stages");
  int64_t s = 0;
  if (it != op->annotations.end()) AsConstInt(it->second, &s);
  return s;
}

bool IsProducer(const Stmt& s) {
  const auto* c = As<CopyOp>(s);
  return c && c->src.buffer->scope == Scope::kGlobal && c->dst.buffer->scope == Scope::kShared;
}

/// Buffers written by a statement (stores and tile-op destinations).
struct WriteCollector : IRVisitor {
  std::unordered_set<const BufferNode*> writes;
  void Visit_(const BufferStore* op) override {
    writes.insert(op->buffer.get());
    IRVisitor::Visit_(op);
  }
  void Visit_(const CopyOp* op) override { writes.insert(op->dst.buffer.get()); }
  void Visit_(const FillOp* op) override { writes.insert(op->dst.buffer.get()); }
  void Visit_(const ReduceOp* op) override { writes.insert(op->dst.buffer.get()); }
};

/// Whether an expression reads only variables and constants (no buffer loads), so that it
/// can be evaluated ahead of the statements before it.
bool IsPure(const Region& r) {
  bool pure = true;
  for (const Range& rg : r.ranges) {
    for (const Expr& e : {rg.min, rg.extent}) {
      struct LoadFinder : IRVisitor {
        bool found = false;
        void Visit_(const BufferLoad*) override { found = true; }
      } f;
      f.Visit(e);
      pure = pure && !f.found;
    }
  }
  return pure;
}

/// Variables defined inside the loop body (lets): a producer hoisted to the top of the
/// body cannot use them.
std::unordered_set<const Var*> DefinedIn(const std::vector<Stmt>& stmts) {
  std::unordered_set<const Var*> out;
  for (const Stmt& s : stmts) {
    if (const auto* let = As<LetStmt>(s)) out.insert(let->var.get());
  }
  return out;
}

bool Mentions(const Region& r, const std::unordered_set<const Var*>& vars) {
  bool found = false;
  for (const Range& rg : r.ranges) {
    for (const Expr& e : {rg.min, rg.extent}) {
      struct VarFinder : IRVisitor {
        const std::unordered_set<const Var*>* vars;
        bool* found;
        void Visit_(const Var* v) override {
          if (vars->count(v)) *found = true;
        }
      } f;
      f.vars = &vars;
      f.found = &found;
      f.Visit(e);
    }
  }
  return found;
}

/// The producers of a pipelined loop: copies global -> shared of the loop body's top
/// level whose regions depend only on the loop variable and values from outside the loop,
/// and whose shared buffer nothing else in the loop writes. They are prefetched, so they
/// may sit anywhere in the body. Empty when the loop cannot be pipelined.
std::vector<const CopyOp*> Producers(const For* op, std::string* why) {
  auto stmts = Flatten(op->body);
  auto defined = DefinedIn(stmts);
  std::vector<const CopyOp*> producers;
  WriteCollector rest;
  std::unordered_set<const BufferNode*> read_so_far;  // statements before may not read it
  for (const Stmt& s : stmts) {
    const auto* c = As<CopyOp>(s);
    if (IsProducer(s) && IsPure(c->src) && IsPure(c->dst) && !Mentions(c->src, defined) &&
        !Mentions(c->dst, defined) && !read_so_far.count(c->dst.buffer.get())) {
      producers.push_back(c);
    } else {
      rest.Visit(s);
    }
    ForEachExpr(s, [&](const Expr& e) {
      if (const auto* load = As<BufferLoad>(e)) read_so_far.insert(load->buffer.get());
    });
    if (const auto* g = As<GemmOp>(s)) {
      read_so_far.insert(g->a.buffer.get());
      read_so_far.insert(g->b.buffer.get());
    }
    if (const auto* cp = As<CopyOp>(s)) read_so_far.insert(cp->src.buffer.get());
  }
  if (producers.empty()) {
    *why = "its body has no copy from global to shared memory that can be prefetched";
    return {};
  }
  std::unordered_set<const BufferNode*> seen;
  std::vector<const CopyOp*> kept;
  for (const CopyOp* c : producers) {
    if (rest.writes.count(c->dst.buffer.get()) || !seen.insert(c->dst.buffer.get()).second) continue;
    kept.push_back(c);
  }
  if (kept.empty()) *why = "its shared buffers are also written elsewhere in the loop";
  return kept;
}

/// In pipelined loops, copies name their tile through values bound earlier in the body
/// (`k0 = ko * bk; T.copy(A[by * bm, k0], A_s)`). Substituting those bindings when they
/// are plain index arithmetic lets such copies be prefetched (and proven aligned).
class InlineIndexLets : public IRMutator {
 protected:
  Stmt Mutate_(const For* op, const Stmt& self) override {
    Stmt inner = IRMutator::Mutate_(op, self);
    const auto* loop = As<For>(inner);
    if (!loop || loop->for_kind != ForKind::kPipelined) return inner;
    std::unordered_map<const Var*, Expr> values;
    auto subst = [&](const Expr& e) {
      return Substitute(e, [&](const Var* v) -> Expr {
        auto it = values.find(v);
        return it == values.end() ? nullptr : it->second;
      });
    };
    std::vector<Stmt> out;
    bool changed = false;
    for (const Stmt& st : Flatten(loop->body)) {
      if (const auto* let = As<LetStmt>(st)) {
        bool pure = true;
        ForEachExpr(st, [&](const Expr& e) { pure &= !As<BufferLoad>(e) && !As<Call>(e); });
        if (pure && let->var->dtype.IsInt()) values[let->var.get()] = subst(let->value);
        out.push_back(st);
        continue;
      }
      const auto* copy = As<CopyOp>(st);
      if (copy && !values.empty()) {
        Region src{copy->src.buffer, {}}, dst{copy->dst.buffer, {}};
        for (const Range& r : copy->src.ranges) src.ranges.push_back({subst(r.min), subst(r.extent)});
        for (const Range& r : copy->dst.ranges) dst.ranges.push_back({subst(r.min), subst(r.extent)});
        out.push_back(CopyOp::Make(src, dst, copy->span));
        changed = true;
        continue;
      }
      out.push_back(st);
    }
    if (!changed) return inner;
    return For::Make(loop->var, loop->min, loop->extent, loop->for_kind, Seq::Make(out, loop->body->span),
                     loop->annotations, loop->span);
  }
};

/// Finds the pipelined loops and decides which shared buffers get stages.
struct Planner : IRVisitor {
  std::unordered_map<const BufferNode*, int64_t> stages;  // buffer -> number of stages
  std::unordered_map<const For*, std::string> rejected;
  void Visit_(const For* op) override {
    if (op->for_kind == ForKind::kPipelined && NumStages(op) >= 2) {
      std::string why;
      auto producers = Producers(op, &why);
      for (const CopyOp* c : producers) stages[c->dst.buffer.get()] = NumStages(op);
      if (producers.empty()) rejected[op] = why;
    }
    IRVisitor::Visit_(op);
  }
};

/// Rewrites accesses of staged buffers to select a stage.
class StageSelector : public IRMutator {
 public:
  StageSelector(const std::unordered_map<const BufferNode*, Buffer>& staged, Expr stage)
      : staged_(staged), stage_(std::move(stage)) {}

  Region MutateRegion(const Region& r) override {
    Region out = IRMutator::MutateRegion(r);
    auto it = staged_.find(r.buffer.get());
    if (it == staged_.end()) return out;
    out.buffer = it->second;
    out.ranges.insert(out.ranges.begin(), Range{stage_, MakeInt(1)});
    return out;
  }

 protected:
  Expr Mutate_(const BufferLoad* op, const Expr& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::Mutate_(op, self);
    bool changed = false;
    auto idx = MutateAll(op->indices, &changed);
    idx.insert(idx.begin(), stage_);
    return BufferLoad::Make(it->second, idx);
  }
  Stmt Mutate_(const BufferStore* op, const Stmt& self) override {
    auto it = staged_.find(op->buffer.get());
    if (it == staged_.end()) return IRMutator::Mutate_(op, self);
    bool changed = false;
    auto idx = MutateAll(op->indices, &changed);
    idx.insert(idx.begin(), stage_);
    return BufferStore::Make(it->second, idx, Mutate(op->value), op->span);
  }

 private:
  const std::unordered_map<const BufferNode*, Buffer>& staged_;
  Expr stage_;
};

Stmt CallStmt(const std::string& name, std::vector<Expr> args, const Span& span) {
  return Evaluate::Make(Call::Make(DType::Void(), name, std::move(args)), span);
}

class Pipeliner : public IRMutator {
 public:
  Pipeliner(const Planner& plan, VarRef tx, int64_t threads, PassContext& ctx)
      : plan_(plan), tx_(std::move(tx)), threads_(threads), ctx_(ctx) {}

 protected:
  Stmt Mutate_(const Allocate* op, const Stmt& self) override {
    auto it = plan_.stages.find(op->buffer.get());
    if (it == plan_.stages.end()) return self;
    const Buffer& b = op->buffer;
    std::vector<Expr> shape = b->shape;
    shape.insert(shape.begin(), MakeInt(it->second));
    Buffer staged = BufferNode::Make(b->name, b->dtype, shape, b->scope);
    staged_[b.get()] = staged;
    return Allocate::Make(staged, op->init, op->span);
  }

  Stmt Mutate_(const For* op, const Stmt& self) override {
    if (op->for_kind != ForKind::kPipelined) return IRMutator::Mutate_(op, self);
    int64_t s = NumStages(op);
    std::string why;
    auto producers = s >= 2 ? Producers(op, &why) : std::vector<const CopyOp*>{};
    if (producers.empty()) {
      if (s >= 2) ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(op->span.line) + ": runs in order (" + why + ")");
      Stmt body = Mutate(op->body);
      return For::Make(op->var, op->min, op->extent, ForKind::kSerial, body, {}, op->span);
    }
    auto stmts = Flatten(op->body);
    std::vector<Stmt> consumers;
    for (const Stmt& st : stmts) {
      bool is_producer = false;
      for (const CopyOp* c : producers) is_producer |= st.get() == c;
      if (!is_producer) consumers.push_back(st);
    }
    const Span& span = op->span;
    Expr n = op->extent;
    auto produce = [&](const Expr& iter, const Expr& stage) {
      std::vector<Stmt> out;
      for (const CopyOp* c : producers) {
        Region src = SubstRegion(c->src, op->var.get(), op->min + iter);
        Region dst = SubstRegion(c->dst, op->var.get(), op->min + iter);
        StageSelector sel(staged_, stage);
        Stmt copy = CopyOp::Make(sel.MutateRegion(src), sel.MutateRegion(dst), c->span);
        Stmt lowered = cuda::LowerCopyPartitioned(As<CopyOp>(copy), tx_, threads_, true, ctx_);
        out.push_back(lowered ? lowered : copy);
      }
      return Seq::Make(out, span);
    };
    std::vector<Stmt> result;
    for (int64_t p = 0; p + 1 < s; ++p) {
      result.push_back(IfThenElse::Make(LT(MakeInt(p), n), produce(MakeInt(p), MakeInt(p)), nullptr, span));
      result.push_back(CallStmt("cp_async_commit", {}, span));
    }
    VarRef k = Var::Make(op->var->name, op->var->dtype);
    Expr next = k + MakeInt(s - 1);
    std::vector<Stmt> body;
    body.push_back(CallStmt("cp_async_wait", {MakeInt(s - 2)}, span));
    body.push_back(CallStmt("syncthreads", {}, span));
    body.push_back(IfThenElse::Make(LT(next, n), produce(next, FloorMod(next, MakeInt(s))), nullptr, span));
    body.push_back(CallStmt("cp_async_commit", {}, span));
    StageSelector consume(staged_, FloorMod(k, MakeInt(s)));
    for (const Stmt& c : consumers) {
      Stmt x = Substitute(Mutate(c), [&](const Var* v) -> Expr { return v == op->var.get() ? op->min + k : nullptr; });
      body.push_back(consume.Mutate(x));
    }
    result.push_back(For::Make(k, MakeInt(0), n, ForKind::kSerial, Seq::Make(body, span), {}, span));
    result.push_back(CallStmt("cp_async_wait", {MakeInt(0)}, span));
    ctx_.remarks.push_back("T.Pipelined at line " + std::to_string(span.line) + ": " + std::to_string(s) +
                           "-stage cp.async pipeline over " + std::to_string(producers.size()) + " copies");
    return Seq::Make(result, span);
  }

 private:
  static Region SubstRegion(const Region& r, const Var* var, const Expr& value) {
    Region out{r.buffer, {}};
    auto f = [&](const Var* v) -> Expr { return v == var ? value : nullptr; };
    for (const Range& rg : r.ranges) out.ranges.push_back({Substitute(rg.min, f), Substitute(rg.extent, f)});
    return out;
  }

  const Planner& plan_;
  VarRef tx_;
  int64_t threads_;
  PassContext& ctx_;
  std::unordered_map<const BufferNode*, Buffer> staged_;
};

}  // namespace

ir::PrimFunc CudaPipeline(const ir::PrimFunc& f, PassContext& ctx) {
  cuda::ThreadBinding tb = cuda::GetThreadBinding(f->body, "cuda-pipeline");
  ir::Stmt body = InlineIndexLets().Mutate(f->body);
  Planner plan;
  plan.Visit(body);
  Pipeliner p(plan, tb.tx, tb.threads, ctx);
  return ir::PrimFuncNode::Make(f->name, f->params, p.Mutate(body), f->span);
}

TL_REGISTER_PASS("cuda-pipeline", CudaPipeline);

}  // namespace tl::transform
