// SPDX-License-Identifier: Apache-2.0
/// \file Interval bounds of integer expressions.
///
/// Intervals are computed in 128-bit arithmetic with saturating infinities, so that
/// unbounded ends and int64 overflow need no special cases in every rule: anything that
/// leaves the int64 range becomes unbounded, which is always a safe answer.
#include <algorithm>

#include "arith_internal.h"

namespace tl::arith {

using ir::Binary;
using ir::BinOp;
using ir::DType;
using ir::Expr;

namespace {

using Ext = __int128;
constexpr Ext kInf = static_cast<Ext>(1) << 100;
constexpr int kMaxDepth = 256;

Ext Clamp(Ext v) {
  if (v > INT64_MAX) return kInf;
  if (v < INT64_MIN) return -kInf;
  return v;
}
bool IsInf(Ext v) { return v == kInf || v == -kInf; }
Ext Add(Ext a, Ext b) {
  if (IsInf(a)) return a;  // lo + lo and hi + hi never mix opposite infinities
  if (IsInf(b)) return b;
  return Clamp(a + b);
}
Ext Neg(Ext a) { return -a; }
Ext Mul(Ext a, Ext b) {
  if (a == 0 || b == 0) return 0;
  if (IsInf(a) || IsInf(b)) return (a < 0) != (b < 0) ? -kInf : kInf;
  return Clamp(a * b);
}
/// Floor division by a finite non-zero d.
Ext FloorDiv(Ext a, Ext d) {
  if (IsInf(a)) return (a < 0) != (d < 0) ? -kInf : kInf;
  Ext q = a / d;
  if (a % d != 0 && ((a < 0) != (d < 0))) --q;
  return Clamp(q);
}

struct Interval {
  Ext lo = -kInf, hi = kInf;
  bool IsConst() const { return lo == hi && !IsInf(lo); }
};

Interval Full() { return {}; }
Interval Point(Ext v) { return {v, v}; }

/// Exactly the values a type can hold (used where a conversion wraps).
Interval TypeRange(DType t) {
  if (t.IsBool()) return {0, 1};
  if (!t.IsInt() || t.bits <= 0 || t.bits >= 64) return t.IsInt() && !t.IsSigned() ? Interval{0, kInf} : Full();
  if (t.IsSigned()) return {-(static_cast<Ext>(1) << (t.bits - 1)), (static_cast<Ext>(1) << (t.bits - 1)) - 1};
  return {0, (static_cast<Ext>(1) << t.bits) - 1};
}

/// What is reported for an unknown value: int32/int64 index math is treated as unbounded
/// (a free index variable has no useful bound, and 2^31 would only mislead callers), while
/// narrow types, unsigned types and bools keep their range.
Interval DefaultRange(DType t) {
  if (t.IsSigned() && t.bits >= 32) return Full();
  if (t.IsInt() && !t.IsSigned() && t.bits >= 32) return {0, kInf};
  return TypeRange(t);
}

/// Signed index arithmetic is assumed not to overflow (it is undefined behaviour in the
/// generated code); narrow and unsigned types wrap, so a result leaving the type's range
/// may be anywhere in it.
Interval FitType(Interval r, DType t) {
  if (t.IsSigned() && t.bits >= 32) return r;
  Interval range = TypeRange(t);
  if (r.lo >= range.lo && r.hi <= range.hi) return r;
  return DefaultRange(t);
}

Interval Union(Interval a, Interval b) { return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)}; }

