// SPDX-License-Identifier: Apache-2.0
/// \file Element copies of a T.Parallel nest in groups (parallel_copy_groups.h).
#include "parallel_copy_groups.h"

#include <algorithm>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tl/arith/simplify.h"
#include "tl/ir/equal.h"
#include "tl/ir/functor.h"
#include "tl/ir/intrinsics.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

constexpr int64_t kGroupBytes = 16;

/// Whether `idx` addresses consecutive elements for consecutive `d`: only the last index
/// uses d, as `d` plus terms without it.
bool ConsecutiveAlong(const std::vector<Expr>& idx, const Var* d, arith::Analyzer* an) {
  if (idx.empty()) return false;
  for (size_t k = 0; k + 1 < idx.size(); ++k) {
    if (UsesVar(idx[k], d)) return false;
  }
  const Expr& last = idx.back();
  Expr at0 = Substitute(last, [d](const Var* x) -> Expr { return x == d ? MakeInt(0, x->dtype) : nullptr; });
  const auto* step = As<Var>(an->Simplify(last - at0));
  return step == d;
}

/// Whether `idx` addresses k consecutive elements within each group of k along `d` (d =
/// g * k + v, 0 <= v < k, g in [0, n / k)): with that substitution only the last index uses
/// v, as v plus terms without it. ConsecutiveAlong, or a tile of blocks
/// `C_s[i // 16, j // 16, i % 16, j % 16]` along j in groups of 8 (each block's rows are
/// 16 consecutive elements).
bool ConsecutiveInGroups(const std::vector<Expr>& idx, const Var* d, int64_t n, int64_t k, arith::Analyzer* an) {
  if (ConsecutiveAlong(idx, d, an)) return true;
  if (idx.empty() || k <= 1 || n % k != 0) return false;
  VarRef g = Var::Make(d->name + "_group", d->dtype), v = Var::Make(d->name + "_lane", d->dtype);
  an->BindRange(g.get(), MakeInt(0, d->dtype), MakeInt(n / k, d->dtype));
  an->BindRange(v.get(), MakeInt(0, d->dtype), MakeInt(k, d->dtype));
  auto at = [&](const Expr& e, const Expr& lane) {
    return an->Simplify(Substitute(e, [&](const Var* x) -> Expr {
      return x == d ? Expr(g) * MakeInt(k, d->dtype) + lane : nullptr;
    }));
  };
  bool ok = true;
  for (size_t i = 0; ok && i + 1 < idx.size(); ++i) ok = !UsesVar(at(idx[i], v), v.get());
  if (ok) {
    const Expr last = at(idx.back(), v);
    const auto* step = As<Var>(an->Simplify(last - at(idx.back(), MakeInt(0, d->dtype))));
    ok = step == v.get();
  }
  an->Unbind(g.get());
  an->Unbind(v.get());
  return ok;
}

/// Whether rows of `b` hold whole groups of k elements: a contiguous buffer in memory whose
/// last dimension is a constant multiple of k.
bool WholeGroupRows(const Buffer& b, int64_t k) {
  int64_t w = 0;
  return (b->scope == Scope::kGlobal || b->scope == Scope::kShared) && b->strides.empty() && !b->data &&
         !b->shape.empty() && AsConstInt(b->shape.back(), &w) && w % k == 0;
}

/// `body` as one statement with its lets substituted (`r = by * 32 + i; y = Y[r, c];
/// Z[r, c] = ... y`: the front end's names for parts of the value), through guards; null when
/// it holds anything but lets, guards and a last statement.
Stmt InlinedLets(const Stmt& body) {
  std::unordered_map<const Var*, Expr> lets;
  std::function<Stmt(const Stmt&)> inline_in = [&](const Stmt& s) -> Stmt {
    auto bound = [&](const Var* v) -> Expr {
      auto it = lets.find(v);
      return it == lets.end() ? nullptr : it->second;
    };
    if (const auto* seq = As<Seq>(s)) {
      if (seq->stmts.empty()) return nullptr;
      for (size_t i = 0; i + 1 < seq->stmts.size(); ++i) {
        const auto* let = As<LetStmt>(seq->stmts[i]);
        if (!let) return nullptr;
        lets[let->var.get()] = Substitute(let->value, bound);
      }
      return inline_in(seq->stmts.back());
    }
    if (const auto* guard = As<IfThenElse>(s)) {
      if (guard->else_case) return nullptr;
      Stmt then_case = inline_in(guard->then_case);
      return then_case ? IfThenElse::Make(Substitute(guard->cond, bound), then_case, nullptr, guard->span) : nullptr;
    }
    if (const auto* store = As<BufferStore>(s)) {
      std::vector<Expr> idx;
      for (const Expr& e : store->indices) idx.push_back(Substitute(e, bound));
      return BufferStore::Make(store->buffer, idx, Substitute(store->value, bound), store->span);
    }
    return nullptr;
  };
  return inline_in(body);
}

