// SPDX-License-Identifier: Apache-2.0
/// \file Gather copies as cp.async (gather_copy.h).
#include "gather_copy.h"

#include "pass_helpers.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"

namespace tl::transform::cuda {

using namespace ir;  // NOLINT: implementation file

namespace {

bool IsZero(const Expr& e) {
  if (const auto* f = As<FloatImm>(e)) return f->value == 0.0;
  int64_t v = 1;
  return AsConstInt(e, &v) && v == 0;
}

}  // namespace

std::optional<GatherCopy> MatchGatherCopy(const Stmt& s, std::string* why, GatherForms forms) {
  GatherCopy g;
  Stmt body = s;
  while (const auto* f = As<For>(body)) {
    if (f->for_kind != ForKind::kParallel) break;
    g.loops.push_back(f);
    body = f->body;
  }
  if (g.loops.empty()) return *why = "not a T.Parallel loop", std::nullopt;
  g.nest = g.loops[0];
  g.store = As<BufferStore>(body);
  if (!g.store) return *why = "its body is not one store", std::nullopt;
  const Buffer& dst = g.store->buffer;
  if (dst->scope != Scope::kShared) return *why = "it does not write a shared tile", std::nullopt;
  const size_t rank = g.store->indices.size();
  if (rank < g.loops.size() || (!forms.leading_indices && rank != g.loops.size())) {
    return *why = "the tile is not indexed by the loops' variables", std::nullopt;
  }
  g.lead = rank - g.loops.size();
  for (size_t k = 0; k < g.lead; ++k) {
    for (const For* f : g.loops) {
      if (UsesVar(g.store->indices[k], f->var.get())) {
        return *why = "the tile is not indexed by the loops' variables", std::nullopt;
      }
    }
  }
  for (size_t k = 0; k < g.loops.size(); ++k) {
    int64_t lo = 1, e = 0, dim = -1;
    const auto* v = As<Var>(g.store->indices[g.lead + k]);
    if (!v || v != g.loops[k]->var.get() || !AsConstInt(g.loops[k]->min, &lo) || lo != 0 ||
        !AsConstInt(g.loops[k]->extent, &e) || !AsConstInt(dst->shape[g.lead + k], &dim) || e != dim) {
      return *why = "the tile is not indexed by the loops' variables over its whole shape", std::nullopt;
    }
  }
  Expr value = g.store->value;
  while (const auto* sel = As<Select>(value)) {
    if (!IsZero(sel->f)) return *why = "its guard does not fill zeros", std::nullopt;
    g.cond = g.cond ? And(g.cond, sel->cond) : sel->cond;
    value = sel->t;
    if (!forms.nested_guards) break;
  }
  g.load = As<BufferLoad>(value);
  if (!g.load) return *why = "it does not copy a loaded element", std::nullopt;
  const Buffer& src = g.load->buffer;
  if (src->scope != Scope::kGlobal || src->data || !src->strides.empty()) {
    return *why = "it does not read a plain global tensor", std::nullopt;
  }
  if (src->dtype != dst->dtype || dst->dtype.bits % 8 != 0 || 16 % dst->dtype.bytes() != 0) {
    return *why = "its element types differ", std::nullopt;
  }
  g.vec = 16 / dst->dtype.bytes();
  const Var* d = g.loops.back()->var.get();
  int64_t inner = 0, row = 0;
  AsConstInt(g.loops.back()->extent, &inner);
  if (inner % g.vec != 0) return *why = "its rows are not whole 16-byte groups", std::nullopt;
  if (!AsConstInt(src->shape.back(), &row) || row % g.vec != 0) {
    return *why = src->name + "'s rows are not whole 16-byte groups", std::nullopt;
  }
  if (g.cond && UsesVar(g.cond, d)) return *why = "its guard changes along a row", std::nullopt;
  for (size_t k = 0; k + 1 < g.load->indices.size(); ++k) {
    if (UsesVar(g.load->indices[k], d)) return *why = "a row of the tile is not a row of " + src->name, std::nullopt;
  }
  arith::Analyzer az;
  int64_t offset = 0;
  Expr c = az.Simplify(g.load->indices.back() - g.loops.back()->var);
  if (!AsConstInt(c, &offset) || offset % g.vec != 0) {
    return *why = "its columns do not start on a 16-byte boundary of " + src->name, std::nullopt;
  }
  return g;
}

Stmt LowerGatherCopy(const Stmt& s, const VarRef& tx, int64_t threads, GatherIssue issue) {
  std::string why;
  auto m = MatchGatherCopy(s, &why, issue.forms);
  TL_ICHECK(m) << "LowerGatherCopy of a statement that is not a gather copy: " << why;
  const GatherCopy& g = *m;
  // Group f of the tile: row-major over the outer loops, then the 16-byte group of the row.
  std::vector<int64_t> extents;
  for (const For* f : g.loops) {
    int64_t e = 0;
    AsConstInt(f->extent, &e);
    extents.push_back(e);
  }
  extents.back() /= g.vec;
  int64_t total = 1;
  for (int64_t e : extents) total *= e;
  const int64_t per_thread = (total + threads - 1) / threads;
  VarRef it = Var::Make("it");
  Expr f = Expr(it) * MakeInt(threads) + tx;
  std::unordered_map<const Var*, Expr> at;
  Expr rest = f;
  for (size_t k = g.loops.size(); k-- > 0;) {
    Expr idx = k == 0 ? rest : FloorMod(rest, MakeInt(extents[k]));
    if (k + 1 == g.loops.size()) idx = idx * MakeInt(g.vec);
    at[g.loops[k]->var.get()] = Cast::Make(g.loops[k]->var->dtype, idx);
    rest = FloorDiv(rest, MakeInt(extents[k]));
  }
  auto sub = [&](const Expr& e) {
    return Substitute(e, [&](const Var* v) -> Expr {
      auto i = at.find(v);
      return i == at.end() ? nullptr : i->second;
    });
  };
  std::vector<Expr> di, si;
  for (const Expr& e : g.store->indices) di.push_back(sub(e));
  for (const Expr& e : g.load->indices) si.push_back(sub(e));
  auto address = [](const Buffer& b, const std::vector<Expr>& idx) {
    return Call::Make(DType::Handle(), "address_of", {BufferLoad::Make(b, idx)});
  };
  Expr pred = g.cond ? sub(g.cond) : MakeBool(true);
  Expr src = address(g.load->buffer, si);
  if (issue.guard_source && g.cond) {
    std::vector<Expr> first(si.size(), MakeInt(0));
    src = Select::Make(pred, src, address(g.load->buffer, first));
  }
  Stmt copy = Evaluate::Make(
      Call::Make(DType::Void(), issue.intrinsic, {address(g.store->buffer, di), src, MakeInt(16), pred}), g.store->span);
  if (total % threads != 0) copy = IfThenElse::Make(LT(f, MakeInt(total)), copy, nullptr, g.store->span);
  return For::Make(it, MakeInt(0), MakeInt(per_thread), per_thread <= 32 ? ForKind::kUnrolled : ForKind::kSerial, copy,
                   {}, g.nest->span);
}

}  // namespace tl::transform::cuda