Interval MulI(Interval a, Interval b) {
  Ext c[4] = {Mul(a.lo, b.lo), Mul(a.lo, b.hi), Mul(a.hi, b.lo), Mul(a.hi, b.hi)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

Interval FloorDivI(Interval a, Interval d) {
  if (d.hi < 0) return FloorDivI({Neg(a.hi), Neg(a.lo)}, {Neg(d.hi), Neg(d.lo)});
  if (d.lo <= 0) return Full();  // the divisor may be zero or change sign
  if (!IsInf(d.hi)) {
    // floor(a/d) is monotone in a, and in d for a fixed sign of a: the corners bound it.
    Ext c[4] = {FloorDiv(a.lo, d.lo), FloorDiv(a.lo, d.hi), FloorDiv(a.hi, d.lo), FloorDiv(a.hi, d.hi)};
    return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
  }
  // d in [dl, inf): a/d shrinks toward 0 (or -1 for negative a) as d grows.
  return {a.lo >= 0 ? 0 : FloorDiv(a.lo, d.lo), a.hi < 0 ? -1 : FloorDiv(a.hi, d.lo)};
}

Interval FloorModI(Interval a, Interval d) {
  if (d.IsConst() && d.lo > 0 && !IsInf(a.lo) && !IsInf(a.hi)) {
    Ext q = FloorDiv(a.lo, d.lo);
    if (q == FloorDiv(a.hi, d.lo)) return {a.lo - q * d.lo, a.hi - q * d.lo};
  }
  if (d.lo > 0) {
    Interval r{0, IsInf(d.hi) ? kInf : d.hi - 1};
    if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
    return r;
  }
  if (d.hi < 0) {
    Interval r{IsInf(d.lo) ? -kInf : d.lo + 1, 0};
    if (a.hi <= 0) r.lo = std::max(r.lo, a.lo);
    return r;
  }
  return Full();
}

/// Walks the expression once per node (memoised, since simplified trees may share nodes).
class BoundWalker {
 public:
  explicit BoundWalker(const Analyzer& an) : an_(an) {}

  Interval Get(const Expr& e) {
    if (!e) return Full();
    auto it = memo_.find(e.get());
    if (it != memo_.end()) return it->second;
    if (depth_ >= kMaxDepth) return DefaultRange(e->dtype);
    ++depth_;
    Interval r = FitType(Compute(e), e->dtype);
    --depth_;
    memo_.emplace(e.get(), r);
    return r;
  }

 private:
  Interval Compute(const Expr& e) {
    switch (e->kind) {
      case ir::NodeKind::kIntImm: {
        auto* imm = static_cast<const ir::IntImm*>(e.get());
        if (!e->dtype.IsSigned() && imm->value < 0) return Full();  // uint64 above INT64_MAX
        return Point(imm->value);
      }
      case ir::NodeKind::kVar: {
        auto b = an_.VarBound(static_cast<const ir::Var*>(e.get()));
        if (!b) return Full();
        return {b->min ? Ext(*b->min) : -kInf, b->max ? Ext(*b->max) : kInf};
      }
      case ir::NodeKind::kBinary:
        return ComputeBinary(static_cast<const Binary*>(e.get()));
      case ir::NodeKind::kSelect: {
        auto* op = static_cast<const ir::Select*>(e.get());
        return Union(Get(op->t), Get(op->f));
      }
      case ir::NodeKind::kCast: {
        auto* op = static_cast<const ir::Cast*>(e.get());
        const DType s = op->value->dtype;
        if (!(s.IsInt() || s.IsBool()) || !(e->dtype.IsInt() || e->dtype.IsBool())) return Full();
        Interval v = Get(op->value), range = TypeRange(e->dtype);
        // A value that fits is kept; otherwise the conversion wraps anywhere in range.
        if (v.lo >= range.lo && v.hi <= range.hi) return v;
        return range;
      }
      case ir::NodeKind::kNot:
        return {0, 1};
      default:
        return Full();
    }
  }

  Interval ComputeBinary(const Binary* op) {
    if (ir::IsComparison(op->op) || ir::IsLogical(op->op)) return {0, 1};
    if (!op->a->dtype.IsInt() && !op->a->dtype.IsBool()) return Full();
    Interval a = Get(op->a), b = Get(op->b);
    switch (op->op) {
      case BinOp::kAdd: return {Add(a.lo, b.lo), Add(a.hi, b.hi)};
      case BinOp::kSub: return {Add(a.lo, Neg(b.hi)), Add(a.hi, Neg(b.lo))};
      case BinOp::kMul: return MulI(a, b);
      case BinOp::kFloorDiv: return FloorDivI(a, b);
      case BinOp::kFloorMod: return FloorModI(a, b);
      case BinOp::kDiv:
        if (a.lo >= 0 && b.lo > 0) return FloorDivI(a, b);
        if (b.IsConst() && b.lo != 0 && !IsInf(a.lo) && !IsInf(a.hi)) {
          Ext x = a.lo / b.lo, y = a.hi / b.lo;  // truncation is monotone in a
          return {std::min(x, y), std::max(x, y)};
        }
        return Full();
      case BinOp::kMod:
        if (a.lo >= 0 && b.lo > 0) return FloorModI(a, b);
        if (b.IsConst() && b.lo != 0) {
          Ext m = (b.lo < 0 ? -b.lo : b.lo) - 1;  // sign follows the dividend
          return {a.lo >= 0 ? 0 : std::max(-m, a.lo), a.hi <= 0 ? 0 : std::min(m, a.hi)};
        }
        return Full();
      case BinOp::kMin: return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      case BinOp::kMax: return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
      case BinOp::kBitAnd:
        if (a.lo >= 0 && b.lo >= 0) return {0, std::min(a.hi, b.hi)};
        if (a.lo >= 0) return {0, a.hi};
        if (b.lo >= 0) return {0, b.hi};
        return Full();
      case BinOp::kBitOr:
      case BinOp::kBitXor:
        // Non-negative operands: no bit above the wider operand's top bit can be set.
        if (a.lo >= 0 && b.lo >= 0 && !IsInf(a.hi) && !IsInf(b.hi)) {
          Ext top = std::max(a.hi, b.hi), all = 0;
          while (all < top) all = all * 2 + 1;
          return {0, all};
        }
        return Full();
      case BinOp::kShr:
        if (a.lo >= 0 && b.IsConst() && b.lo >= 0 && b.lo < 64) {
          int k = static_cast<int>(b.lo);
          return {a.lo >> k, IsInf(a.hi) ? kInf : a.hi >> k};
        }
        return Full();
      case BinOp::kShl:
        if (a.lo >= 0 && b.IsConst() && b.lo >= 0 && b.lo < 63) {
          Ext m = static_cast<Ext>(1) << static_cast<int>(b.lo);
          return {Mul(a.lo, m), Mul(a.hi, m)};
        }
        return Full();
      default:
        return Full();
    }
  }

  const Analyzer& an_;
  int depth_ = 0;
  std::unordered_map<const ir::ExprNode*, Interval> memo_;
};

IntBound ToBound(Interval i) {
  IntBound b;
  if (!IsInf(i.lo)) b.min = static_cast<int64_t>(i.lo);
  if (!IsInf(i.hi)) b.max = static_cast<int64_t>(i.hi);
  return b;
}

}  // namespace

void Analyzer::BindRange(const ir::Var* v, const Expr& min, const Expr& extent) {
  IntBound b;
  b.min = BoundOfSimplified(Simplify(min)).min;
  if (min->dtype == extent->dtype && detail::IsSignedInt(min->dtype)) {
    // Simplify min + extent - 1 as a whole so that a symbolic min cancels.
    Expr last = Binary::Make(BinOp::kSub, Binary::Make(BinOp::kAdd, min, extent),
                             ir::IntImm::Make(min->dtype, 1));
    b.max = BoundOfSimplified(Simplify(last)).max;
  }
  bounds_[v] = b;
}

void Analyzer::BindBound(const ir::Var* v, IntBound b) { bounds_[v] = b; }

void Analyzer::Unbind(const ir::Var* v) { bounds_.erase(v); }

std::optional<IntBound> Analyzer::VarBound(const ir::Var* v) const {
  auto it = bounds_.find(v);
  if (it == bounds_.end()) return std::nullopt;
  return it->second;
}

IntBound Analyzer::BoundOfSimplified(const Expr& e) const {
  if (!e) return {};
  return ToBound(BoundWalker(*this).Get(e));
}

namespace detail {

IntBound BoundOfForm(const Analyzer& an, const LinearForm& f) {
  BoundWalker walker(an);
  Interval acc = Point(f.constant);
  for (const auto& [term, coeff] : f.terms) {
    Interval t = MulI(walker.Get(term), Point(coeff));
    acc = {Add(acc.lo, t.lo), Add(acc.hi, t.hi)};
  }
  return ToBound(acc);
}

}  // namespace detail
}  // namespace tl::arith
