// SPDX-License-Identifier: Apache-2.0
/// \file The linear form behind canonical sums: parsing a simplified expression into
/// sum(c_i * t_i) + k and building it back in a fixed, readable order.
#include <cstdlib>
#include <functional>
#include <string>

#include "arith_internal.h"
#include "tl/ir/equal.h"

namespace tl::arith::detail {

using ir::Binary;
using ir::BinOp;
using ir::DType;
using ir::Expr;
using ir::IntImm;

int64_t Gcd(int64_t a, int64_t b) {
  // Work in unsigned so that |INT64_MIN| does not overflow; callers only pass the result
  // to divisions by positive constants, where it is at most the divisor.
  uint64_t x = a < 0 ? 0 - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
  uint64_t y = b < 0 ? 0 - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  while (y != 0) {
    uint64_t r = x % y;
    x = y;
    y = r;
  }
  return x > static_cast<uint64_t>(INT64_MAX) ? 0 : static_cast<int64_t>(x);
}

bool FitsIn(DType t, int64_t v) {
  if (t.IsBool()) return v == 0 || v == 1;
  if (t.bits >= 64) return t.IsSigned() || v >= 0;
  if (t.IsSigned()) {
    int64_t lim = int64_t{1} << (t.bits - 1);
    return v >= -lim && v < lim;
  }
  return v >= 0 && v < (int64_t{1} << t.bits);
}

void LinearForm::AddConst(int64_t c) {
  if (!CheckedAdd(constant, c, &constant)) overflow = true;
}

size_t ShallowHash(const Expr& e, int depth) {
  if (!e) return 0x9e3779b9u;
  size_t h = static_cast<size_t>(e->kind) * 1000003u ^ (e->dtype.code * 131u + e->dtype.bits);
  auto mix = [&h](size_t v) { h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2); };
  switch (e->kind) {
    case ir::NodeKind::kIntImm: mix(static_cast<size_t>(ir::As<IntImm>(e)->value)); return h;
    case ir::NodeKind::kFloatImm: mix(std::hash<double>()(ir::As<ir::FloatImm>(e)->value)); return h;
    case ir::NodeKind::kVar: mix(std::hash<const void*>()(e.get())); return h;
    default: break;
  }
  if (depth <= 0) return h;
  switch (e->kind) {
    case ir::NodeKind::kBinary: {
      auto* op = ir::As<Binary>(e);
      mix(static_cast<size_t>(op->op));
      mix(ShallowHash(op->a, depth - 1));
      mix(ShallowHash(op->b, depth - 1));
      break;
    }
    case ir::NodeKind::kNot: mix(ShallowHash(ir::As<ir::Not>(e)->a, depth - 1)); break;
    case ir::NodeKind::kCast: mix(ShallowHash(ir::As<ir::Cast>(e)->value, depth - 1)); break;
    case ir::NodeKind::kSelect: {
      auto* op = ir::As<ir::Select>(e);
      mix(ShallowHash(op->cond, depth - 1));
      mix(ShallowHash(op->t, depth - 1));
      mix(ShallowHash(op->f, depth - 1));
      break;
    }
    case ir::NodeKind::kCall: {
      auto* op = ir::As<ir::Call>(e);
      mix(std::hash<std::string>()(op->op));
      for (const Expr& a : op->args) mix(ShallowHash(a, depth - 1));
      break;
    }
    case ir::NodeKind::kBufferLoad: {
      auto* op = ir::As<ir::BufferLoad>(e);
      mix(std::hash<const void*>()(op->buffer.get()));
      for (const Expr& a : op->indices) mix(ShallowHash(a, depth - 1));
      break;
    }
    default: break;
  }
  return h;
}

void LinearForm::AddTerm(const Expr& t, int64_t c) {
  for (; indexed_ < terms.size(); ++indexed_) {
    index_.emplace(ShallowHash(terms[indexed_].first), indexed_);
  }
  const size_t h = ShallowHash(t);
  auto range = index_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    auto& [term, coeff] = terms[it->second];
    if (term == t || ir::StructuralEqual(term, t)) {
      if (!CheckedAdd(coeff, c, &coeff)) overflow = true;
      return;
    }
  }
  terms.emplace_back(t, c);
  index_.emplace(h, terms.size() - 1);
  indexed_ = terms.size();
}

