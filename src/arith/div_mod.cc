// SPDX-License-Identifier: Apache-2.0
/// \file Rules for integer division and modulo.
///
/// For a positive constant c and a numerator in linear form, floor division splits off
/// every term whose coefficient c divides, which is exact for any sign:
///   (a*c + r) // c == a + r // c        (a*c + r) % c == r % c
/// A common factor g of c and the remainder cancels: (g*r) // (g*c') == r // c',
/// (g*r) % (g*c') == g * (r % c'). What is left is decided from its bound when it stays
/// within one multiple of c: r in [q*c, q*c + c) gives r // c == q and r % c == r - q*c.
#include <algorithm>

#include "arith_internal.h"

namespace tl::arith::detail {

using ir::Binary;
using ir::BinOp;
using ir::DType;
using ir::Expr;
using ir::IntImm;

namespace {

/// The numerator split by a positive constant divisor c.
struct Split {
  LinearForm quot;  ///< terms whose coefficient c divides, already divided by c
  LinearForm rest;  ///< the other terms, constant reduced into [0, c)
  int64_t divisor;  ///< c, or c / g after cancelling a common factor g
  int64_t factor;   ///< g
  bool changed;     ///< whether rest/divisor differ from the original numerator/divisor
};

Split SplitByDivisor(const LinearForm& num, int64_t c) {
  Split s{{}, {}, c, 1, false};
  for (const auto& [term, coeff] : num.terms) {
    if (coeff % c == 0) {
      s.quot.terms.emplace_back(term, coeff / c);
      s.changed = true;
    } else {
      s.rest.terms.emplace_back(term, coeff);
    }
  }
  s.quot.constant = FloorDivInt(num.constant, c);
  s.rest.constant = FloorModInt(num.constant, c);
  if (s.rest.constant != num.constant) s.changed = true;
  int64_t g = Gcd(c, s.rest.constant);
  for (const auto& term : s.rest.terms) g = Gcd(g, term.second);
  if (g > 1 && !s.rest.terms.empty()) {
    for (auto& term : s.rest.terms) term.second /= g;
    s.rest.constant /= g;
    s.divisor = c / g;
    s.factor = g;
    s.changed = true;
  }
  return s;
}

/// (a*k + r) // (m*k) == a // m and (a*k + r) % (m*k) == (a % m)*k + r when 0 <= r < k
/// (a thread's offset inside a row of k elements, under a loop stepping whole rows):
/// splits `rest` (over divisor d) into `a` (the terms k divides, divided by k) and `r`, for
/// the largest k dividing d whose remainder is bounded in [0, k).
bool SplitByFactor(const Analyzer& an, const LinearForm& rest, int64_t d, LinearForm* a, LinearForm* r,
                   int64_t* k) {
  std::vector<int64_t> candidates;
  for (const auto& term : rest.terms) {
    int64_t g = Gcd(term.second < 0 ? -term.second : term.second, d);
    if (g > 1 && g < d) candidates.push_back(g);
  }
  std::sort(candidates.rbegin(), candidates.rend());
  for (int64_t cand : candidates) {
    LinearForm big, small;
    for (const auto& [term, coeff] : rest.terms) {
      if (coeff % cand == 0) {
        big.terms.emplace_back(term, coeff / cand);
      } else {
        small.terms.emplace_back(term, coeff);
      }
    }
    small.constant = rest.constant;
    if (big.terms.empty()) continue;
    IntBound b = BoundOfForm(an, small);
    if (b.min && b.max && *b.min >= 0 && *b.max < cand) {
      *a = std::move(big);
      *r = std::move(small);
      *k = cand;
      return true;
    }
  }
  return false;
}

/// If `f` is exactly one term `x <op> d` with a positive constant d, returns it.
const Binary* SingleDivTerm(const LinearForm& f, BinOp op, int64_t* d) {
  if (f.terms.size() != 1 || f.constant != 0 || f.terms[0].second != 1) return nullptr;
  auto* bin = ir::As<Binary>(f.terms[0].first);
  if (!bin || bin->op != op) return nullptr;
  auto* k = ir::As<IntImm>(bin->b);
  if (!k || k->value <= 0) return nullptr;
  *d = k->value;
  return bin;
}

}  // namespace

Expr Rewriter::RewriteFloorDiv(const Expr& a, const Expr& b, const Expr& self) {
  const DType t = a->dtype;
  auto* kb = ir::As<IntImm>(b);
  if (!kb) {
    // x // y == 0 when 0 <= x < y.
    IntBound ba = BoundOf(a), bb = BoundOf(b);
    if (ba.min && *ba.min >= 0 && ba.max && bb.min && *ba.max < *bb.min) return Const(t, 0);
    return Rebuild(BinOp::kFloorDiv, a, b, self);
  }
  const int64_t c = kb->value;
  if (c == 1) return a;
  if (c <= 0) return Rebuild(BinOp::kFloorDiv, a, b, self);
  LinearForm num = ParseLinear(a);
  if (num.overflow) return Rebuild(BinOp::kFloorDiv, a, b, self);
  Split s = SplitByDivisor(num, c);
  LinearForm out = std::move(s.quot);
  if (!s.rest.terms.empty()) {
    IntBound br = BoundOfForm(*an_, s.rest);
    if (br.min && br.max && FloorDivInt(*br.min, s.divisor) == FloorDivInt(*br.max, s.divisor)) {
      out.AddConst(FloorDivInt(*br.min, s.divisor));
    } else {
      int64_t d, dd, k;
      Expr term;
      LinearForm rows, offset;
      if (SplitByFactor(*an_, s.rest, s.divisor, &rows, &offset, &k)) {
        term = RewriteFloorDiv(BuildLinear(rows, t), Const(t, s.divisor / k), nullptr);  // (a*k + r) // (m*k)
      } else if (auto* inner = SingleDivTerm(s.rest, BinOp::kFloorDiv, &d);
                 inner && CheckedMul(d, s.divisor, &dd)) {
        term = RewriteFloorDiv(inner->a, Const(t, dd), nullptr);  // (x // d) // c
      } else if (!s.changed) {
        term = Rebuild(BinOp::kFloorDiv, a, b, self);
      } else {
        term = Binary::Make(BinOp::kFloorDiv, BuildLinear(s.rest, t), Const(t, s.divisor));
      }
      out.AddTerm(term, 1);
    }
  }
  out.Compact();
  if (!out.FitsIn(t)) return Rebuild(BinOp::kFloorDiv, a, b, self);
  return KeepIfSame(BuildLinear(out, t), BinOp::kFloorDiv, a, b, self);
}

Expr Rewriter::RewriteFloorMod(const Expr& a, const Expr& b, const Expr& self) {
  const DType t = a->dtype;
  auto* kb = ir::As<IntImm>(b);
  if (!kb) {
    // x % y == x when 0 <= x < y.
    IntBound ba = BoundOf(a), bb = BoundOf(b);
    if (ba.min && *ba.min >= 0 && ba.max && bb.min && *ba.max < *bb.min) return a;
    return Rebuild(BinOp::kFloorMod, a, b, self);
  }
  const int64_t c = kb->value;
  if (c == 1 || c == -1) return Const(t, 0);
  if (c <= 0) return Rebuild(BinOp::kFloorMod, a, b, self);
  LinearForm num = ParseLinear(a);
  if (num.overflow) return Rebuild(BinOp::kFloorMod, a, b, self);
  Split s = SplitByDivisor(num, c);
  if (s.rest.terms.empty()) return Const(t, s.rest.constant * s.factor);
  LinearForm out;
  IntBound br = BoundOfForm(*an_, s.rest);
  if (br.min && br.max && FloorDivInt(*br.min, s.divisor) == FloorDivInt(*br.max, s.divisor)) {
    // r % c == r - q*c, scaled back by the cancelled factor.
    out.AddForm(s.rest, s.factor);
    int64_t qc;
    if (!CheckedMul(FloorDivInt(*br.min, s.divisor), s.divisor, &qc) ||
        !CheckedMul(qc, -s.factor, &qc)) {
      return Rebuild(BinOp::kFloorMod, a, b, self);
    }
    out.AddConst(qc);
  } else {
    int64_t d, k;
    Expr term;
    LinearForm rows, offset;
    if (SplitByFactor(*an_, s.rest, s.divisor, &rows, &offset, &k)) {
      // (a*k + r) % (m*k) == (a % m)*k + r
      out.AddTerm(RewriteFloorMod(BuildLinear(rows, t), Const(t, s.divisor / k), nullptr), k * s.factor);
      out.AddForm(offset, s.factor);
    } else if (auto* inner = SingleDivTerm(s.rest, BinOp::kFloorMod, &d); inner && d % s.divisor == 0) {
      term = RewriteFloorMod(inner->a, Const(t, s.divisor), nullptr);  // (x % 8) % 4
    } else if (!s.changed) {
      term = Rebuild(BinOp::kFloorMod, a, b, self);
    } else {
      term = Binary::Make(BinOp::kFloorMod, BuildLinear(s.rest, t), Const(t, s.divisor));
    }
    if (term) out.AddTerm(term, s.factor);
  }
  out.Compact();
  if (!out.FitsIn(t)) return Rebuild(BinOp::kFloorMod, a, b, self);
  return KeepIfSame(BuildLinear(out, t), BinOp::kFloorMod, a, b, self);
}

Expr Rewriter::RewriteTruncDivMod(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  const DType t = a->dtype;
  auto* kb = ir::As<IntImm>(b);
  if (kb && kb->value == 1) return op == BinOp::kDiv ? a : Const(t, 0);
  // For 0 <= x < y truncating and floor division agree: x / y == 0, x % y == x.
  IntBound ba = BoundOf(a), bb = BoundOf(b);
  if (ba.min && *ba.min >= 0 && ba.max && bb.min && *ba.max < *bb.min) {
    return op == BinOp::kDiv ? Const(t, 0) : a;
  }
  return Rebuild(op, a, b, self);
}

}  // namespace tl::arith::detail
