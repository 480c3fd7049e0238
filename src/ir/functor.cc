// SPDX-License-Identifier: Apache-2.0
/// \file Default traversals for IRVisitor and IRMutator, and Substitute on top of them.
#include "tl/ir/functor.h"

namespace tl::ir {

// ---------------------------------------------------------------- visitor

void IRVisitor::Visit(const Expr& e) {
  if (!e) return;
  switch (e->kind) {
#define TL_EXPR_NODE(Name)                           \
  case NodeKind::k##Name:                            \
    Visit_(static_cast<const Name*>(e.get()));       \
    return;
#include "tl/ir/node_kinds.def"
    default: TL_ICHECK(false) << "statement kind in expression visitor";
  }
}

void IRVisitor::Visit(const Stmt& s) {
  if (!s) return;
  switch (s->kind) {
#define TL_STMT_NODE(Name)                           \
  case NodeKind::k##Name:                            \
    Visit_(static_cast<const Name*>(s.get()));       \
    return;
#include "tl/ir/node_kinds.def"
    default: TL_ICHECK(false) << "expression kind in statement visitor";
  }
}

void IRVisitor::VisitRegion(const Region& r) {
  for (const Range& rg : r.ranges) {
    Visit(rg.min);
    Visit(rg.extent);
  }
}

void IRVisitor::Visit_(const IntImm*) {}
void IRVisitor::Visit_(const FloatImm*) {}
void IRVisitor::Visit_(const Var*) {}
void IRVisitor::Visit_(const Binary* op) { Visit(op->a); Visit(op->b); }
void IRVisitor::Visit_(const Not* op) { Visit(op->a); }
void IRVisitor::Visit_(const Select* op) { Visit(op->cond); Visit(op->t); Visit(op->f); }
void IRVisitor::Visit_(const Cast* op) { Visit(op->value); }
void IRVisitor::Visit_(const Call* op) { for (const Expr& a : op->args) Visit(a); }
void IRVisitor::Visit_(const BufferLoad* op) { for (const Expr& i : op->indices) Visit(i); }

void IRVisitor::Visit_(const For* op) { Visit(op->min); Visit(op->extent); Visit(op->body); }
void IRVisitor::Visit_(const While* op) { Visit(op->cond); Visit(op->body); }
void IRVisitor::Visit_(const IfThenElse* op) {
  Visit(op->cond);
  Visit(op->then_case);
  Visit(op->else_case);
}
void IRVisitor::Visit_(const Seq* op) { for (const Stmt& s : op->stmts) Visit(s); }
void IRVisitor::Visit_(const LetStmt* op) { Visit(op->value); }
void IRVisitor::Visit_(const BufferStore* op) {
  for (const Expr& i : op->indices) Visit(i);
  Visit(op->value);
}
void IRVisitor::Visit_(const Allocate* op) { Visit(op->init); }
void IRVisitor::Visit_(const Evaluate* op) { Visit(op->value); }
void IRVisitor::Visit_(const AttrStmt* op) { for (const Expr& v : op->values) Visit(v); }
void IRVisitor::Visit_(const Break*) {}
void IRVisitor::Visit_(const Continue*) {}
void IRVisitor::Visit_(const KernelLaunch* op) {
  for (const Expr& g : op->grid) Visit(g);
  Visit(op->body);
}
void IRVisitor::Visit_(const CopyOp* op) { VisitRegion(op->src); VisitRegion(op->dst); }
void IRVisitor::Visit_(const GemmOp* op) {
  VisitRegion(op->a);
  VisitRegion(op->b);
  VisitRegion(op->c);
  Visit(op->clear_accum);
}
void IRVisitor::Visit_(const FillOp* op) { VisitRegion(op->dst); Visit(op->value); }
void IRVisitor::Visit_(const ReduceOp* op) { VisitRegion(op->src); VisitRegion(op->dst); }
void IRVisitor::Visit_(const AtomicOp* op) {
  VisitRegion(op->dst);
  if (op->src.buffer) VisitRegion(op->src);
  Visit(op->value);
}

// ---------------------------------------------------------------- mutator

Expr IRMutator::Mutate(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
#define TL_EXPR_NODE(Name) \
  case NodeKind::k##Name:  \
    return Mutate_(static_cast<const Name*>(e.get()), e);
#include "tl/ir/node_kinds.def"
    default: TL_ICHECK(false) << "statement kind in expression mutator";
  }
  return e;
}

Stmt IRMutator::Mutate(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
#define TL_STMT_NODE(Name) \
  case NodeKind::k##Name:  \
    return Mutate_(static_cast<const Name*>(s.get()), s);
#include "tl/ir/node_kinds.def"
    default: TL_ICHECK(false) << "expression kind in statement mutator";
  }
  return s;
}

std::vector<Expr> IRMutator::MutateAll(const std::vector<Expr>& v, bool* changed) {
  std::vector<Expr> out;
  out.reserve(v.size());
  for (const Expr& e : v) {
    out.push_back(Mutate(e));
    if (out.back() != e) *changed = true;
  }
  return out;
}