void LinearForm::AddForm(const LinearForm& o, int64_t scale) {
  if (o.overflow) overflow = true;
  for (const auto& [term, coeff] : o.terms) {
    int64_t c;
    if (!CheckedMul(coeff, scale, &c)) {
      overflow = true;
      return;
    }
    AddTerm(term, c);
  }
  int64_t k;
  if (!CheckedMul(o.constant, scale, &k)) {
    overflow = true;
    return;
  }
  AddConst(k);
}

void LinearForm::Compact() {
  size_t out = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    if (terms[i].second != 0) terms[out++] = std::move(terms[i]);
  }
  terms.resize(out);
  index_.clear();
  indexed_ = 0;
}

bool LinearForm::FitsIn(DType t) const {
  if (overflow || !detail::FitsIn(t, constant)) return false;
  for (const auto& term : terms) {
    if (!detail::FitsIn(t, term.second)) return false;
  }
  return true;
}

namespace {

// Simplified sums are trees, but a sum rebuilt after an overflow may share operands
// (e + e); the budget keeps parsing such a DAG from going exponential.
constexpr int kParseBudget = 4096;

void ParseInto(const Expr& e, int64_t scale, LinearForm* f, int* budget) {
  if (f->overflow) return;
  if (--*budget < 0) {
    f->overflow = true;
    return;
  }
  if (auto* imm = ir::As<IntImm>(e)) {
    int64_t k;
    if (!CheckedMul(imm->value, scale, &k)) {
      f->overflow = true;
      return;
    }
    f->AddConst(k);
    return;
  }
  auto* bin = ir::As<Binary>(e);
  if (bin && IsSignedInt(e->dtype)) {
    int64_t s;
    switch (bin->op) {
      case BinOp::kAdd:
        ParseInto(bin->a, scale, f, budget);
        ParseInto(bin->b, scale, f, budget);
        return;
      case BinOp::kSub:
        ParseInto(bin->a, scale, f, budget);
        if (!CheckedMul(scale, -1, &s)) {
          f->overflow = true;
          return;
        }
        ParseInto(bin->b, s, f, budget);
        return;
      case BinOp::kMul:
        if (auto* kb = ir::As<IntImm>(bin->b)) {
          if (!CheckedMul(scale, kb->value, &s)) f->overflow = true;
          else ParseInto(bin->a, s, f, budget);
          return;
        }
        if (auto* ka = ir::As<IntImm>(bin->a)) {
          if (!CheckedMul(scale, ka->value, &s)) f->overflow = true;
          else ParseInto(bin->b, s, f, budget);
          return;
        }
        break;
      default:
        break;
    }
  }
  f->AddTerm(e, scale);
}

Expr Scaled(const Expr& t, int64_t c, DType dt) {
  return c == 1 ? t : Binary::Make(BinOp::kMul, t, Const(dt, c));
}

}  // namespace

LinearForm ParseLinear(const Expr& e) {
  LinearForm f;
  int budget = kParseBudget;
  ParseInto(e, 1, &f, &budget);
  f.Compact();
  return f;
}

Expr BuildLinear(const LinearForm& form, DType t) {
  Expr acc;
  for (const auto& [term, c] : form.terms) {
    if (c <= 0) continue;
    Expr x = Scaled(term, c, t);
    acc = acc ? Binary::Make(BinOp::kAdd, acc, x) : x;
  }
  int64_t k = form.constant;
  for (const auto& [term, c] : form.terms) {
    if (c >= 0) continue;
    if (!acc) {
      if (k > 0) {
        // -x + 5 reads better as 5 - x.
        acc = Const(t, k);
        k = 0;
      } else {
        acc = Scaled(term, c, t);
        continue;
      }
    }
    if (c == INT64_MIN) {
      acc = Binary::Make(BinOp::kAdd, acc, Scaled(term, c, t));
    } else {
      acc = Binary::Make(BinOp::kSub, acc, Scaled(term, -c, t));
    }
  }
  if (!acc) return Const(t, k);
  if (k > 0) return Binary::Make(BinOp::kAdd, acc, Const(t, k));
  if (k < 0 && k != INT64_MIN) return Binary::Make(BinOp::kSub, acc, Const(t, -k));
  if (k < 0) return Binary::Make(BinOp::kAdd, acc, Const(t, k));
  return acc;
}

Expr Rebuild(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  if (auto* bin = ir::As<Binary>(self)) {
    if (bin->op == op && bin->a == a && bin->b == b) return self;
  }
  return Binary::Make(op, a, b);
}

}  // namespace tl::arith::detail