/// Whether `cond` has one value over each group of k elements along `d` (groups start at
/// multiples of k): it does not use d, or it is a conjunction whose terms that use d are
/// `a < b` with a = d + terms without d, where b and a at d = 0 are multiples of k (a ragged
/// edge `c < N` with N a multiple of k: a group's first element is below N exactly when its
/// last one is).
bool UniformOverGroups(const Expr& cond, const Var* d, int64_t k, arith::Analyzer* an) {
  if (!UsesVar(cond, d)) return true;
  const auto* bin = As<Binary>(cond);
  if (!bin) return false;
  if (bin->op == BinOp::kAnd) return UniformOverGroups(bin->a, d, k, an) && UniformOverGroups(bin->b, d, k, an);
  if (bin->op != BinOp::kLT || UsesVar(bin->b, d) || k <= 1) return false;
  if (!ConsecutiveAlong({bin->a}, d, an)) return false;
  Expr at0 = Substitute(bin->a, [d](const Var* x) -> Expr { return x == d ? MakeInt(0, x->dtype) : nullptr; });
  const Expr kk = MakeInt(k, bin->b->dtype);
  return an->CanProve(EQ(FloorMod(bin->b, kk), MakeInt(0, bin->b->dtype))) &&
         an->CanProve(EQ(FloorMod(at0, MakeInt(k, at0->dtype)), MakeInt(0, at0->dtype)));
}

/// The store under the guards (without else branches) of `body`, or null.
const BufferStore* InnerStore(const Stmt& body) {
  Stmt core = body;
  while (const auto* guard = As<IfThenElse>(core)) {
    if (guard->else_case) return nullptr;
    core = guard->then_case;
  }
  return As<BufferStore>(core);
}

/// Whether every guard around the store of `body` has one value over each group of k
/// elements along `d` (UniformOverGroups).
bool GuardsUniform(const Stmt& body, const Var* d, int64_t k) {
  arith::Analyzer an;
  for (const auto* guard = As<IfThenElse>(body); guard; guard = As<IfThenElse>(guard->then_case)) {
    if (!UniformOverGroups(guard->cond, d, k, &an)) return false;
  }
  return true;
}

/// `body` with its innermost store replaced by `s` (the guards around it kept, each at the
/// group's first element: `first` for d, where a guard uses it).
Stmt ReplaceStore(const Stmt& body, const Stmt& s, const Var* d, const Expr& first) {
  if (const auto* guard = As<IfThenElse>(body)) {
    Expr cond = Substitute(guard->cond, [&](const Var* x) -> Expr { return x == d ? first : nullptr; });
    return IfThenElse::Make(cond, ReplaceStore(guard->then_case, s, d, first), nullptr, guard->span);
  }
  return s;
}

/// The conjuncts of `cond` (a && b && ...).
void Conjuncts(const Expr& cond, std::vector<Expr>* out) {
  const auto* bin = As<Binary>(cond);
  if (bin && bin->op == BinOp::kAnd) {
    Conjuncts(bin->a, out);
    Conjuncts(bin->b, out);
  } else {
    out->push_back(cond);
  }
}

/// The conjuncts of the guards around the store of `body`.
std::vector<Expr> GuardTerms(const Stmt& body) {
  std::vector<Expr> terms;
  for (const auto* guard = As<IfThenElse>(body); guard; guard = As<IfThenElse>(guard->then_case)) {
    Conjuncts(guard->cond, &terms);
  }
  return terms;
}

/// The loads of `value` that use `d` (its windows), each once (structurally); `ok` false when
/// `value` holds anything but pure arithmetic on memory loads and values without `d`, or a
/// window that the original evaluates only under a condition (a Select's branch, the right
/// side of && or ||) not among the guards' conjuncts: the group loads its window whole, which
/// must be in bounds whenever the store runs (guard-global-access's `c < N ? X[r, c] : 0`
/// under the guard `c < N` is).
struct WindowFinder : IRVisitor {
  const Var* d = nullptr;
  const std::vector<Expr>* guards = nullptr;
  std::vector<const BufferLoad*>* loads = nullptr;
  bool ok = true;
  int conditional = 0;  ///< inside operands evaluated under a condition the guards do not imply

