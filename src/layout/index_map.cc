// SPDX-License-Identifier: Apache-2.0
/// \file Layout algebra on index maps (index_map.h).
#include "tl/layout/index_map.h"

#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "../arith/arith_internal.h"
#include "tl/arith/simplify.h"
#include "tl/ir/functor.h"
#include "tl/ir/printer.h"

namespace tl::layout {

using ir::Expr;

namespace {

void CheckShape(const IndexMap& m) {
  if (m.vars.size() != m.extents.size()) throw std::invalid_argument("index map: one extent per input variable");
  for (int64_t e : m.extents) {
    if (e <= 0) throw std::invalid_argument("index map: input extents must be positive, got " + std::to_string(e));
  }
}

/// An analyzer that knows each input variable's range.
arith::Analyzer AnalyzerOver(const IndexMap& m) {
  arith::Analyzer an;
  for (size_t d = 0; d < m.vars.size(); ++d) {
    an.BindRange(m.vars[d].get(), ir::MakeInt(0, m.vars[d]->dtype), ir::MakeInt(m.extents[d], m.vars[d]->dtype));
  }
  return an;
}

/// `e` with each input variable of `m` replaced by `values[d]`.
Expr Substituted(const Expr& e, const IndexMap& m, const std::vector<Expr>& values) {
  return ir::Substitute(e, [&](const ir::Var* v) -> Expr {
    for (size_t d = 0; d < m.vars.size(); ++d) {
      if (m.vars[d].get() == v) return values[d];
    }
    return nullptr;
  });
}

/// The shared input variables of an n-dimensional map.
std::vector<ir::VarRef> InputVars(size_t n) {
  std::vector<ir::VarRef> vars;
  for (size_t d = 0; d < n; ++d) vars.push_back(InputVar(d));
  return vars;
}

/// The constant an expression of the bound variables takes at one point, folded as the
/// simplifier folds (arith's FoldBinary / FoldCast: exact target semantics), or null when it
/// has a form that does not fold (a call, an overflow).
Expr Evaluate(const Expr& e, const std::unordered_map<const ir::Var*, int64_t>& at) {
  if (ir::As<ir::IntImm>(e)) return e;
  if (const auto* v = ir::As<ir::Var>(e)) {
    auto it = at.find(v);
    return it == at.end() ? nullptr : ir::MakeInt(it->second, v->dtype);
  }
  if (const auto* cast = ir::As<ir::Cast>(e)) {
    Expr x = Evaluate(cast->value, at);
    return x ? arith::detail::FoldCast(cast->dtype, x) : nullptr;
  }
  if (const auto* sel = ir::As<ir::Select>(e)) {
    int64_t c = 0;
    Expr cond = Evaluate(sel->cond, at);
    return cond && ir::AsConstInt(cond, &c) ? Evaluate(c ? sel->t : sel->f, at) : nullptr;
  }
  if (const auto* n = ir::As<ir::Not>(e)) {
    int64_t c = 0;
    Expr a = Evaluate(n->a, at);
    return a && ir::AsConstInt(a, &c) ? ir::MakeBool(!c) : nullptr;
  }
  const auto* b = ir::As<ir::Binary>(e);
  if (!b) return nullptr;
  Expr x = Evaluate(b->a, at), y = Evaluate(b->b, at);
  return x && y ? arith::detail::FoldBinary(b->op, x, y) : nullptr;
}

/// Checks the two maps' outputs agree at every point of the (shared) input domain, with b's
/// variables renamed to a's.
bool EqualAtEveryPoint(const IndexMap& a, const std::vector<Expr>& b_outputs, int64_t max_points) {
  int64_t points = 1;
  for (int64_t e : a.extents) {
    if (points > max_points / e) return false;
    points *= e;
  }
  std::unordered_map<const ir::Var*, int64_t> at;
  for (const auto& v : a.vars) at[v.get()] = 0;
  for (int64_t p = 0; p < points; ++p) {
    int64_t rest = p;
    for (size_t d = a.vars.size(); d-- > 0;) {
      at[a.vars[d].get()] = rest % a.extents[d];
      rest /= a.extents[d];
    }
    for (size_t k = 0; k < b_outputs.size(); ++k) {
      int64_t x = 0, y = 0;
      Expr ex = Evaluate(a.outputs[k], at), ey = Evaluate(b_outputs[k], at);
      if (!ex || !ey || !ir::AsConstInt(ex, &x) || !ir::AsConstInt(ey, &y) || x != y) return false;
    }
  }
  return true;
}

}  // namespace

const ir::VarRef& InputVar(size_t d) {
  static std::mutex mu;
  static auto* vars = new std::vector<ir::VarRef>();  // never freed: shared for the process
  std::lock_guard<std::mutex> lock(mu);
  while (vars->size() <= d) vars->push_back(ir::Var::Make("i" + std::to_string(vars->size()), ir::DType::Int(32)));
  return (*vars)[d];
}

const ir::VarRef& ReplicaVar() {
  static const auto* rep = new ir::VarRef(ir::Var::Make("rep", ir::DType::Int(32)));
  return *rep;
}

std::vector<int64_t> OutputExtents(const IndexMap& m) {
  CheckShape(m);
  arith::Analyzer an = AnalyzerOver(m);
  std::vector<int64_t> out;
  for (const Expr& e : m.outputs) {
    arith::IntBound b = an.Bound(e);
    if (!b.min || !b.max) throw std::invalid_argument("index map: output " + ir::ToString(e) + " is unbounded");
    if (*b.min < 0) {
      throw std::invalid_argument("index map: output " + ir::ToString(e) + " can be negative (" +
                                  std::to_string(*b.min) + ")");
    }
    out.push_back(*b.max + 1);
  }
  return out;
}

Expr LinearizedIndex(const IndexMap& m) {
  std::vector<int64_t> extents = OutputExtents(m);
  Expr linear = ir::MakeInt(0, ir::DType::Int(32));
  for (size_t k = 0; k < m.outputs.size(); ++k) {
    Expr o = m.outputs[k];
    if (o->dtype != linear->dtype) o = ir::Cast::Make(linear->dtype, o);
    linear = linear * ir::MakeInt(extents[k], linear->dtype) + o;
  }
  arith::Analyzer an = AnalyzerOver(m);
  return an.Simplify(linear);
}

std::vector<Expr> Apply(const IndexMap& m, const std::vector<Expr>& indices) {
  if (indices.size() != m.vars.size()) {
    throw std::invalid_argument("index map: " + std::to_string(m.vars.size()) + " indices expected, got " +
                                std::to_string(indices.size()));
  }
  std::vector<Expr> out;
  for (const Expr& e : m.outputs) out.push_back(Substituted(e, m, indices));
  return out;
}

IndexMap Repeat(const IndexMap& m, int dim, int64_t factor) {
  CheckShape(m);
  const int ndim = static_cast<int>(m.vars.size());
  if (ndim == 0) throw std::invalid_argument("repeat: a layout with no input dimensions cannot be repeated");
  if (factor < 1) throw std::invalid_argument("repeat: factor must be >= 1, got " + std::to_string(factor));
  const int d = dim < 0 ? dim + ndim : dim;
  if (d < 0 || d >= ndim) {
    throw std::invalid_argument("repeat: dim must be in [" + std::to_string(-ndim) + ", " + std::to_string(ndim) +
                                "), got " + std::to_string(dim));
  }
  if (factor == 1) return m;
  IndexMap r;
  r.vars = InputVars(ndim);
  r.extents = m.extents;
  r.extents[d] *= factor;
  std::vector<Expr> inner;
  for (int k = 0; k < ndim; ++k) inner.push_back(k == d ? ir::FloorMod(r.vars[k], ir::MakeInt(m.extents[k], r.vars[k]->dtype))
                                                        : Expr(r.vars[k]));
  arith::Analyzer an = AnalyzerOver(r);
  r.outputs.push_back(an.Simplify(ir::FloorDiv(r.vars[d], ir::MakeInt(m.extents[d], r.vars[d]->dtype))));
  for (const Expr& e : Apply(m, inner)) r.outputs.push_back(an.Simplify(e));
  return r;
}

IndexMap Expand(const IndexMap& m, const std::vector<int64_t>& leading) {
  CheckShape(m);
  for (size_t k = 0; k < leading.size(); ++k) {
    if (leading[k] <= 0) {
      throw std::invalid_argument("expand: leading_shape[" + std::to_string(k) + "] must be > 0, got " +
                                  std::to_string(leading[k]));
    }
  }
  if (leading.empty()) return m;
  IndexMap r;
  r.vars = InputVars(leading.size() + m.vars.size());
  r.extents = leading;
  r.extents.insert(r.extents.end(), m.extents.begin(), m.extents.end());
  std::vector<Expr> inner(r.vars.begin() + static_cast<std::ptrdiff_t>(leading.size()), r.vars.end());
  for (size_t k = 0; k < leading.size(); ++k) r.outputs.push_back(r.vars[k]);
  for (const Expr& e : Apply(m, inner)) r.outputs.push_back(e);
  return r;
}

bool Equal(const IndexMap& a, const IndexMap& b, int64_t max_points) {
  CheckShape(a);
  CheckShape(b);
  if (a.extents != b.extents || a.outputs.size() != b.outputs.size()) return false;
  std::vector<Expr> renamed(a.vars.begin(), a.vars.end());
  std::vector<Expr> b_outputs = Apply(b, renamed);
  arith::Analyzer an = AnalyzerOver(a);
  bool proved = true;
  for (size_t k = 0; k < a.outputs.size() && proved; ++k) {
    const Expr& x = a.outputs[k];
    Expr y = b_outputs[k];
    if (x->dtype != y->dtype) y = ir::Cast::Make(x->dtype, y);
    int64_t diff = 1;
    proved = ir::AsConstInt(an.Simplify(x - y), &diff) && diff == 0;
  }
  return proved || EqualAtEveryPoint(a, b_outputs, max_points);
}

}  // namespace tl::layout