Region IRMutator::MutateRegion(const Region& r) {
  Region out{MutateBuffer(r.buffer), {}};
  for (const Range& rg : r.ranges) out.ranges.push_back({Mutate(rg.min), Mutate(rg.extent)});
  return out;
}

namespace {
bool SameRegion(const Region& a, const Region& b) {
  if (a.buffer != b.buffer || a.ranges.size() != b.ranges.size()) return false;
  for (size_t i = 0; i < a.ranges.size(); ++i) {
    if (a.ranges[i].min != b.ranges[i].min || a.ranges[i].extent != b.ranges[i].extent) return false;
  }
  return true;
}
}  // namespace

Expr IRMutator::Mutate_(const IntImm*, const Expr& self) { return self; }
Expr IRMutator::Mutate_(const FloatImm*, const Expr& self) { return self; }
Expr IRMutator::Mutate_(const Var*, const Expr& self) { return self; }
Expr IRMutator::Mutate_(const Binary* op, const Expr& self) {
  Expr a = Mutate(op->a), b = Mutate(op->b);
  if (a == op->a && b == op->b) return self;
  return Binary::Make(op->op, a, b);
}
Expr IRMutator::Mutate_(const Not* op, const Expr& self) {
  Expr a = Mutate(op->a);
  return a == op->a ? self : Not::Make(a);
}
Expr IRMutator::Mutate_(const Select* op, const Expr& self) {
  Expr c = Mutate(op->cond), t = Mutate(op->t), f = Mutate(op->f);
  if (c == op->cond && t == op->t && f == op->f) return self;
  return Select::Make(c, t, f);
}
Expr IRMutator::Mutate_(const Cast* op, const Expr& self) {
  Expr v = Mutate(op->value);
  return v == op->value ? self : Cast::Make(op->dtype, v);
}
Expr IRMutator::Mutate_(const Call* op, const Expr& self) {
  bool changed = false;
  auto args = MutateAll(op->args, &changed);
  return changed ? Call::Make(op->dtype, op->op, args) : self;
}
Expr IRMutator::Mutate_(const BufferLoad* op, const Expr& self) {
  bool changed = false;
  auto idx = MutateAll(op->indices, &changed);
  Buffer b = MutateBuffer(op->buffer);
  if (!changed && b == op->buffer) return self;
  return BufferLoad::Make(b, idx);
}