  bool Guarded(const Expr& cond) const {
    std::vector<Expr> terms;
    Conjuncts(cond, &terms);
    for (const Expr& t : terms) {
      bool found = false;
      for (const Expr& g : *guards) found = found || StructuralEqual(t, g);
      if (!found) return false;
    }
    return true;
  }
  void Visit_(const Select* op) override {
    Visit(op->cond);
    const bool implied = Guarded(op->cond);
    conditional += !implied;
    Visit(op->t);
    Visit(op->f);
    conditional -= !implied;
  }
  void Visit_(const Binary* op) override {
    if (op->op != BinOp::kAnd && op->op != BinOp::kOr) return IRVisitor::Visit_(op);
    Visit(op->a);
    ++conditional;  // (C's short-circuit: the right side only sometimes)
    Visit(op->b);
    --conditional;
  }
  void Visit_(const BufferLoad* op) override {
    IRVisitor::Visit_(op);
    const Scope s = op->buffer->scope;
    Expr self = BufferLoad::Make(op->buffer, op->indices);
    if (s != Scope::kGlobal && s != Scope::kShared) {
      ok = ok && !UsesVar(self, d) && (s == Scope::kVar || s == Scope::kLocal);
      return;
    }
    if (!UsesVar(self, d)) return;
    ok = ok && conditional == 0;
    for (const BufferLoad* seen : *loads) {
      if (StructuralEqual(self, BufferLoad::Make(seen->buffer, seen->indices))) return;
    }
    loads->push_back(op);
  }
  void Visit_(const Call* op) override {
    const IntrinsicInfo* info = LookupIntrinsic(op->op);
    constexpr uint32_t kPure = kTlFunction | kCudaOnly | kSm100aOnly;
    ok = ok && info && !(info->effects & ~kPure);
    IRVisitor::Visit_(op);
  }
};

/// The windows of the store's value in `body` (WindowFinder); false when it is not pure
/// arithmetic on them and on values without `d`.
bool WindowLoads(const Stmt& body, const BufferStore* store, const Var* d, std::vector<const BufferLoad*>* loads) {
  const std::vector<Expr> guards = GuardTerms(body);
  WindowFinder finder;
  finder.d = d;
  finder.guards = &guards;
  finder.loads = loads;
  finder.Visit(store->value);
  return finder.ok;
}

}  // namespace

ElementwiseGroups ElementwiseGroup(const For* inner, const Stmt& nest_body) {
  const Var* d = inner->var.get();
  int64_t n = 0, lo = -1;
  if (!AsConstInt(inner->extent, &n) || !AsConstInt(inner->min, &lo) || lo != 0) return {};
  ElementwiseGroups out;
  out.body = InlinedLets(nest_body);
  if (!out.body) return {};
  const BufferStore* store = out.store = InnerStore(out.body);
  // into a tensor or a shared tile (cuda-insert-barriers orders a tile written by other threads
  // than before; the element mapping it replaces wrote 2 bytes per thread at a time)
  if (!store || (store->buffer->scope != Scope::kGlobal && store->buffer->scope != Scope::kShared)) return {};
  if (!WindowLoads(out.body, store, d, &out.windows) || out.windows.empty()) return {};
  int64_t widest = store->buffer->dtype.bytes();
  for (const BufferLoad* l : out.windows) {
    if (l->buffer->dtype.bits % 8 != 0) return {};
    widest = std::max<int64_t>(widest, l->buffer->dtype.bytes());
  }
  if (store->buffer->dtype.bits % 8 != 0 || widest >= kGroupBytes) return {};
  const int64_t k = kGroupBytes / widest;
  if (n % k != 0 || !WholeGroupRows(store->buffer, k)) return {};
  arith::Analyzer an;
  if (!ConsecutiveInGroups(store->indices, d, n, k, &an) || !GuardsUniform(out.body, d, k)) return {};
  for (const BufferLoad* l : out.windows) {
    if (!WholeGroupRows(l->buffer, k) || !ConsecutiveInGroups(l->indices, d, n, k, &an)) return {};
  }
  out.k = k;
  return out;
}

