// SPDX-License-Identifier: Apache-2.0
/// \file Analyzer::Simplify: a bottom-up rewriter over expressions.
///
/// Children are simplified first, then the node's rule runs on the simplified operands:
/// constant folding, canonical sums (linear forms), min/max and comparisons decided from
/// interval bounds, boolean identities, and casts. Floor division and modulo live in
/// div_mod.cc, bounds in bound.cc. Each node is rewritten once (results are memoised per
/// input node), so the cost stays polynomial even for expressions that share subtrees.
#include <numeric>
#include <cstdint>

#include "tl/arith/comparison.h"
#include "tl/arith/simplify.h"

#include "arith_internal.h"
#include "tl/ir/equal.h"

namespace tl::arith {

using ir::Binary;
using ir::BinOp;
using ir::DType;
using ir::Expr;
using ir::IntImm;

namespace detail {
namespace {

// Deeper trees are returned as they are rather than risking the native stack.
constexpr int kMaxDepth = 512;

Expr Bool(bool v) { return IntImm::Make(DType::Bool(), v ? 1 : 0); }

bool IsConst(const Expr& e) { return ir::As<IntImm>(e) || ir::As<ir::FloatImm>(e); }

/// Decides `d <op> 0` from an interval of d; nullopt when the interval does not decide it.
std::optional<bool> DecideSign(BinOp op, const IntBound& d) {
  const bool lo_gt0 = d.min && *d.min > 0, lo_ge0 = d.min && *d.min >= 0;
  const bool hi_lt0 = d.max && *d.max < 0, hi_le0 = d.max && *d.max <= 0;
  switch (op) {
    case BinOp::kLT: if (hi_lt0) return true; if (lo_ge0) return false; break;
    case BinOp::kLE: if (hi_le0) return true; if (lo_gt0) return false; break;
    case BinOp::kGT: if (lo_gt0) return true; if (hi_le0) return false; break;
    case BinOp::kGE: if (lo_ge0) return true; if (hi_lt0) return false; break;
    case BinOp::kEQ:
      if (lo_gt0 || hi_lt0) return false;
      if (d.IsConst() && *d.min == 0) return true;
      break;
    case BinOp::kNE:
      if (lo_gt0 || hi_lt0) return true;
      if (d.IsConst() && *d.min == 0) return false;
      break;
    default: break;
  }
  return std::nullopt;
}

/// Folds x // c * (c*q) + x % c * q back into x * q (exact for any x, c > 0). Flattening
/// `A[i // n, i % n]` gives such sums; without the fold the row/column split of `i` stays
/// in every address, and consecutive elements cannot be recognised as consecutive.
void MergeDivMod(LinearForm* f) {
  for (bool merged = true; merged;) {
    merged = false;
    for (size_t i = 0; i < f->terms.size() && !merged; ++i) {
      auto* d = ir::As<Binary>(f->terms[i].first);
      auto* c = d && d->op == BinOp::kFloorDiv ? ir::As<IntImm>(d->b) : nullptr;
      if (!c || c->value <= 0) continue;
      for (size_t j = 0; j < f->terms.size(); ++j) {
        auto* m = ir::As<Binary>(f->terms[j].first);
        if (!m || m->op != BinOp::kFloorMod || !ir::StructuralEqual(m->b, d->b) ||
            !ir::StructuralEqual(m->a, d->a)) {
          continue;
        }
        int64_t q = f->terms[j].second, p;
        if (!CheckedMul(q, c->value, &p) || p != f->terms[i].second) continue;
        Expr x = d->a;
        f->terms[i].second = f->terms[j].second = 0;
        f->Compact();
        f->AddForm(ParseLinear(x), q);
        f->Compact();
        merged = true;
        break;
      }
    }
  }
}

}  // namespace

Expr KeepIfSame(const Expr& built, BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  // Hand back the input node when the rule rebuilt it unchanged, so that callers (and
  // mutators above them) keep sharing. Only the sum skeleton is compared: the operands
  // are the very nodes inside `self`, so equality stops at them.
  auto* bin = ir::As<Binary>(self);
  if (bin && bin->op == op && bin->a == a && bin->b == b && ir::StructuralEqual(built, self)) {
    return self;
  }
  return built;
}

Expr Rewriter::Simplify(const Expr& e) {
  if (!e) return e;
  switch (e->kind) {
    case ir::NodeKind::kIntImm:
    case ir::NodeKind::kFloatImm:
    case ir::NodeKind::kVar:
      return e;
    default:
      break;
  }
  auto it = memo_.find(e.get());
  if (it != memo_.end()) return it->second.second;
  if (depth_ >= kMaxDepth) return e;
  ++depth_;
  Expr r = SimplifyUncached(e);
  --depth_;
  memo_.emplace(e.get(), std::make_pair(e, r));  // the key is kept alive with the entry
  return r;
}

Expr Rewriter::SimplifyUncached(const Expr& e) {
  switch (e->kind) {
    case ir::NodeKind::kBinary: {
      auto* op = static_cast<const Binary*>(e.get());
      return RewriteBinary(op->op, Simplify(op->a), Simplify(op->b), e);
    }
    case ir::NodeKind::kNot:
      return RewriteNot(Simplify(static_cast<const ir::Not*>(e.get())->a), e);
    case ir::NodeKind::kSelect: {
      auto* op = static_cast<const ir::Select*>(e.get());
      return RewriteSelect(Simplify(op->cond), Simplify(op->t), Simplify(op->f), e);
    }
    case ir::NodeKind::kCast: {
      auto* op = static_cast<const ir::Cast*>(e.get());
      return RewriteCast(op->dtype, Simplify(op->value), e);
    }
    case ir::NodeKind::kCall: {
      auto* op = static_cast<const ir::Call*>(e.get());
      std::vector<Expr> args;
      bool changed = false;
      for (const Expr& a : op->args) {
        args.push_back(Simplify(a));
        changed |= args.back() != a;
      }
      return changed ? ir::Call::Make(op->dtype, op->op, std::move(args)) : e;
    }
    case ir::NodeKind::kBufferLoad: {
      auto* op = static_cast<const ir::BufferLoad*>(e.get());
      std::vector<Expr> idx;
      bool changed = false;
      for (const Expr& a : op->indices) {
        idx.push_back(Simplify(a));
        changed |= idx.back() != a;
      }
      return changed ? ir::BufferLoad::Make(op->buffer, std::move(idx)) : e;
    }
    default:
      return e;
  }
}

Expr Rewriter::RewriteBinary(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  if (IsConst(a) && IsConst(b)) {
    if (Expr folded = FoldBinary(op, a, b)) return folded;
    return Rebuild(op, a, b, self);
  }
  const DType t = a->dtype;
  const bool sint = IsSignedInt(t);
  switch (op) {
    case BinOp::kAdd:
    case BinOp::kSub:
    case BinOp::kMul:
      if (sint) return RewriteLinear(op, a, b, self);
      break;
    case BinOp::kFloorDiv:
      if (sint) return RewriteFloorDiv(a, b, self);
      break;
    case BinOp::kFloorMod:
      if (sint) return RewriteFloorMod(a, b, self);
      break;
    case BinOp::kDiv:
    case BinOp::kMod:
      if (sint) return RewriteTruncDivMod(op, a, b, self);
      break;
    case BinOp::kMin:
    case BinOp::kMax:
      return RewriteMinMax(op, a, b, self);
    case BinOp::kEQ: case BinOp::kNE: case BinOp::kLT:
    case BinOp::kLE: case BinOp::kGT: case BinOp::kGE:
      return RewriteCompare(op, a, b, self);
    case BinOp::kAnd:
    case BinOp::kOr:
      return RewriteLogic(op, a, b, self);
    default:
      break;
  }
  return Rebuild(op, a, b, self);
}

LinearForm Rewriter::Diff(const Expr& a, const Expr& b) const {
  LinearForm f = ParseLinear(a);
  f.AddForm(ParseLinear(b), -1);
  f.Compact();
  return f;
}

Expr Rewriter::RewriteLinear(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  const DType t = a->dtype;
  LinearForm fa = ParseLinear(a), fb = ParseLinear(b);
  LinearForm f;
  if (op == BinOp::kAdd || op == BinOp::kSub) {
    f = std::move(fa);
    f.AddForm(fb, op == BinOp::kAdd ? 1 : -1);
  } else if (fb.IsConst()) {
    f.AddForm(fa, fb.constant);  // x*1 -> x, x*0 -> 0, (x + 2)*3 -> x*3 + 6
  } else if (fa.IsConst()) {
    f.AddForm(fb, fa.constant);
  } else {
    // A genuine product stays one term; a single scaled term gives up its coefficient so
    // that (x*4)*y and x*(y*4) merge as (x*y)*4.
    auto split = [](const Expr& e, const LinearForm& g) -> std::pair<Expr, int64_t> {
      if (g.terms.size() == 1 && g.constant == 0) return g.terms[0];
      return {e, 1};
    };
    auto [ta, ca] = split(a, fa);
    auto [tb, cb] = split(b, fb);
    int64_t c;
    if (!CheckedMul(ca, cb, &c)) return Rebuild(op, a, b, self);
    f.AddTerm(Rebuild(BinOp::kMul, ta, tb, self), c);
  }
  f.Compact();
  MergeDivMod(&f);
  if (!f.FitsIn(t)) return Rebuild(op, a, b, self);
  return KeepIfSame(BuildLinear(f, t), op, a, b, self);
}

Expr Rewriter::RewriteMinMax(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  const bool is_min = op == BinOp::kMin;
  if (a == b || ir::StructuralEqual(a, b)) return a;
  if (!IsSignedInt(a->dtype)) return Rebuild(op, a, b, self);
  // Constants last: min(3, x) -> min(x, 3).
  if (ir::As<IntImm>(a)) return RewriteMinMax(op, b, a, nullptr);
  LinearForm d = Diff(a, b);
  if (!d.overflow) {
    IntBound bd = BoundOfForm(*an_, d);
    if (bd.max && *bd.max <= 0) return is_min ? a : b;  // a <= b
    if (bd.min && *bd.min >= 0) return is_min ? b : a;  // a >= b
  }
  // min(min(x, 4), 2) -> min(x, 2)
  auto* inner = ir::As<Binary>(a);
  auto* kb = ir::As<IntImm>(b);
  if (inner && kb && inner->op == op) {
    if (auto* ki = ir::As<IntImm>(inner->b)) {
      int64_t k = is_min ? std::min(ki->value, kb->value) : std::max(ki->value, kb->value);
      return Rebuild(op, inner->a, Const(a->dtype, k), nullptr);
    }
  }
  return Rebuild(op, a, b, self);
}

Expr Rewriter::RewriteCompare(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  const DType t = a->dtype;
  if (t.IsInt() || t.IsBool()) {
    if (a == b || ir::StructuralEqual(a, b)) {
      return Bool(op == BinOp::kEQ || op == BinOp::kLE || op == BinOp::kGE);
    }
  }
  if (IsSignedInt(t)) {
    LinearForm d = Diff(a, b);
    if (!d.overflow) {
      if (auto decided = DecideSign(op, BoundOfForm(*an_, d))) return Bool(*decided);
      if (Expr dropped = DropRemainderTerm(op, d, t)) return dropped;
    }
  }
  return Rebuild(op, a, b, self);
}

/// `d < 0` (or `>=`, and `<=` / `>` through d - 1) where d = m*g + r, every other term and
/// the constant a multiple of g and r one term in [0, g): then d < 0 exactly when m*g < 0,
/// so r can go. A register walk's row test `(l >> 5) * 16 + (lane >> 2) + ... < 16` then
/// reads the register index only (the lane's part of the row cannot move it past a
/// multiple of 8): a test that is the same for the whole warp and folds once unrolled.
/// Null when no term can be dropped.
Expr Rewriter::DropRemainderTerm(BinOp op, LinearForm d, DType t) {
  if (op == BinOp::kLE || op == BinOp::kGT) {  // d <= 0: d - 1 < 0; d > 0: d - 1 >= 0
    d.AddConst(-1);
    op = op == BinOp::kLE ? BinOp::kLT : BinOp::kGE;
  }
  if ((op != BinOp::kLT && op != BinOp::kGE) || d.terms.size() < 2) return nullptr;
  bool dropped = false;
  for (size_t j = 0; j < d.terms.size();) {
    int64_t g = std::llabs(d.constant);
    for (size_t i = 0; i < d.terms.size(); ++i) {
      if (i != j) g = std::gcd(g, std::llabs(d.terms[i].second));
    }
    IntBound r = BoundOfForm(*an_, [&] {
      LinearForm one;
      one.AddTerm(d.terms[j].first, d.terms[j].second);
      return one;
    }());
    if (g > 1 && r.min && r.max && *r.min >= 0 && *r.max < g && d.terms.size() > 1) {
      d.terms.erase(d.terms.begin() + static_cast<std::ptrdiff_t>(j));
      dropped = true;
      continue;
    }
    ++j;
  }
  if (!dropped) return nullptr;
  // d' < 0 as `terms < -constant` (d' >= 0 as `terms >= -constant`)
  int64_t c = -d.constant;
  d.constant = 0;
  return ir::Binary::Make(op, BuildLinear(d, t), IntImm::Make(t, c));
}

Expr Rewriter::RewriteLogic(BinOp op, const Expr& a, const Expr& b, const Expr& self) {
  const bool is_and = op == BinOp::kAnd;
  // Operands are pure, so a decided side may drop the other one.
  for (int side = 0; side < 2; ++side) {
    const Expr& k = side == 0 ? a : b;
    const Expr& other = side == 0 ? b : a;
    if (auto* imm = ir::As<IntImm>(k)) {
      const bool v = imm->value != 0;
      if (is_and) return v ? other : Bool(false);
      return v ? Bool(true) : other;
    }
  }
  if (a == b || ir::StructuralEqual(a, b)) return a;
  return Rebuild(op, a, b, self);
}

Expr Rewriter::RewriteNot(const Expr& a, const Expr& self) {
  if (auto* imm = ir::As<IntImm>(a)) return Bool(imm->value == 0);
  if (auto* inner = ir::As<ir::Not>(a)) return inner->a;
  if (auto* cmp = ir::As<Binary>(a)) {
    // !(a == b) is a != b even for NaN; the ordered comparisons only flip for integers.
    const bool eq_ne = cmp->op == BinOp::kEQ || cmp->op == BinOp::kNE;
    if (ir::IsComparison(cmp->op) && (eq_ne || cmp->a->dtype.IsInt())) {
      return Binary::Make(NegatedComparison(cmp->op), cmp->a, cmp->b);
    }
  }
  auto* n = ir::As<ir::Not>(self);
  return n && n->a == a ? self : ir::Not::Make(a);
}

Expr Rewriter::RewriteSelect(const Expr& c, const Expr& t, const Expr& f, const Expr& self) {
  if (auto* imm = ir::As<IntImm>(c)) return imm->value != 0 ? t : f;
  if (t == f || ir::StructuralEqual(t, f)) return t;
  auto* s = ir::As<ir::Select>(self);
  if (s && s->cond == c && s->t == t && s->f == f) return self;
  return ir::Select::Make(c, t, f);
}

Expr Rewriter::NarrowTo(DType t, const Expr& e) const {
  // The value and, for an operation, every intermediate value must fit in t.
  auto fits = [&](const Expr& x) {
    IntBound b = BoundOf(x);
    const int64_t lo = t.bits >= 64 ? INT64_MIN : -(int64_t(1) << (t.bits - 1));
    const int64_t hi = t.bits >= 64 ? INT64_MAX : (int64_t(1) << (t.bits - 1)) - 1;
    return b.min && b.max && *b.min >= lo && *b.max <= hi;
  };
  if (auto* c = ir::As<ir::Cast>(e)) {
    const DType src = c->value->dtype;
    return src == t ? c->value : nullptr;
  }
  if (auto* imm = ir::As<IntImm>(e)) return fits(e) ? IntImm::Make(t, imm->value) : nullptr;
  auto* b = ir::As<Binary>(e);
  if (!b) return nullptr;
  switch (b->op) {
    case BinOp::kAdd: case BinOp::kSub: case BinOp::kMul: case BinOp::kFloorDiv: case BinOp::kFloorMod:
    case BinOp::kMin: case BinOp::kMax:
      break;
    default:
      return nullptr;
  }
  if (!fits(e)) return nullptr;
  Expr na = NarrowTo(t, b->a), nb = na ? NarrowTo(t, b->b) : nullptr;
  return nb ? Binary::Make(b->op, na, nb) : nullptr;
}

Expr Rewriter::RewriteCast(DType t, const Expr& v, const Expr& self) {
  if (v->dtype == t) return v;
  if (Expr folded = FoldCast(t, v)) return folded;
  // Narrowing a sum of widened values (what T.reshape / T.view's flat index gives:
  // int32(int64(i) * 16 + int64(j))) computes it in the narrow type when no value on the
  // way leaves it.
  if (t.IsInt() && t.IsSigned() && v->dtype.IsInt() && v->dtype.IsSigned() && v->dtype.bits > t.bits) {
    if (Expr narrow = NarrowTo(t, v)) return narrow;
  }
  // int32 -> int64 -> int32 round trips: widening an integer loses nothing.
  if (auto* inner = ir::As<ir::Cast>(v)) {
    const DType mid = inner->dtype, src = inner->value->dtype;
    if (src == t && mid.IsInt() && src.IsInt() && mid.bits >= src.bits &&
        mid.IsSigned() == src.IsSigned()) {
      return inner->value;
    }
  }
  auto* c = ir::As<ir::Cast>(self);
  return c && c->value == v ? self : ir::Cast::Make(t, v);
}

}  // namespace detail

Expr Analyzer::Simplify(const Expr& e) {
  if (!e) return e;
  return detail::Rewriter(this).Simplify(e);
}

bool Analyzer::CanProve(const Expr& cond) {
  Expr s = Simplify(cond);
  auto* imm = ir::As<IntImm>(s);
  return imm && imm->value != 0;
}

IntBound Analyzer::Bound(const Expr& e) { return BoundOfSimplified(Simplify(e)); }

}  // namespace tl::arith