Stmt IRMutator::Mutate_(const For* op, const Stmt& self) {
  Expr mn = Mutate(op->min), ex = Mutate(op->extent);
  Stmt body = Mutate(op->body);
  if (mn == op->min && ex == op->extent && body == op->body) return self;
  return For::Make(op->var, mn, ex, op->for_kind, body, op->annotations, op->span);
}
Stmt IRMutator::Mutate_(const While* op, const Stmt& self) {
  Expr c = Mutate(op->cond);
  Stmt body = Mutate(op->body);
  if (c == op->cond && body == op->body) return self;
  return While::Make(c, body, op->span);
}
Stmt IRMutator::Mutate_(const IfThenElse* op, const Stmt& self) {
  Expr c = Mutate(op->cond);
  Stmt t = Mutate(op->then_case), e = Mutate(op->else_case);
  if (c == op->cond && t == op->then_case && e == op->else_case) return self;
  return IfThenElse::Make(c, t, e, op->span);
}
Stmt IRMutator::Mutate_(const Seq* op, const Stmt& self) {
  bool changed = false;
  std::vector<Stmt> out;
  for (const Stmt& s : op->stmts) {
    out.push_back(Mutate(s));
    if (out.back() != s) changed = true;
  }
  return changed ? Seq::Make(out, op->span) : self;
}
Stmt IRMutator::Mutate_(const LetStmt* op, const Stmt& self) {
  Expr v = Mutate(op->value);
  return v == op->value ? self : LetStmt::Make(op->var, v, op->span);
}
Stmt IRMutator::Mutate_(const BufferStore* op, const Stmt& self) {
  bool changed = false;
  auto idx = MutateAll(op->indices, &changed);
  Expr v = Mutate(op->value);
  Buffer b = MutateBuffer(op->buffer);
  if (!changed && v == op->value && b == op->buffer) return self;
  return BufferStore::Make(b, idx, v, op->span);
}
Stmt IRMutator::Mutate_(const Allocate* op, const Stmt& self) {
  Expr init = Mutate(op->init);
  Buffer b = MutateBuffer(op->buffer);
  if (init == op->init && b == op->buffer) return self;
  return Allocate::Make(b, init, op->span);
}
Stmt IRMutator::Mutate_(const Evaluate* op, const Stmt& self) {
  Expr v = Mutate(op->value);
  return v == op->value ? self : Evaluate::Make(v, op->span);
}
Stmt IRMutator::Mutate_(const AttrStmt* op, const Stmt& self) {
  bool changed = false;
  auto v = MutateAll(op->values, &changed);
  return changed ? AttrStmt::Make(op->key, v, op->span) : self;
}
Stmt IRMutator::Mutate_(const Break*, const Stmt& self) { return self; }
Stmt IRMutator::Mutate_(const Continue*, const Stmt& self) { return self; }
Stmt IRMutator::Mutate_(const KernelLaunch* op, const Stmt& self) {
  bool changed = false;
  auto grid = MutateAll(op->grid, &changed);
  Stmt body = Mutate(op->body);
  if (!changed && body == op->body) return self;
  return KernelLaunch::Make(grid, op->block_vars, op->threads, body, op->span);
}
Stmt IRMutator::Mutate_(const CopyOp* op, const Stmt& self) {
  Region s = MutateRegion(op->src), d = MutateRegion(op->dst);
  if (SameRegion(s, op->src) && SameRegion(d, op->dst)) return self;
  return CopyOp::Make(s, d, op->span, op->disable_tma);
}
Stmt IRMutator::Mutate_(const GemmOp* op, const Stmt& self) {
  Region a = MutateRegion(op->a), b = MutateRegion(op->b), c = MutateRegion(op->c);
  Expr clr = Mutate(op->clear_accum);
  if (SameRegion(a, op->a) && SameRegion(b, op->b) && SameRegion(c, op->c) &&
      clr == op->clear_accum) {
    return self;
  }
  return GemmOp::Make(a, b, c, op->trans_a, op->trans_b, op->policy, clr, op->span, op->tf32,
                      op->async_wgmma);
}
Stmt IRMutator::Mutate_(const FillOp* op, const Stmt& self) {
  Region d = MutateRegion(op->dst);
  Expr v = Mutate(op->value);
  if (SameRegion(d, op->dst) && v == op->value) return self;
  return FillOp::Make(d, v, op->span);
}
Stmt IRMutator::Mutate_(const ReduceOp* op, const Stmt& self) {
  Region s = MutateRegion(op->src), d = MutateRegion(op->dst);
  if (SameRegion(s, op->src) && SameRegion(d, op->dst)) return self;
  return ReduceOp::Make(s, d, op->reduce_kind, op->dim, op->clear, op->span);
}
Stmt IRMutator::Mutate_(const AtomicOp* op, const Stmt& self) {
  Region d = MutateRegion(op->dst);
  Region s = op->src.buffer ? MutateRegion(op->src) : op->src;
  Expr v = Mutate(op->value);
  if (SameRegion(d, op->dst) && SameRegion(s, op->src) && v == op->value) return self;
  return AtomicOp::Make(op->atomic_kind, d, s, v, op->span);
}

// ---------------------------------------------------------------- helpers

namespace {
class Substituter : public IRMutator {
 public:
  explicit Substituter(const std::function<Expr(const Var*)>& f) : f_(f) {}

 protected:
  Expr Mutate_(const Var* op, const Expr& self) override {
    Expr r = f_(op);
    return r ? r : self;
  }

 private:
  const std::function<Expr(const Var*)>& f_;
};

class ExprCollector : public IRVisitor {
 public:
  explicit ExprCollector(const std::function<void(const Expr&)>& f) : f_(f) {}
  using IRVisitor::Visit;
  void Visit(const Expr& e) override {
    if (!e) return;
    f_(e);
    IRVisitor::Visit(e);
  }

 private:
  const std::function<void(const Expr&)>& f_;
};
}  // namespace

Expr Substitute(const Expr& e, const std::function<Expr(const Var*)>& f) {
  return Substituter(f).Mutate(e);
}
Stmt Substitute(const Stmt& s, const std::function<Expr(const Var*)>& f) {
  return Substituter(f).Mutate(s);
}
namespace {
void FlattenInto(const Stmt& s, std::vector<Stmt>* out) {
  if (const auto* seq = As<Seq>(s)) {
    for (const Stmt& c : seq->stmts) FlattenInto(c, out);
  } else if (s) {
    out->push_back(s);
  }
}
}  // namespace

std::vector<Stmt> FlattenSeq(const Stmt& s) {
  std::vector<Stmt> out;
  FlattenInto(s, &out);
  return out;
}

void ForEachExpr(const Stmt& s, const std::function<void(const Expr&)>& f) {
  ExprCollector(f).Visit(s);
}
void ForEachExpr(const Expr& e, const std::function<void(const Expr&)>& f) {
  if (e) ExprCollector(f).Visit(e);
}
bool UsesVar(const Expr& e, const std::function<bool(const Var*)>& pred) {
  struct Finder : IRVisitor {
    const std::function<bool(const Var*)>* pred = nullptr;
    bool found = false;
    void Visit_(const Var* op) override { found = found || (*pred)(op); }
  } f;
  f.pred = &pred;
  if (e) f.Visit(e);
  return f.found;
}

bool UsesVar(const Expr& e, const Var* v) {
  return UsesVar(e, [v](const Var* x) { return x == v; });
}

}  // namespace tl::ir