Stmt GroupedElementwise(const For* inner, const ElementwiseGroups& groups, const Expr& g) {
  const Var* d = inner->var.get();
  const Span& span = inner->span;
  const int64_t k = groups.k;
  const BufferStore* store = groups.store;
  const std::vector<const BufferLoad*>& loads = groups.windows;
  const DType it = d->dtype;
  const Expr first = g * MakeInt(k, it);
  // index `idx` of the group's element j (d := g * k + j)
  auto at = [&](const std::vector<Expr>& idx, const Expr& j) {
    std::vector<Expr> out;
    for (const Expr& e : idx) out.push_back(Substitute(e, [&](const Var* x) -> Expr { return x == d ? first + j : nullptr; }));
    return out;
  };
  auto vectorized = [&](const std::string& name, const std::function<Stmt(const Expr&)>& each, ForKind kind) {
    VarRef j = Var::Make(name, it);
    return For::Make(j, MakeInt(0, it), MakeInt(k, it), kind, each(j), {}, span);
  };
  std::vector<Stmt> out;
  std::vector<Buffer> regs;
  for (const BufferLoad* l : loads) {
    Buffer r = BufferNode::Make(l->buffer->name + "_group", l->buffer->dtype, {MakeInt(k)}, Scope::kLocal);
    regs.push_back(r);
    out.push_back(Allocate::Make(r, nullptr, span));
    out.push_back(vectorized(inner->var->name, [&](const Expr& j) {
      return BufferStore::Make(r, {j}, BufferLoad::Make(l->buffer, at(l->indices, j)), span);
    }, ForKind::kVectorized));
  }
  Buffer result = BufferNode::Make(store->buffer->name + "_group", store->buffer->dtype, {MakeInt(k)}, Scope::kLocal);
  out.push_back(Allocate::Make(result, nullptr, span));
  out.push_back(vectorized(inner->var->name, [&](const Expr& j) {
    // each window load becomes its register; everything else is the value at d := g * k + j
    struct Windows : IRMutator {
      const std::vector<const BufferLoad*>* loads;
      const std::vector<Buffer>* regs;
      Expr j;
      Expr Mutate_(const BufferLoad* op, const Expr& self) override {
        for (size_t i = 0; i < loads->size(); ++i) {
          const BufferLoad* l = (*loads)[i];
          if (StructuralEqual(self, BufferLoad::Make(l->buffer, l->indices))) return BufferLoad::Make((*regs)[i], {j});
        }
        return IRMutator::Mutate_(op, self);
      }
    } windows;
    windows.loads = &loads;
    windows.regs = &regs;
    windows.j = j;
    Expr v = windows.Mutate(store->value);
    v = Substitute(v, [&](const Var* x) -> Expr { return x == d ? first + j : nullptr; });
    return BufferStore::Make(result, {j}, v, span);
  }, ForKind::kUnrolled));
  out.push_back(vectorized(inner->var->name, [&](const Expr& j) {
    return BufferStore::Make(store->buffer, at(store->indices, j), BufferLoad::Make(result, {j}), span);
  }, ForKind::kVectorized));
  return ReplaceStore(groups.body, Seq::Make(out, span), d, first);
}

int64_t ElementCopyGroup(const For* inner, const Stmt& body) {
  const Var* d = inner->var.get();
  int64_t n = 0, lo = -1;
  if (!AsConstInt(inner->extent, &n) || !AsConstInt(inner->min, &lo) || lo != 0) return 0;
  Stmt core = body;
  while (const auto* guard = As<IfThenElse>(core)) {
    if (guard->else_case || UsesVar(guard->cond, d)) return 0;
    core = guard->then_case;
  }
  const auto* store = As<BufferStore>(core);
  const auto* load = store ? As<BufferLoad>(store->value) : nullptr;
  // (into a tensor only: a shared tile written in groups would be written by other threads
  // than those that wrote its elements before, which can cost a barrier where none was)
  if (!load || store->buffer.get() == load->buffer.get() || store->buffer->scope != Scope::kGlobal) return 0;
  const DType t = store->buffer->dtype;
  if (load->buffer->dtype != t || t.bits % 8 != 0 || t.bytes() >= kGroupBytes) return 0;
  const int64_t k = kGroupBytes / t.bytes();
  if (n % k != 0 || !WholeGroupRows(store->buffer, k) || !WholeGroupRows(load->buffer, k)) return 0;
  arith::Analyzer an;
  if (!ConsecutiveInGroups(store->indices, d, n, k, &an) || !ConsecutiveInGroups(load->indices, d, n, k, &an)) {
    return 0;
  }
  return k;
}

Stmt GroupedCopy(const For* inner, const Stmt& body, int64_t k, const Expr& g) {
  VarRef j = Var::Make(inner->var->name, inner->var->dtype);
  Expr d = g * MakeInt(k, inner->var->dtype) + Expr(j);
  Stmt at = Substitute(body, [&](const Var* x) -> Expr { return x == inner->var.get() ? d : nullptr; });
  return For::Make(j, MakeInt(0, j->dtype), MakeInt(k, j->dtype), ForKind::kVectorized, at, {}, inner->span);
}

}  // namespace tl::transform::cuda
